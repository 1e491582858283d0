//! The text of CPU stacks, in the "all" view (every frame as the host named it) or the "user"
//! view (interpreter internals and call plumbing folded away, names and paths shortened), and
//! what each frame text is (its class, its full text, what was folded into it) for tooltips.

use xpuprof_sdk::hash::{IdMap, IdSet};
use xpuprof_sdk::model::*;
use xpuprof_toolbox::own_code::{is_own_frame, OWN_FRAME};
use xpuprof_toolbox::python_frame::{short_frame, PyFrameName};
use xpuprof_toolbox::Definitions as Defs;

use super::frames::{cut_cpp_name, is_interpreter_module, is_python_frame, FrameClass};
use super::names::{basename, sanitize_frame};
use super::options::{FoldedOptions, Frames};

/// What a frame text of the output stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameNote {
    /// What the frame is.
    pub class: FrameClass,
    /// The full text when the view shortened it (a C++ name with its parameters, a full path).
    pub full: Option<String>,
    /// The most frames folded into this one in any stack (the user view's interpreter and
    /// plumbing frames between it and the frame shown below it).
    pub folded: usize,
    /// Some of the folded frames' names (at most [`FOLDED_NAMES`]).
    pub folded_names: Vec<String>,
}

/// How many folded frame names a note keeps.
pub const FOLDED_NAMES: usize = 4;

impl FrameNote {
    /// A note of a frame of `class`.
    pub fn new(class: FrameClass) -> Self {
        Self { class, full: None, folded: 0, folded_names: Vec::new() }
    }

    /// The note in words for a tooltip, or an empty string when there is nothing to say.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(full) = &self.full {
            parts.push(full.clone());
        }
        if self.folded > 0 {
            let more = if self.folded > self.folded_names.len() { ", …" } else { "" };
            let what = if self.class == FrameClass::Own {
                "frames of xpuprof's agent"
            } else {
                "interpreter frames"
            };
            parts.push(format!("{} {what} folded ({}{more})", self.folded, self.folded_names.join(", ")));
        }
        parts.join("; ")
    }
}

/// One frame of a stack being rendered.
#[derive(Debug, Clone)]
struct Item {
    /// The text as the host named it (sanitised).
    raw: String,
    class: FrameClass,
}

/// Renders stacks to text, caching each, and notes what every frame text is.
#[derive(Debug)]
pub(crate) struct StackRenderer<'a> {
    defs: &'a Defs,
    opts: &'a FoldedOptions,
    /// Modules only ever seen inside launch API calls (the runtime's and driver's libraries).
    runtime: IdSet<ModuleId>,
    /// The session has Python frames: the interpreter's modules are told apart (a session
    /// without runs no Python code that a view could show instead of them).
    python: bool,
    cache: IdMap<(StackId, StrId), String>,
    /// Frame text → what it is.
    pub(crate) notes: IdMap<String, FrameNote>,
}

impl<'a> StackRenderer<'a> {
    /// A renderer for the stacks of `defs`; `launches` are the (stack, API name) pairs of the
    /// session's launches, which tell the runtime's modules apart (the modules of frames inside
    /// the API call that hold no frame of a caller side); `python` says whether the session has
    /// Python frames.
    pub(crate) fn new(
        defs: &'a Defs,
        opts: &'a FoldedOptions,
        launches: impl Iterator<Item = (StackId, StrId)>,
        python: bool,
    ) -> Self {
        let (mut inside, mut outside) = (IdSet::default(), IdSet::default());
        for (stack, api) in launches {
            let (Some(frames), Some(api)) = (defs.stack(stack), defs.str(api)) else { continue };
            let call = frames.iter().position(|f| defs.frame(*f).and_then(|f| defs.str(f.name)) == Some(api));
            let Some(call) = call else { continue };
            for (i, f) in frames.iter().enumerate() {
                let Some(m) = defs.frame(*f).map(|f| f.module).filter(|m| !m.is_none()) else { continue };
                if i <= call {
                    inside.insert(m);
                } else {
                    outside.insert(m);
                }
            }
        }
        let runtime = inside.difference(&outside).copied().collect();
        Self { defs, opts, runtime, python, cache: IdMap::default(), notes: IdMap::default() }
    }

    /// Notes `text` as a frame of `class` (a marker or GPU frame).
    pub(crate) fn note(&mut self, text: &str, class: FrameClass) {
        if !self.notes.contains_key(text) {
            self.notes.insert(text.to_owned(), FrameNote::new(class));
        }
    }

