//! Kernel time by where it was launched from: collected per (thread, launch stack, device,
//! kernel) while recording, read into the tables a PyTorch user asks for first when the report
//! is written: GPU time by the innermost user Python line, by `nn.Module` class, forward against
//! backward, by launch site and per device.
//!
//! Kernels that ran from a recording (a graph node, a command list recorded once and run many times) are counted
//! at the call that recorded them when its stack is known: that is the model code they come
//! from, where the replay call is the framework's. GPU time here is kernel device time (the sum
//! of kernel durations, like the kernel table's), so every share agrees with `kernels[]`.

use std::collections::HashMap;

use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::{DeviceId, DeviceOp, StackId, StrId};

use crate::assemble::pct;
use crate::defs::Defs;
use crate::frames::Stack;
use crate::python::{self, UserCode};
use crate::report::*;

/// Launch sites kept in the JSON.
pub const MAX_LAUNCH_SITES: usize = 100;
/// Kernels kept per device in the JSON.
pub const MAX_DEVICE_KERNELS: usize = 50;

/// Where a kernel came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Launch {
    /// Process.
    pub pid: u32,
    /// Launching thread (0: not joined).
    pub tid: u32,
    /// Launch stack.
    pub stack: StackId,
    /// Launching API function.
    pub api: StrId,
    /// Device it ran on.
    pub device: DeviceId,
    /// Kernel name.
    pub name: StrId,
}

/// Kernel time and count.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Time {
    /// Device time, ns.
    pub ns: u64,
    /// Kernels.
    pub launches: u64,
}

impl Time {
    fn add(&mut self, t: Time) {
        self.ns += t.ns;
        self.launches += t.launches;
    }
}

/// Kernel time per [`Launch`]; grows with distinct launch stacks, threads and kernels.
#[derive(Debug, Default)]
pub struct GpuTime {
    /// The time.
    pub by_launch: IdMap<Launch, Time>,
}

impl GpuTime {
    /// Adds a kernel of `dur` ns.
    #[inline]
    pub fn add(&mut self, op: &DeviceOp, dur: u64) {
        let l = op.recorded.filter(|r| !r.stack.is_none()).or(op.launch).unwrap_or_default();
        let key =
            Launch { pid: op.pid, tid: l.tid, stack: l.stack, api: l.api, device: op.device, name: op.name };
        self.by_launch.entry(key).or_default().add(Time { ns: dur, launches: 1 });
    }

    /// Kernels per (process, thread, device).
    pub fn per_thread_device(&self) -> IdMap<(u32, u32, DeviceId), u64> {
        let mut out: IdMap<(u32, u32, DeviceId), u64> = IdMap::default();
        for (k, t) in &self.by_launch {
            *out.entry((k.pid, k.tid, k.device)).or_default() += t.launches;
        }
        out
    }
}

/// What the tables read of one launch stack.
#[derive(Debug)]
struct Site {
    /// The innermost user Python frame: label, function, file, line.
    user_line: Option<(String, String, String, u32)>,
    /// The stack had Python frames.
    python: bool,
    /// `nn.Module` forwards (class, file), innermost first, each once.
    modules: Vec<(String, String)>,
    /// Ran for a backward pass.
    backward: bool,
    /// The stack as tables show it.
    shown: Vec<String>,
}

impl Site {
    fn read(defs: &Defs, user: &UserCode, stack: StackId, api: StrId) -> Self {
        let s = Stack::read(defs, user, stack);
        let user_line = s.innermost_user().and_then(|f| {
            let p = f.python()?;
            Some((python::label(&p), p.function.to_owned(), p.file.to_owned(), p.line))
        });
        let mut modules: Vec<(String, String)> = Vec::new();
        for m in s.modules() {
            if !modules.contains(&m) {
                modules.push(m);
            }
        }
        Self {
            user_line,
            python: s.has_python(),
            backward: s.is_backward(),
            shown: s.user_first(defs, api),
            modules,
        }
    }
}

/// The tables of this module.
#[derive(Debug, Default)]
pub struct Tables {
    /// The Python view, when any launch had Python frames or came from an autograd engine thread.
    pub python: Option<PythonView>,
    /// Launch sites by time.
    pub launch_sites: Vec<LaunchSiteRow>,
    /// Kernels per device.
    pub kernels_by_device: Vec<DeviceKernels>,
}

