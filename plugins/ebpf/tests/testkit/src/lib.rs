//! # xpuprof-ebpf-testkit: helpers shared by the eBPF source's tests and its overhead benchmark
//!
//! Building the C workloads, running one under the plugin, reading the result.

use std::collections::HashMap;
use std::ffi::CString;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::{Mutex, OnceLock};

use blazesym::symbolize::source::{Elf, Source as SymSource};
use blazesym::symbolize::{Input, Symbolized, Symbolizer};
use xpuprof_plugin_ebpf::EbpfSource;
use xpuprof_sdk::codec::decode_all;
use xpuprof_sdk::model::*;
use xpuprof_sdk::{CreateContext, Emitter, Logger, PluginConfig, SessionInfo, Source};

/// True when the test can run (the eBPF source needs root); otherwise a failure in CI and a
/// counted skip elsewhere (`xpuprof_testkit::skip`).
pub fn root_or_skip(_test: &str) -> bool {
    xpuprof_testkit::skip::require_root("the eBPF source loads BPF programs")
}

/// Directory holding the compiled workloads (built once per test run).
pub fn workloads() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../workloads");
        // Under target/tmp (cleaned with the build), one directory per test process.
        let exe = std::env::current_exe().expect("test binary path");
        let target = exe.ancestors().nth(3).expect("target/<profile>/deps/<test>").join("tmp");
        std::fs::create_dir_all(&target).expect("create target/tmp");
        let tmp = tempfile::Builder::new().prefix("ebpf-workloads").tempdir_in(&target);
        let out = tmp.unwrap().keep();
        let flags = ["-O1", "-fno-omit-frame-pointer", "-g"];
        let cc = |args: &[&str]| {
            let st = Command::new("cc").args(flags).args(args).current_dir(&out).status().expect("run cc");
            assert!(st.success(), "cc {args:?} failed");
        };
        let s = |f: &str| src.join(f).to_string_lossy().into_owned();
        cc(&[&s("burn.c"), "-o", "burn"]);
        // Without frame pointers (the later flags win): only the CFI unwind follows its paths.
        cc(&["-O2", "-fomit-frame-pointer", &s("frameless.c"), "-o", "frameless"]);
        cc(&[&s("jit.c"), "-o", "jit"]);
        cc(&[&s("block.c"), "-o", "block"]);
        cc(&["-shared", "-fPIC", &s("launchlib.c"), "-o", "liblaunchtest.so"]);
        cc(&[&s("launch.c"), "-o", "launch", "-L.", "-llaunchtest", "-Wl,-rpath,$ORIGIN"]);
        cc(&[&s("launch.c"), &s("launchlib.c"), "-o", "launch_static"]);
        // The same trampoline in a library named like xpuprof's own agents (libxpuprof_*).
        cc(&["-shared", "-fPIC", &s("launchlib.c"), "-o", "libxpuprof_testagent.so"]);
        cc(&[&s("launch.c"), "-o", "launch_agent", "-L.", "-lxpuprof_testagent", "-Wl,-rpath,$ORIGIN"]);
        cc(&[&s("launch_dlopen.c"), "-o", "launch_dlopen", "-ldl"]);
        cc(&[&s("threads.c"), "-o", "threads", "-pthread"]);
        cc(&[&s("launch_loop.c"), "-o", "launch_loop", "-L.", "-llaunchtest", "-Wl,-rpath,$ORIGIN"]);
        // A thread that never runs Python, started from tests/workloads/python/calls.py (mixed).
        cc(&["-shared", "-fPIC", &s("nativethread.c"), "-o", "libnativethread.so", "-pthread"]);
        out
    })
}

/// Path of workload `name`.
pub fn workload(name: &str) -> String {
    workloads().join(name).to_string_lossy().into_owned()
}

/// Runs `argv` under the plugin configured by `config` (TOML), the way the host does: the
/// child is held before exec until `start(pid)` returned. Returns the records and exit status.
pub fn profile(config: &str, argv: &[&str]) -> (Vec<Record>, ExitStatus) {
    let (records, status, _) = profile_with_cpu_time(config, argv);
    (records, status)
}

/// As [`profile`], plus the CPU time (user + system, ns) of the child and its descendants.
pub fn profile_with_cpu_time(config: &str, argv: &[&str]) -> (Vec<Record>, ExitStatus, u64) {
    profile_in_session(config, &[], argv)
}

/// As [`profile_with_cpu_time`], in a session whose sources are `sources` (what the host says).
pub fn profile_in_session(config: &str, sources: &[&str], argv: &[&str]) -> (Vec<Record>, ExitStatus, u64) {
    let ctx = CreateContext {
        config: PluginConfig::parse(config).unwrap(),
        session: SessionInfo {
            command: argv.iter().map(|s| s.to_string()).collect(),
            sources: sources.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        },
        emitter: Emitter::detached(),
        log: Logger::stderr(),
    };
    let mut src = EbpfSource::create(ctx).expect("create the ebpf source");
    // One held child at a time, so that no child inherits another test's pipe (a held child
    // that inherited it would keep that pipe open).
    static FORK: Mutex<()> = Mutex::new(());
    let guard = FORK.lock().unwrap_or_else(|e| e.into_inner());
    let (read_end, write_end) = pipe();
    let pid = fork_held(argv, &read_end);
    drop(read_end);
    if let Err(e) = src.start(pid) {
        // SAFETY: `pid` is our held child; killing and reaping it has no other effect.
        unsafe {
            libc::kill(pid as i32, libc::SIGKILL);
            libc::waitpid(pid as i32, std::ptr::null_mut(), 0);
        }
        panic!("failed to start the ebpf source: {e}");
    }
    std::fs::File::from(write_end).write_all(b"x").unwrap();
    drop(guard);
    let mut raw = 0;
    // SAFETY: an all-zero rusage is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child; `raw` and `usage` are valid places for the results.
    assert_eq!(unsafe { libc::wait4(pid as i32, &mut raw, 0, &mut usage) }, pid as i32);
    let status = ExitStatus::from_raw(raw);
    src.stop().expect("stop the ebpf source");
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    let cpu = tv(usage.ru_utime) + tv(usage.ru_stime);
    (decode_all(&src.take_buffer()).expect("decode the emitted records"), status, cpu)
}

