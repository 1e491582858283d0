//! `xpuprof report --merge` at scale (issue 26): RANKS recordings, one per rank, each RATE
//! launches per second for SECONDS seconds (a launch is its launch site, API call and kernel as
//! the archive keeps them after correlation; every 1,000th launch is followed by an all-reduce
//! that every rank runs), merged by the real `xpuprof` binary into the perfetto and summary
//! sinks. For each length it prints the records merged, the merge's CPU time (user + system,
//! all its threads) and wall time, records per CPU second and per wall second, and the merge's
//! peak resident memory, so a cost or memory that grows with the length of the recording shows;
//! and the machine's load average (1 min) before and after the merge: on a shared machine the
//! wall time counts other work, the CPU time does not.
//!
//! usage: cargo bench -p xpuprof-core --bench merge_scale -- [RANKS RATE SECONDS...]
//!   (default 8 100000 1 3; the plugins must be built in the profile's folder, or set
//!   XPUPROF_BENCH_BIN to an xpuprof whose folder holds them; XPUPROF_BENCH_SINKS changes the
//!   sinks; `taskset -c 0` runs it on one core)

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use xpuprof_archive::{ClockPair, Meta, Writer};
use xpuprof_sdk::model::*;

/// Session time of the first launch.
const T0: u64 = 1_000_000_000_000;
/// Launches between two all-reduces.
const EVERY: u64 = 1_000;

fn main() {
    let args: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let (ranks, rate, lengths) = match args.as_slice() {
        [r, rate, secs @ ..] if !secs.is_empty() => (*r as u32, *rate, secs.to_vec()),
        _ => (8, 100_000, vec![1, 3]),
    };
    let bin = std::env::var_os("XPUPROF_BENCH_BIN")
        .map_or(PathBuf::from(env!("CARGO_BIN_EXE_xpuprof")), PathBuf::from);
    let dir = tempfile::tempdir().expect("failed to create a temporary folder");
    for secs in lengths {
        let t = Instant::now();
        let mut records = 0;
        let mut archives = Vec::new();
        for rank in 0..ranks {
            let out = dir.path().join(format!("s{secs}-rank{rank}"));
            records += write_rank(&out, rank, ranks, rate * secs);
            archives.push(out);
        }
        let wrote = t.elapsed().as_secs_f64();
        let merged = dir.path().join(format!("s{secs}-merged"));
        let load_before = load_average();
        let m = merge(&bin, &archives, &merged);
        let load_after = load_average();
        let cpu = m.user_s + m.sys_s;
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(
            stdout,
            "merge_scale ranks={ranks} rate={rate}/s seconds={secs} records={records} cpu_s={cpu:.2} (user {:.2} sys {:.2}) \
             wall_s={:.2} records_per_cpu_s={:.0} records_per_wall_s={:.0} peak_rss_mib={:.1} output_mib={:.1} \
             load={load_before}->{load_after} (archives written in {wrote:.1} s) rc={}",
            m.user_s,
            m.sys_s,
            m.wall_s,
            records as f64 / cpu,
            records as f64 / m.wall_s,
            m.max_rss_kib as f64 / 1024.0,
            dir_mib(&merged),
            m.rc
        );
        for p in archives.iter().chain([&merged]) {
            let _ = std::fs::remove_dir_all(p);
        }
    }
}