    /// The frames of stack `id`, root first, joined with `;`; with `api` (a launch API's name),
    /// cut after its innermost frame of that name (see `cut_after`).
    pub(crate) fn stack(&mut self, id: StackId, api: StrId) -> String {
        if let Some(s) = self.cache.get(&(id, api)) {
            return s.clone();
        }
        let text = match self.defs.stack(id) {
            None => "[unknown stack]".to_owned(),
            Some(frames) => {
                let mut items = Vec::with_capacity(frames.len());
                for f in frames.iter().rev() {
                    self.push_items(&mut items, *f);
                }
                if let Some(api) = self.defs.str(api).map(sanitize_frame) {
                    cut_after(&mut items, &api);
                }
                // xpuprof's own code goes under one `[xpuprof]` frame above its outermost frame.
                if let Some(at) = items.iter().position(|i| i.class == FrameClass::Own) {
                    items.insert(at, Item { raw: OWN_FRAME.to_owned(), class: FrameClass::Own });
                }
                if items.is_empty() {
                    "[empty stack]".to_owned()
                } else {
                    self.text(items)
                }
            }
        };
        if text.starts_with('[') {
            self.note(&text, FrameClass::Marker);
        }
        self.cache.insert((id, api), text.clone());
        text
    }

    /// Every stack text rendered so far.
    pub(crate) fn rendered(&self) -> impl Iterator<Item = &String> {
        self.cache.values()
    }

    /// Appends frame `id`: its function, then the functions inlined into it, outermost first.
    fn push_items(&self, items: &mut Vec<Item>, id: FrameId) {
        let defs = self.defs;
        let Some(f) = defs.frame(id) else {
            items.push(Item { raw: "[unknown frame]".to_owned(), class: FrameClass::Marker });
            return;
        };
        let module = defs.module_path(f.module);
        let native = if is_own_frame(defs, f) {
            FrameClass::Own
        } else if self.python && module.is_some_and(is_interpreter_module) {
            FrameClass::Interpreter
        } else if self.runtime.contains(&f.module) {
            FrameClass::Runtime
        } else {
            FrameClass::Native
        };
        let raw = match defs.str(f.name) {
            Some(name) => sanitize_frame(name).into_owned(),
            None => {
                let module = match (f.kind, module) {
                    (_, Some(path)) => basename(path),
                    (FrameKind::Kernel, None) => "[kernel]",
                    (_, None) => "[unknown module]",
                };
                format!("{}+{:#x}", sanitize_frame(module), f.address)
            }
        };
        let class = if is_python_frame(f.kind, &raw) {
            let file = PyFrameName::parse(&raw).map_or("", |p| p.file);
            if self.opts.fold_files.iter().any(|p| file.ends_with(p.as_str())) {
                FrameClass::PythonPlumbing
            } else {
                FrameClass::Python
            }
        } else {
            native
        };
        items.push(Item { raw, class });
        for inl in &f.inlined {
            let raw = sanitize_frame(defs.str(*inl).unwrap_or("[unknown inlined]")).into_owned();
            items.push(Item { raw, class: native });
        }
    }

    /// The text of `items` in the options' view, noting every frame text.
    fn text(&mut self, items: Vec<Item>) -> String {
        let user = self.opts.frames == Frames::User;
        let mut out = String::new();
        let mut folded: Vec<String> = Vec::new();
        let mut last_kept: Option<String> = None;
        // In the user view, a stack with Python frames starts at its outermost one: the native
        // frames outside it are the interpreter's start-up.
        let first_python = items.iter().position(|i| matches!(i.class, FrameClass::Python));
        let fold = folded_items(&items, user, first_python);
        for (item, fold) in items.into_iter().zip(fold) {
            if fold {
                folded.push(item.raw);
                continue;
            }
            let shown = if !user {
                item.raw.clone()
            } else if item.class == FrameClass::Python {
                short_frame(&item.raw).into_owned()
            } else if matches!(item.class, FrameClass::Native | FrameClass::Runtime) {
                cut_cpp_name(&item.raw, self.opts.name_width).into_owned()
            } else {
                item.raw.clone()
            };
            let note = self.notes.entry(shown.clone()).or_insert_with(|| FrameNote::new(item.class));
            if shown != item.raw && note.full.is_none() {
                note.full = Some(item.raw);
            }
            add_folded(note, &mut folded);
            if !out.is_empty() {
                out.push(';');
            }
            out.push_str(&shown);
            last_kept = Some(shown);
        }
        // Frames folded at the leaf end (the interpreter running the innermost Python frame).
        if let Some(note) = last_kept.and_then(|k| self.notes.get_mut(&k)) {
            add_folded(note, &mut folded);
        }
        out
    }
}