/// Reads the launch stacks once each and builds the tables; `labels` gives kernel names as
/// tables show them.
pub fn tables(
    gpu: &GpuTime,
    defs: &Defs,
    user: &UserCode,
    labels: &IdMap<StrId, (String, String)>,
) -> Tables {
    let all: u64 = gpu.by_launch.values().map(|t| t.ns).sum();
    let mut sites: HashMap<(StackId, StrId), Site> = HashMap::new();
    let mut engine: IdMap<(u32, u32), bool> = IdMap::default();
    let mut view = PythonAcc::default();
    let mut by_site: HashMap<Vec<String>, Acc> = HashMap::new();
    let mut by_device: IdMap<DeviceId, IdMap<StrId, Time>> = IdMap::default();
    for (k, &t) in &gpu.by_launch {
        let site = sites.entry((k.stack, k.api)).or_insert_with(|| Site::read(defs, user, k.stack, k.api));
        let on_engine = *engine
            .entry((k.pid, k.tid))
            .or_insert_with(|| python::is_engine_thread(defs.thread_name(k.pid, k.tid)));
        view.add(site, k, t, on_engine);
        by_site.entry(site.shown.clone()).or_default().add(k.name, t);
        by_device.entry(k.device).or_default().entry(k.name).or_default().add(t);
    }
    let label = |name: StrId| labels.get(&name).map_or_else(String::new, |l| l.0.clone());
    Tables {
        python: view.any.then(|| view.finish(user, all, &label)),
        launch_sites: launch_site_rows(by_site, all, &label),
        kernels_by_device: device_rows(by_device, defs, labels),
    }
}

/// Time with the kernels that made it up.
#[derive(Debug, Default)]
struct Acc {
    time: Time,
    kernels: IdMap<StrId, u64>,
}

impl Acc {
    fn add(&mut self, name: StrId, t: Time) {
        self.time.add(t);
        *self.kernels.entry(name).or_default() += t.ns;
    }

    /// The kernel with the most time (ties: the smaller id, for a stable report).
    fn top(&self) -> StrId {
        self.kernels
            .iter()
            .max_by_key(|(id, ns)| (**ns, std::cmp::Reverse(id.0)))
            .map_or(StrId::NONE, |(id, _)| *id)
    }
}

/// The Python view while it is summed.
#[derive(Debug, Default)]
struct PythonAcc {
    any: bool,
    lines: HashMap<(String, String, String, u32), Acc>,
    module_self: HashMap<(String, String), Time>,
    module_total: HashMap<(String, String), u64>,
    phases: [Time; 3],
}

/// Group rows of launches without a user line or module.
const NO_STACK: &str = "[no launch stack]";
const NO_PYTHON: &str = "[no Python frame]";
const LIBRARY_ONLY: &str = "[library Python code only]";
const ENGINE_UNATTRIBUTED: &str = "[autograd engine thread, backward() not known]";
const NO_MODULE: &str = "[no nn.Module forward]";
const PHASES: [&str; 3] = ["forward", "backward", "other"];

impl PythonAcc {
    fn add(&mut self, site: &Site, k: &Launch, t: Time, on_engine: bool) {
        self.any |= site.python || on_engine;
        let group = |g: &str| (g.to_owned(), String::new(), String::new(), 0);
        let line = match &site.user_line {
            Some(l) => l.clone(),
            None if k.stack.is_none() && !on_engine => group(NO_STACK),
            None if site.python => group(LIBRARY_ONLY),
            None if on_engine => group(ENGINE_UNATTRIBUTED),
            None => group(NO_PYTHON),
        };
        self.lines.entry(line).or_default().add(k.name, t);
        let innermost =
            site.modules.first().cloned().unwrap_or_else(|| (NO_MODULE.to_owned(), String::new()));
        self.module_self.entry(innermost).or_default().add(t);
        for m in &site.modules {
            *self.module_total.entry(m.clone()).or_default() += t.ns;
        }
        let phase = if site.backward || on_engine {
            1
        } else if !site.modules.is_empty() {
            0
        } else {
            2
        };
        self.phases[phase].add(t);
    }