/// Writes rank `rank`'s recording of `launches` launches into `out`; returns its records.
fn write_rank(out: &Path, rank: u32, ranks: u32, launches: u64) -> u64 {
    let pair = ClockPair { wall_ns: 1_700_000_000_000_000_000, session_ns: T0, uncertainty_ns: 50 };
    let meta = Meta {
        command: vec!["train.py".into()],
        sources: vec!["scripted".into()],
        sinks: vec!["archive".into()],
        start_time: T0,
        host: format!("node-{rank}"),
        clock_pair: Some(pair),
        ..Meta::default()
    };
    let mut w = Writer::create(&out.join("archive"), &meta).expect("failed to create an archive");
    let pid = 1000 + rank;
    let mut n = 0u64;
    let mut put = |r: Record| {
        w.write(&r).expect("failed to write a record");
        n += 1;
    };
    let strs = ["train.py", "cudaLaunchKernel", "gemm_kernel", "allreduce_kernel", "train_step", "forward"];
    for (i, s) in strs.iter().enumerate() {
        put(Record::Str(StrDef::new(StrId(i as u32 + 1), *s)));
    }
    let host = StrId(7);
    put(Record::Str(StrDef::new(host, format!("node-{rank}"))));
    put(Record::Str(StrDef::new(StrId(8), format!("rank {rank} (node-{rank}, {pid})"))));
    put(Record::Process(
        ProcessDef::default()
            .pid(pid)
            .command(StrId(1))
            .rank(Some(rank))
            .local_rank(Some(0))
            .world_size(Some(ranks))
            .host(host)
            .name(StrId(8)),
    ));
    put(Record::Device(
        DeviceDef::default().id(DeviceId(1)).vendor(Vendor::Test).name(StrId(3)).kind(DeviceKind::Gpu),
    ));
    for s in [1, 2] {
        put(Record::Stream(
            StreamDef::default().id(StreamId(s)).device(DeviceId(1)).pid(pid).native_id(s.into()),
        ));
    }
    for f in [1, 2] {
        put(Record::Frame(
            FrameDef::default().id(FrameId(f)).kind(FrameKind::Synthetic).pid(pid).name(StrId(4 + f)),
        ));
    }
    put(Record::Stack(StackDef::new(StackId(1), vec![FrameId(2), FrameId(1)])));
    for i in 0..launches {
        let t = T0 + i * 10_000;
        let corr = Correlation { backend: backend::TEST, id: i + 1 };
        let launch = LaunchRef::default().tid(pid).stack(StackId(1)).api(StrId(2)).time(t);
        put(Record::LaunchSite(
            LaunchSite::default().pid(pid).tid(pid).time(t).correlation(corr).api(StrId(2)).stack(StackId(1)),
        ));
        put(Record::ApiCall(
            ApiCall::default()
                .pid(pid)
                .tid(pid)
                .start(t)
                .end(t + 2_000)
                .name(StrId(2))
                .correlation(Some(corr))
                .kind(ApiKind::Launch),
        ));
        put(Record::DeviceOp(
            DeviceOp::default()
                .kind(DeviceOpKind::Kernel)
                .pid(pid)
                .device(DeviceId(1))
                .stream(StreamId(1))
                .start(t + 5_000)
                .end(t + 8_000)
                .name(StrId(3))
                .correlation(Some(corr))
                .kernel(Some(KernelInfo::default().grid([64, 1, 1]).block([256, 1, 1])))
                .launch(Some(launch)),
        ));
        if i % EVERY == EVERY - 1 {
            put(Record::DeviceOp(
                DeviceOp::default()
                    .kind(DeviceOpKind::Kernel)
                    .pid(pid)
                    .device(DeviceId(1))
                    .stream(StreamId(2))
                    .start(t + 1_000 + u64::from(rank) * 200)
                    .end(t + 9_000)
                    .name(StrId(4))
                    .bytes(1 << 20)
                    .collective(CollectiveOp::AllReduce),
            ));
        }
    }
    w.finish().expect("failed to finish an archive");
    n
}

struct Measured {
    user_s: f64,
    sys_s: f64,
    wall_s: f64,
    max_rss_kib: i64,
    rc: i32,
}

/// Runs `xpuprof report --merge` on `archives` into `out` and measures it (wait4's rusage).
fn merge(bin: &Path, archives: &[PathBuf], out: &Path) -> Measured {
    let plugins = bin.parent().expect("the binary's folder");
    let t = Instant::now();
    // Waited for below with wait4, which also hands back its resource use.
    #[allow(clippy::zombie_processes)]
    let child = std::process::Command::new(bin)
        .arg("--plugin-dir")
        .arg(plugins)
        .args(["report", "--merge"])
        .args(archives)
        .args([
            "--sink",
            &std::env::var("XPUPROF_BENCH_SINKS").unwrap_or_else(|_| "perfetto,summary".into()),
            "-o",
        ])
        .arg(out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("failed to run xpuprof");
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the child is ours and not yet waited for; both pointers are valid for the call.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert!(pid > 0, "failed to wait for xpuprof: {}", std::io::Error::last_os_error());
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    Measured {
        user_s: secs(usage.ru_utime),
        sys_s: secs(usage.ru_stime),
        wall_s: t.elapsed().as_secs_f64(),
        max_rss_kib: usage.ru_maxrss,
        rc: if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { -1 },
    }
}

/// The machine's 1-minute load average, as /proc/loadavg says it (`?` where it cannot be read).
fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace().next().unwrap_or("?").to_owned()
}

fn dir_mib(dir: &Path) -> f64 {
    let files = std::fs::read_dir(dir).into_iter().flatten().flatten();
    files.filter_map(|e| e.metadata().ok()).map(|m| m.len() as f64).sum::<f64>() / (1 << 20) as f64
}
