//! The recording thread: owns the loaded BPF object, polls the ring buffer, rescans the
//! target's maps for new libraries, and at the end drains everything and reports losses.

use std::cell::RefCell;
use std::mem::MaybeUninit;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use libbpf_rs::{MapHandle, RingBuffer, RingBufferBuilder};
use xpuprof_sdk::model::{Loss, Record};
use xpuprof_sdk::{Emitter, Logger};

use crate::bpf::{self, ProfileSkel};
use crate::capture::{Control, Window};
use crate::config::{Config, Python};
use crate::handler::Handler;
use crate::procmaps::ProcMaps;
use crate::runtime::RunTime;
use crate::uprobes::{ProbeSet, Programs};

/// Delays after an exec at which the new image's maps are scanned again, so that libraries the
/// dynamic loader maps right after exec get their probes before `main` runs far.
const RESCANS_AFTER_EXEC: [Duration; 4] = [
    Duration::from_millis(1),
    Duration::from_millis(5),
    Duration::from_millis(20),
    Duration::from_millis(60),
];

/// Causes of the BPF-side loss counters, indexed like `enum xp_loss_cause`.
const BPF_LOSS_CAUSES: [&str; bpf::LOSS_COUNT as usize] = [
    "ring buffer full: on-CPU samples dropped",
    "ring buffer full: off-CPU intervals dropped",
    "ring buffer full: launch stacks dropped",
    "ring buffer full: process events dropped",
    "launch stacks skipped by sampling",
    "launch stacks skipped by rate limit",
    "off-CPU intervals dropped: too many blocked threads",
    "processes not tracked: pid table full",
];

/// Everything the thread needs.
#[derive(Debug)]
pub struct Job {
    /// Configuration.
    pub cfg: Config,
    /// Root of the process tree.
    pub pid: u32,
    /// The processes already running to track from the start (`xpuprof attach`: the root's
    /// descendants with `--tree`), with their parents; empty for a target xpuprof started.
    pub adopted: Vec<(u32, u32)>,
    /// Children of tracked processes are tracked too.
    pub follow_forks: bool,
    /// A capture window is open from the start.
    pub capture: bool,
    /// Window requests from the host's thread.
    pub control: Receiver<Control>,
    /// The profiled command (for pre-attaching probes to its executable and libraries).
    pub command: Vec<String>,
    /// Emits records.
    pub emitter: Emitter,
    /// Logs.
    pub log: Logger,
    /// Set by `stop`.
    pub stop: Arc<AtomicBool>,
}

/// Runs a recording; `ready` receives `Ok` once everything is attached, or the fatal error.
pub fn run(job: Job, ready: SyncSender<Result<(), String>>) -> Option<Emitter> {
    let mut storage = MaybeUninit::uninit();
    let mut skel = match bpf::open_load(&job.cfg, job.follow_forks, &mut storage) {
        Ok(s) => s,
        Err(e) => return fail(&ready, e, job.emitter),
    };
    let seeds: Vec<u32> = std::iter::once(job.pid).chain(job.adopted.iter().map(|(p, _)| *p)).collect();
    let _attachments = match bpf::attach(&mut skel, &seeds) {
        Ok(a) => a,
        Err(e) => return fail(&ready, e, job.emitter),
    };
    let mut window = Window::default();
    let mut probes = ProbeSet::new(job.cfg.launch_probes.clone(), job.cfg.trampoline);
    if !job.capture {
        probes.pause();
    } else if let Err(e) = window.open(&skel, &job.cfg, &mut probes) {
        return fail(&ready, e, job.emitter);
    }
    let Job { cfg, pid, adopted, command, emitter, log, stop, control, .. } = job;
    let run_time = cfg.bpf_run_time.then(|| RunTime::start(&log));
    let progs = Programs { launch: &skel.progs.on_launch, trampoline: &skel.progs.on_trampoline };
    pre_attach(&mut probes, progs, &command, &log);
    let mut handler =
        Handler::new(emitter, log, pid, &command, cfg.launch_probes.clone(), cfg.python == Python::Auto);
    for (child, parent) in adopted {
        handler.adopt(child, parent);
    }
    match MapHandle::try_from(&skel.maps.py_procs) {
        Ok(map) => handler.set_python_map(map),
        Err(e) => handler.log.warn(&format!("Python frames off: failed to open the BPF table py_procs: {e}")),
    }
    let handler = RefCell::new(handler);
    let mut rb = RingBufferBuilder::new();
    let added = rb
        .add(&skel.maps.events, |data: &[u8]| {
            handler.borrow_mut().handle(data);
            0
        })
        .map(|_| ());
    let rb = match added.and_then(|()| rb.build()) {
        Ok(rb) => rb,
        Err(e) => {
            let msg = format!("failed to open the BPF ring buffer: {e}");
            let emitter = std::mem::replace(&mut handler.borrow_mut().emitter, Emitter::detached());
            return fail(&ready, msg, emitter);
        }
    };
    let _ = ready.send(Ok(()));
    let windows = Windows { skel: &skel, window: &mut window, control: &control, command: &command };
    record_until_stopped(&rb, &handler, &mut probes, progs, &cfg, &stop, windows);
    drop(rb);
    let mut handler = handler.into_inner();
    handler.flush_parked();
    finish(&skel, &mut handler, &probes, cfg.ustack_copy_bytes);
    if run_time.as_ref().is_some_and(RunTime::counting) {
        let p = &skel.progs;
        let progs = [
            ("on-CPU sampling", &p.on_sample),
            ("off-CPU sched_switch", &p.on_switch),
            ("launch uprobes", &p.on_launch),
            ("trampoline uprobe", &p.on_trampoline),
            ("fork", &p.on_fork),
            ("exec", &p.on_exec),
            ("exit", &p.on_exit),
        ];
        if let Some(line) = crate::runtime::report(&progs) {
            handler.log.info(&line);
        }
    }
    Some(handler.emitter)
}