    fn finish(self, user: &UserCode, all: u64, label: &dyn Fn(StrId) -> String) -> PythonView {
        let mut by_line: Vec<LineRow> = self
            .lines
            .into_iter()
            .map(|((location, function, file, line), acc)| LineRow {
                location,
                function,
                file,
                line,
                gpu_ns: acc.time.ns,
                gpu_pct: pct(acc.time.ns, all),
                launches: acc.time.launches,
                top_kernel: label(acc.top()),
            })
            .collect();
        by_line.sort_by(|a, b| {
            b.gpu_ns
                .cmp(&a.gpu_ns)
                .then_with(|| (&a.location, &a.file, a.line).cmp(&(&b.location, &b.file, b.line)))
        });
        let mut by_module: Vec<ModuleRow> = self
            .module_total
            .keys()
            .chain(self.module_self.keys())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .map(|key| {
                let own = self.module_self.get(key).copied().unwrap_or_default();
                let total = self.module_total.get(key).copied().unwrap_or(own.ns);
                let module = if key.0.is_empty() { "forward".to_owned() } else { key.0.clone() };
                ModuleRow {
                    module,
                    file: key.1.clone(),
                    self_ns: own.ns,
                    self_pct: pct(own.ns, all),
                    total_ns: total,
                    total_pct: pct(total, all),
                    launches: own.launches,
                }
            })
            .collect();
        by_module.sort_by(|a, b| {
            (b.self_ns, b.total_ns)
                .cmp(&(a.self_ns, a.total_ns))
                .then_with(|| (&a.module, &a.file).cmp(&(&b.module, &b.file)))
        });
        let phases = PHASES
            .iter()
            .zip(self.phases)
            .map(|(phase, t)| PhaseRow { phase, gpu_ns: t.ns, gpu_pct: pct(t.ns, all), launches: t.launches })
            .collect();
        PythonView {
            user_code: UserCodeRule {
                user_paths: user.user_paths.clone(),
                library_paths: user.library_paths.clone(),
                rule: "a Python file is the user's unless it is under lib/pythonX.Y/, site-packages or \
                       dist-packages, or a <pseudo-file>; python_user_paths always are, python_library_paths never",
            },
            by_line,
            by_module,
            phases,
        }
    }
}

fn launch_site_rows(
    by_site: HashMap<Vec<String>, Acc>,
    all: u64,
    label: &dyn Fn(StrId) -> String,
) -> Vec<LaunchSiteRow> {
    let mut rows: Vec<LaunchSiteRow> = by_site
        .into_iter()
        .map(|(stack, acc)| LaunchSiteRow {
            gpu_ns: acc.time.ns,
            gpu_pct: pct(acc.time.ns, all),
            launches: acc.time.launches,
            kernels: acc.kernels.len() as u64,
            top_kernel: label(acc.top()),
            stack,
        })
        .collect();
    rows.sort_by(|a, b| b.gpu_ns.cmp(&a.gpu_ns).then_with(|| a.stack.cmp(&b.stack)));
    rows.truncate(MAX_LAUNCH_SITES);
    rows
}

fn device_rows(
    by_device: IdMap<DeviceId, IdMap<StrId, Time>>,
    defs: &Defs,
    labels: &IdMap<StrId, (String, String)>,
) -> Vec<DeviceKernels> {
    let mut out: Vec<DeviceKernels> = by_device
        .into_iter()
        .map(|(device, kernels)| {
            let (device_index, name) = defs.device(device);
            let total: u64 = kernels.values().map(|t| t.ns).sum();
            let mut rows: Vec<DeviceKernelRow> = kernels
                .into_iter()
                .map(|(k, t)| {
                    let (label, id) = labels.get(&k).cloned().unwrap_or_default();
                    DeviceKernelRow {
                        label,
                        id,
                        launches: t.launches,
                        total_ns: t.ns,
                        gpu_pct: pct(t.ns, total),
                    }
                })
                .collect();
            rows.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then_with(|| a.label.cmp(&b.label)));
            rows.truncate(MAX_DEVICE_KERNELS);
            DeviceKernels { device_index, device: name, total_ns: total, kernels: rows }
        })
        .collect();
    out.sort_by(|a, b| (a.device_index, &a.device).cmp(&(b.device_index, &b.device)));
    out
}