/// Which of `items` (root first) the view folds away. In the user view, a stack with Python
/// frames loses the interpreter's native frames, the frames outside its outermost Python frame
/// (the interpreter's start-up) and the Python plumbing; a stack without (the interpreter
/// starting, importing at start-up, collecting garbage) keeps the outermost and innermost frame
/// of each run of interpreter frames. Every frame below a `[xpuprof]` frame is folded into it.
fn folded_items(items: &[Item], user: bool, first_python: Option<usize>) -> Vec<bool> {
    if !user {
        return vec![false; items.len()];
    }
    // The frames below the `[xpuprof]` frame (xpuprof's own code and what it called) are
    // folded into it: its time is the profiler's.
    let own_from = items.iter().position(|i| i.raw == OWN_FRAME && i.class == FrameClass::Own);
    let own = |i: usize| own_from.is_some_and(|o| i > o);
    if let Some(p) = first_python {
        return items
            .iter()
            .enumerate()
            .map(|(i, item)| i < p || item.class.is_plumbing() || own(i))
            .collect();
    }
    let interp = |i: usize| items.get(i).is_some_and(|it: &Item| it.class == FrameClass::Interpreter);
    (0..items.len()).map(|i| own(i) || (interp(i) && i > 0 && interp(i - 1) && interp(i + 1))).collect()
}

/// Counts the frames of `folded` into `note` and empties it.
fn add_folded(note: &mut FrameNote, folded: &mut Vec<String>) {
    if folded.is_empty() {
        return;
    }
    note.folded = note.folded.max(folded.len());
    for name in folded.drain(..) {
        if note.folded_names.len() < FOLDED_NAMES && !note.folded_names.contains(&name) {
            note.folded_names.push(name);
        }
    }
}

/// Cuts `items` (root first) after the innermost frame named `api`, if there is one, and marks
/// that frame as the runtime's. A stack walked from inside the call holds the API function's
/// frame; the runtime's and driver's frames below it differ between capture paths (an agent's
/// walk, an eBPF uprobe) and would split one launch site into several towers. Frames an agent
/// put innermost (their names start with `[`: the operation a launch belongs to, `[compile]`)
/// stay, below the API frame.
fn cut_after(items: &mut Vec<Item>, api: &str) {
    if let Some(at) = items.iter().rposition(|i| i.raw == api) {
        let mut kept = items.split_off(at + 1);
        kept.retain(|i| i.raw.starts_with('['));
        items[at].class = FrameClass::Runtime;
        items.extend(kept);
    }
}

#[cfg(test)]
mod tests {
    use super::super::builder::{FoldedBuilder, View};
    use super::super::options::{FoldedOptions, Frames};
    use super::*;

    const PY: &str = "/usr/bin/python3.12";
    const LIBPY: &str = "/usr/lib/libpython3.12.so.1.0";
    const TORCH: &str = "/venv/lib/python3.12/site-packages/libtorch_cpu.so";
    const RT: &str = "/usr/lib/librt_accel.so";
    const SITE: &str = "/venv/lib/python3.12/site-packages";

    /// A session's records: one frame per `(module, name)` (module "" = a Python frame),
    /// stacks of those frames (root first) sampled with weights in µs, and kernels launched
    /// through `launch` from stacks.
    struct Session {
        records: Vec<Record>,
        strings: Vec<String>,
        frames: Vec<(String, String)>,
        stacks: u32,
    }

    impl Session {
        fn new() -> Self {
            Self { records: Vec::new(), strings: Vec::new(), frames: Vec::new(), stacks: 0 }
        }

        fn str(&mut self, s: &str) -> StrId {
            if let Some(i) = self.strings.iter().position(|x| x == s) {
                return StrId(i as u32 + 1);
            }
            self.strings.push(s.to_owned());
            let id = StrId(self.strings.len() as u32);
            self.records.push(Record::Str(StrDef::default().id(id).text(s.to_owned())));
            id
        }