/// Polls the ring buffer and runs the maps scans until `stop`, then drains the ring buffer.
fn record_until_stopped(
    rb: &RingBuffer<'_>,
    handler: &RefCell<Handler>,
    probes: &mut ProbeSet,
    progs: Programs<'_, '_>,
    cfg: &Config,
    stop: &AtomicBool,
    mut windows: Windows<'_, '_>,
) {
    let mut scans = Scans::new(cfg.maps_scan_ms);
    while !stop.load(Ordering::Acquire) {
        windows.serve(&mut handler.borrow_mut(), probes, progs, cfg);
        if let Err(e) = rb.poll(Duration::from_millis(10)) {
            handler.borrow().log.debug(&format!("ring buffer poll: {e}"));
        }
        scans.run(&mut handler.borrow_mut(), probes, progs);
        handler.borrow_mut().forget_exited(Instant::now());
        // Records reach the host within the SDK's FLUSH_INTERVAL however few there are, so the
        // live status moves and a killed xpuprof loses at most the last moments (the archive
        // sink writes what it receives within a second).
        let mut h = handler.borrow_mut();
        h.flush_launch_sites();
        h.emitter.flush_if_due();
    }
    if let Err(e) = rb.consume() {
        handler.borrow().log.warn(&format!("failed to drain the BPF ring buffer: {e}"));
    }
}

/// The window state and the host's requests to change it.
struct Windows<'a, 'obj> {
    skel: &'a ProfileSkel<'obj>,
    window: &'a mut Window,
    control: &'a Receiver<Control>,
    command: &'a [String],
}

impl Windows<'_, '_> {
    /// Applies the host's pending requests (open or close the window) and answers each.
    fn serve(&mut self, h: &mut Handler, probes: &mut ProbeSet, progs: Programs<'_, '_>, cfg: &Config) {
        loop {
            let req = match self.control.try_recv() {
                Ok(r) => r,
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => return,
            };
            let r = if req.on {
                let was_open = self.window.is_open();
                let r = self.window.open(self.skel, cfg, probes);
                if r.is_ok() && !was_open {
                    // The tree's files get their uprobes again.
                    pre_attach(probes, progs, self.command, &h.log);
                    let live: Vec<u32> = h.live.iter().copied().collect();
                    for pid in live {
                        let maps: ProcMaps = h.maps.get(pid).cloned().unwrap_or_default();
                        probes.scan_maps(progs, pid, &maps, &h.log);
                    }
                }
                r
            } else {
                self.window.close(probes);
                // What was sampled inside the window goes out now.
                h.emitter.flush();
                Ok(())
            };
            let _ = req.reply.send(r);
        }
    }
}

fn fail(ready: &SyncSender<Result<(), String>>, msg: String, emitter: Emitter) -> Option<Emitter> {
    let _ = ready.send(Err(msg));
    Some(emitter)
}

/// Probes in the command's executable and the libraries it links, before it runs.
fn pre_attach(probes: &mut ProbeSet, progs: Programs<'_, '_>, command: &[String], log: &Logger) {
    if probes.is_empty() {
        return;
    }
    // xpuprof's agents sit next to the plugins (this one's folder) or the running binary.
    let exe_dir = std::env::current_exe().ok().and_then(|e| e.parent().map(PathBuf::from));
    let dirs: Vec<PathBuf> =
        [xpuprof_toolbox::agent_host::own_dir(), exe_dir].into_iter().flatten().collect();
    probes.scan_agent_dirs(progs, &dirs, log);
    let Some(exe) = command.first().and_then(|c| resolve_in_path(c)) else { return };
    probes.scan_file(progs, &exe, log);
    for lib in linked_libraries(&exe) {
        probes.scan_file(progs, &lib, log);
    }
}