/// Forks a child that waits for one byte on `hold` before exec'ing `argv` (what the host does).
fn fork_held(argv: &[&str], hold: &OwnedFd) -> u32 {
    let args: Vec<CString> = argv.iter().map(|a| CString::new(*a).unwrap()).collect();
    let mut ptrs: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    let fd = hold.as_raw_fd();
    // SAFETY: after fork the child only calls async-signal-safe functions (read, execv, _exit)
    // on data prepared before the fork.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // SAFETY: as above; `ptrs` is a null-terminated array of valid C strings.
        unsafe {
            let mut b = 0u8;
            libc::read(fd, (&mut b as *mut u8).cast(), 1);
            libc::execv(ptrs[0], ptrs.as_ptr());
            libc::_exit(127);
        }
    }
    pid as u32
}

fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: pipe2 succeeded, so both descriptors are new and owned by nobody else.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

/// Definitions of a recording, with frames symbolised by blazesym (as the host will).
#[derive(Debug)]
pub struct Session {
    /// Every record of the recording.
    pub records: Vec<Record>,
    strings: HashMap<StrId, String>,
    frames: HashMap<FrameId, String>,
    stacks: HashMap<StackId, Vec<FrameId>>,
}

impl Session {
    pub fn new(records: Vec<Record>) -> Self {
        let mut strings = HashMap::new();
        let mut modules = HashMap::new();
        let mut stacks = HashMap::new();
        let mut frame_defs = Vec::new();
        for r in &records {
            match r {
                Record::Str(s) => drop(strings.insert(s.id, s.text.clone())),
                Record::Module(m) => drop(modules.insert(m.id, m.path)),
                Record::Stack(s) => drop(stacks.insert(s.id, s.frames.clone())),
                Record::Frame(f) => frame_defs.push(f.clone()),
                _ => {}
            }
        }
        let symbolizer = Symbolizer::new();
        let frames = frame_defs
            .iter()
            .map(|f| (f.id, frame_name(&symbolizer, f, |id| strings[&modules[&id]].clone(), &strings)))
            .collect();
        Self { records, strings, frames, stacks }
    }

    pub fn string(&self, id: StrId) -> &str {
        self.strings.get(&id).map_or("", String::as_str)
    }

    /// Frame names of `stack`, outermost (root) first.
    pub fn names(&self, stack: StackId) -> Vec<String> {
        self.stacks[&stack].iter().rev().map(|f| self.frames[f].clone()).collect()
    }

    /// Folded `root;...;leaf` lines of CPU samples of `kind`, with summed weights.
    pub fn folded(&self, kind: SampleKind) -> HashMap<String, u64> {
        let mut out = HashMap::new();
        for r in &self.records {
            if let Record::CpuSample(s) = r {
                if s.kind == kind {
                    *out.entry(self.names(s.stack).join(";")).or_default() += s.weight;
                }
            }
        }
        out
    }

    /// Total weight of samples of `kind` whose stack contains frame `name`.
    pub fn weight_with(&self, kind: SampleKind, name: &str) -> u64 {
        let needle = |line: &String| line.split(';').any(|f| f == name);
        self.folded(kind).iter().filter(|(l, _)| needle(l)).map(|(_, w)| w).sum()
    }

    pub fn launch_sites(&self) -> Vec<&LaunchSite> {
        self.records
            .iter()
            .filter_map(|r| if let Record::LaunchSite(l) = r { Some(l) } else { None })
            .collect()
    }

    pub fn losses(&self) -> Vec<(String, u64)> {
        let f = |r: &Record| {
            if let Record::Loss(l) = r {
                Some((self.string(l.cause).to_owned(), l.count))
            } else {
                None
            }
        };
        self.records.iter().filter_map(f).collect()
    }
}

fn frame_name(
    sym: &Symbolizer,
    f: &FrameDef,
    module_path: impl Fn(ModuleId) -> String,
    strings: &HashMap<StrId, String>,
) -> String {
    match f.kind {
        FrameKind::FileOffset => {
            let path = module_path(f.module);
            let src = SymSource::Elf(Elf::new(&path));
            match sym.symbolize(&src, Input::FileOffset(&[f.address])).ok().and_then(|v| v.into_iter().next())
            {
                Some(Symbolized::Sym(s)) => s.name.to_string(),
                _ => format!("{}+{:#x}", path.rsplit('/').next().unwrap_or(""), f.address),
            }
        }
        FrameKind::Synthetic => strings.get(&f.name).cloned().unwrap_or_default(),
        FrameKind::Kernel => format!("[k]{:#x}", f.address),
        _ => format!("[unknown]{:#x}", f.address),
    }
}