        fn frame(&mut self, module: &str, name: &str) -> FrameId {
            let key = (module.to_owned(), name.to_owned());
            if let Some(i) = self.frames.iter().position(|x| *x == key) {
                return FrameId(i as u32 + 1);
            }
            self.frames.push(key);
            let id = FrameId(self.frames.len() as u32);
            let name = self.str(name);
            let mut f = FrameDef::default().id(id).name(name);
            if module.is_empty() {
                f = f.kind(FrameKind::Synthetic);
            } else {
                let path = self.str(module);
                let m = ModuleId(path.0);
                self.records.push(Record::Module(ModuleDef::default().id(m).path(path)));
                f = f.module(m).address(0x10);
            }
            self.records.push(Record::Frame(f));
            id
        }

        fn stack(&mut self, frames: &[(&str, &str)]) -> StackId {
            let mut ids: Vec<FrameId> = frames.iter().map(|(m, n)| self.frame(m, n)).collect();
            ids.reverse();
            self.stacks += 1;
            let id = StackId(self.stacks);
            self.records.push(Record::Stack(StackDef::new(id, ids)));
            id
        }

        fn sample(&mut self, frames: &[(&str, &str)], us: u64) {
            let stack = self.stack(frames);
            self.records.push(Record::CpuSample(CpuSample::default().stack(stack).weight(us * 1000).tid(7)));
        }

        fn launch(&mut self, frames: &[(&str, &str)], api: &str, us: u64) {
            let stack = self.stack(frames);
            let (api, name) = (self.str(api), self.str("gemm"));
            let op = DeviceOp::default().kind(DeviceOpKind::Kernel).name(name).end(us * 1000);
            let launch = LaunchRef::default().stack(stack).api(api).tid(7);
            self.records.push(Record::DeviceOp(op.launch(Some(launch))));
        }

        fn fold(&self, opts: FoldedOptions, view: View) -> (Vec<String>, IdMap<String, FrameInfo>) {
            let mut b = FoldedBuilder::new(opts);
            for r in &self.records {
                b.add(r);
            }
            let f = b.fold(view);
            (f.lines.into_iter().map(|(s, w)| format!("{s} {w}")).collect(), f.frames.into_iter().collect())
        }
    }

    use super::super::builder::FrameInfo;

    /// A Python process's stack: start-up, the interpreter between Python frames, a module call
    /// through `nn.Module` plumbing, then native code.
    fn python_stack(leaf: &[(&'static str, &'static str)]) -> Vec<(&'static str, String)> {
        let mut v: Vec<(&str, String)> = vec![
            ("/lib/libc.so.6", "__libc_start_main".into()),
            (PY, "_start".into()),
            (PY, "Py_RunMain".into()),
            (LIBPY, "_PyEval_EvalFrameDefault".into()),
            ("", "<module> (/w/train.py:40)".into()),
            (LIBPY, "_PyEval_EvalFrameDefault".into()),
            (LIBPY, "PyObject_Call".into()),
            ("", format!("Module._wrapped_call_impl ({SITE}/torch/nn/modules/module.py:1739)")),
            ("", format!("Module._call_impl ({SITE}/torch/nn/modules/module.py:1750)")),
            (PY, "python3.12+0x14cbb3".into()),
            ("", format!("Qwen3Attention.forward ({SITE}/transformers/models/qwen3/modeling_qwen3.py:307)")),
            (LIBPY, "_PyObject_Call_Prepend".into()),
        ];
        v.extend(leaf.iter().map(|(m, n)| (*m, (*n).to_owned())));
        v
    }