fn resolve_in_path(cmd: &str) -> Option<PathBuf> {
    if cmd.contains('/') {
        return Some(PathBuf::from(cmd));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(cmd)).find(|p| p.is_file())
}

/// The shared libraries `exe` links, as the dynamic loader resolves them (`ldd`).
fn linked_libraries(exe: &std::path::Path) -> Vec<PathBuf> {
    let Ok(out) = std::process::Command::new("ldd").arg(exe).output() else { return Vec::new() };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once("=> ").map(|(_, r)| r))
        .filter_map(|r| r.split_whitespace().next())
        .filter(|p| p.starts_with('/'))
        .map(PathBuf::from)
        .collect()
}

/// Periodic and exec-triggered rescans of the tree's maps.
struct Scans {
    every: Duration,
    next_periodic: Instant,
    due: Vec<(Instant, u32)>,
}

impl Scans {
    fn new(every_ms: u64) -> Self {
        let every = Duration::from_millis(every_ms);
        Self { every, next_periodic: Instant::now() + every, due: Vec::new() }
    }

    fn run(&mut self, h: &mut Handler, probes: &mut ProbeSet, progs: Programs<'_, '_>) {
        let now = Instant::now();
        for pid in h.take_execs() {
            scan(h, probes, progs, pid);
            self.due.extend(RESCANS_AFTER_EXEC.iter().map(|d| (now + *d, pid)));
        }
        let (ready, later): (Vec<_>, Vec<_>) = self.due.drain(..).partition(|(t, _)| *t <= now);
        self.due = later;
        for (_, pid) in ready {
            scan(h, probes, progs, pid);
        }
        if now >= self.next_periodic {
            self.next_periodic = now + self.every;
            let live: Vec<u32> = h.live.iter().copied().collect();
            for pid in live {
                scan(h, probes, progs, pid);
            }
        }
    }
}

/// Refreshes the maps snapshot of `pid`, probes new files in it and looks for its Python.
fn scan(h: &mut Handler, probes: &mut ProbeSet, progs: Programs<'_, '_>, pid: u32) {
    if !h.maps.refresh(pid) {
        return;
    }
    h.discover_python(pid);
    if probes.is_empty() {
        return;
    }
    let maps: ProcMaps = h.maps.get(pid).cloned().unwrap_or_default();
    probes.scan_maps(progs, pid, &maps, &h.log);
}

/// The loss cause of user stacks cut by `c` (shown with the count; the frames before the cut
/// are kept).
fn cut_cause(c: xpuprof_unwind::Cut) -> &'static str {
    use xpuprof_unwind::Cut;
    match c {
        Cut::Unreadable => "user stacks cut short: deeper than the stack copy (ustack_copy_bytes)",
        Cut::OutsideModules => "user stacks cut short: code without unwind information",
        Cut::BadAddress => "user stacks cut short: bad return address",
        Cut::Error => "user stacks cut short: unwind rule failed",
        _ => "user stacks cut short: unwinder unsupported here",
    }
}

/// Emits the loss records and flushes.
fn finish(skel: &ProfileSkel<'_>, h: &mut Handler, probes: &ProbeSet, ustack_copy_bytes: u32) {
    probes.report_missing(&h.log);
    let stats = h.stack_stats();
    if let Some(line) = stats.depth_report(ustack_copy_bytes) {
        h.log.info(&line);
    }
    let mut losses: Vec<(&str, u64)> =
        (0..bpf::LOSS_COUNT).map(|i| (BPF_LOSS_CAUSES[i as usize], bpf::read_loss(skel, i))).collect();
    losses.push(("launch probes not attached", probes.attach_failures));
    losses.push((
        "user frames not normalised: process exited before its maps were read",
        stats.unmapped_frames,
    ));
    losses.push(("user stacks not copied by BPF", stats.missing_user_stacks));
    for c in xpuprof_unwind::Cut::ALL {
        losses.push((cut_cause(c), stats.cut[c as usize]));
    }
    losses.push((crate::stacks::MAX_DEPTH_CAUSE, stats.max_depth));
    losses.push(("ring buffer records not decoded", h.bad_records));
    if let Some(py) = h.python() {
        losses.extend(crate::python::report(py, &h.log));
    }
    let time = xpuprof_sdk::clock::now_ns();
    for (cause, count) in losses.into_iter().filter(|(_, n)| *n > 0) {
        h.log.info(&format!("lost {count}: {cause}"));
        let cause = h.intern_string(cause);
        h.emitter.emit(&Record::Loss(Loss::default().time(time).cause(cause).count(count)));
    }
    h.emitter.flush();
}