    fn borrow<'a>(v: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
        v.iter().map(|(m, n)| (*m, n.as_str())).collect()
    }

    fn session() -> Session {
        let mut s = Session::new();
        let leaf =
            [(TORCH, "at::native::addmm_out(at::Tensor const&, at::Tensor const&, c10::Scalar const&)")];
        s.sample(&borrow(&python_stack(&leaf)), 30);
        let launch =
            [(TORCH, "at::native::gemm<float>(char, long)"), (RT, "rtLaunchKernel"), (RT, "rt_internal")];
        s.launch(&borrow(&python_stack(&launch)), "rtLaunchKernel", 20);
        s
    }

    #[test]
    fn the_user_view_folds_interpreter_and_module_plumbing_into_the_tooltip() {
        let (lines, frames) = session().fold(FoldedOptions::default(), View::All);
        let qwen = "Qwen3Attention.forward (transformers/models/qwen3/modeling_qwen3.py:307)";
        assert_eq!(
            lines,
            [
                format!("<module> (/w/train.py:40);{qwen};at::native::addmm_out 30"),
                format!("<module> (/w/train.py:40);{qwen};at::native::gemm<float>;rtLaunchKernel;[GPU_Kernel]gemm 20"),
            ]
        );
        let q = &frames[qwen];
        assert_eq!(q.class, FrameClass::Python);
        assert!(q.description.contains("5 interpreter frames folded"), "{q:?}");
        assert!(
            q.description.contains("site-packages/transformers/models/qwen3/modeling_qwen3.py:307"),
            "{q:?}"
        );
        let m = &frames["<module> (/w/train.py:40)"];
        assert!(
            m.description.starts_with("4 interpreter frames folded (__libc_start_main, _start, Py_RunMain"),
            "{m:?}"
        );
        assert!(frames["at::native::gemm<float>"].description.contains("(char, long)"));
        assert_eq!(frames["rtLaunchKernel"].class, FrameClass::Runtime);
        assert_eq!(frames["at::native::addmm_out"].class, FrameClass::Native);
        assert_eq!(frames["[GPU_Kernel]gemm"].class, FrameClass::Gpu);
    }

    /// Frames an agent puts innermost (an XLA operation, `[compile]`) stay below the launch API
    /// frame when the runtime's frames under it are cut.
    #[test]
    fn agent_frames_stay_below_the_launch_api() {
        let mut s = Session::new();
        let op = "[xla] jit(step)/dot_general (/w/train.py:30)";
        let launch = [
            (TORCH, "xla::gpu::Launch"),
            (RT, "rtLaunchKernel"),
            (RT, "rt_internal"),
            ("", "[compile]"),
            ("", op),
        ];
        s.launch(&borrow(&python_stack(&launch)), "rtLaunchKernel", 20);
        let (lines, frames) = s.fold(FoldedOptions::default(), View::Gpu);
        let qwen = "Qwen3Attention.forward (transformers/models/qwen3/modeling_qwen3.py:307)";
        assert_eq!(
            lines,
            [format!(
                "<module> (/w/train.py:40);{qwen};xla::gpu::Launch;rtLaunchKernel;[compile];[xla] jit(step)/dot_general (/w/train.py:30);[GPU_Kernel]gemm 20"
            )]
        );
        assert!(!lines[0].contains("rt_internal"));
        assert!(frames.contains_key("[compile]"));
        // A stack walked from the caller's side gets the API frame above the agent's frames.
        let mut s = Session::new();
        s.launch(&borrow(&python_stack(&[(TORCH, "xla::gpu::Launch"), ("", op)])), "rtLaunchKernel", 5);
        let (lines, _) = s.fold(FoldedOptions::default(), View::Gpu);
        assert!(
            lines[0].ends_with(&format!("xla::gpu::Launch;rtLaunchKernel;{op};[GPU_Kernel]gemm 5")),
            "{lines:?}"
        );
    }

    #[test]
    fn the_all_view_shows_every_frame() {
        let opts = FoldedOptions { frames: Frames::All, ..FoldedOptions::default() };
        let (lines, frames) = session().fold(opts, View::Cpu);
        assert_eq!(lines.len(), 1);
        for f in ["__libc_start_main;_start;Py_RunMain;", "Module._call_impl (/venv/", "(at::Tensor const&,"]
        {
            assert!(lines[0].contains(f), "{f} in {}", lines[0]);
        }
        assert_eq!(frames["_PyEval_EvalFrameDefault"].class, FrameClass::Interpreter);
        let call_impl = format!("Module._call_impl ({SITE}/torch/nn/modules/module.py:1750)");
        assert_eq!(frames[&call_impl].class, FrameClass::PythonPlumbing);
    }

    #[test]
    fn interpreter_runs_without_python_frames_keep_their_ends() {
        let mut s = Session::new();
        let run = [
            (PY, "_start"),
            (PY, "Py_BytesMain"),
            (LIBPY, "Py_FinalizeEx"),
            (LIBPY, "gc_collect_main"),
            (LIBPY, "code_dealloc"),
        ];
        s.sample(&run, 5);
        // A session without Python frames runs no Python code: its frames stay as they are.
        let (lines, frames) = s.fold(FoldedOptions::default(), View::Cpu);
        assert_eq!(lines, ["_start;Py_BytesMain;Py_FinalizeEx;gc_collect_main;code_dealloc 5"]);
        assert_eq!(frames["Py_FinalizeEx"].class, FrameClass::Native);
        s.sample(&[(PY, "_start"), ("", "<module> (/w/t.py:1)")], 1);
        let (lines, frames) = s.fold(FoldedOptions::default(), View::Cpu);
        assert_eq!(lines, ["<module> (/w/t.py:1) 1", "_start;code_dealloc 5"]);
        assert!(frames["code_dealloc"].description.starts_with("3 interpreter frames folded (Py_BytesMain,"));
    }

    #[test]
    fn runtime_modules_are_those_only_inside_launch_calls() {
        let mut s = session();
        s.sample(&[("/lib/libc.so.6", "clone3"), (RT, "rt_worker"), ("/lib/libc.so.6", "poll")], 5);
        let (_, frames) = s.fold(FoldedOptions::default(), View::Cpu);
        assert_eq!(frames["rt_worker"].class, FrameClass::Runtime);
        assert_eq!(frames["poll"].class, FrameClass::Native, "libc is on callers' side too");
    }

    #[test]
    fn walks_that_ended_early_go_under_one_partial_stack_root() {
        let mut s = Session::new();
        let lib = "/lib/libwork.so";
        s.sample(&[("/bin/app", "_start"), ("/bin/app", "main"), (lib, "work"), (lib, "inner")], 10);
        s.sample(&[(lib, "work"), (lib, "inner")], 3);
        s.sample(&[("/lib/libc.so.6", "clone3"), (lib, "thread_main")], 2);
        let (lines, frames) = s.fold(FoldedOptions::default(), View::Cpu);
        assert_eq!(
            lines,
            ["[partial stack];work;inner 3", "_start;main;work;inner 10", "clone3;thread_main 2"]
        );
        assert_eq!(frames[PARTIAL_TEXT].class, FrameClass::Marker);
        // A launch from a walk that ended early, in the GPU view, by what the CPU samples show.
        s.launch(&[(lib, "work"), (RT, "rtLaunchKernel")], "rtLaunchKernel", 4);
        let (lines, _) = s.fold(FoldedOptions::default(), View::Gpu);
        assert_eq!(lines, ["[partial stack];work;rtLaunchKernel;[GPU_Kernel]gemm 4"]);
    }

    const PARTIAL_TEXT: &str = super::super::builder::PARTIAL;

    #[test]
    fn xpuprofs_own_code_goes_under_one_xpuprof_frame() {
        const AGENT: &str = "/opt/xpuprof/lib/libxpuprof_cupti_agent.so";
        const CAPTURE: &str =
            "xpuprof_python::autograd::<impl xpuprof_python::own::Interpreter>::capture_backward_caller";
        let mut s = Session::new();
        let leaf =
            [(TORCH, "torch::autograd::Engine::evaluate_function"), (AGENT, CAPTURE), (AGENT, "read_chain")];
        let py = python_stack(&leaf);
        let mut stack = borrow(&py);
        stack.push(("/lib/libc.so.6", "process_vm_readv"));
        s.sample(&stack, 7);
        let (lines, frames) = s.fold(FoldedOptions::default(), View::Cpu);
        let qwen = "Qwen3Attention.forward (transformers/models/qwen3/modeling_qwen3.py:307)";
        assert_eq!(
            lines,
            [format!(
                "<module> (/w/train.py:40);{qwen};torch::autograd::Engine::evaluate_function;[xpuprof] 7"
            )]
        );
        let own = &frames["[xpuprof]"];
        assert_eq!(own.class, FrameClass::Own);
        assert!(
            own.description.starts_with("3 frames of xpuprof's agent folded (xpuprof_python::"),
            "{own:?}"
        );
        // Every frame in the "all" view, under the `[xpuprof]` frame.
        let opts = FoldedOptions { frames: Frames::All, ..FoldedOptions::default() };
        let (lines, frames) = s.fold(opts, View::Cpu);
        assert!(
            lines[0].ends_with(&format!(";[xpuprof];{CAPTURE};read_chain;process_vm_readv 7")),
            "{lines:?}"
        );
        assert_eq!(frames["read_chain"].class, FrameClass::Own);
        assert_eq!(frames["process_vm_readv"].class, FrameClass::Native);
    }

    #[test]
    fn threads_as_roots_when_asked() {
        let mut s = Session::new();
        let name = s.str("trainer");
        s.records.push(Record::Thread(ThreadDef::default().tid(7).name(name)));
        s.sample(&[("/bin/app", "main")], 4);
        let opts = FoldedOptions { thread_frame: true, ..FoldedOptions::default() };
        assert_eq!(s.fold(opts, View::Cpu).0, ["trainer (7);main 4"]);
    }
}
