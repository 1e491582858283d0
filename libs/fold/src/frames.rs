//! The rules of the user-level view, each from a fact in the records: which frames are Python
//! (named `function (file:line)` with no address), which native frames are the interpreter's
//! own (their module is `libpython…` or the `python…` executable), which Python frames are call
//! plumbing (their file is one of `fold_files`), and the shortened texts of C++ names and Python
//! file paths.

use std::borrow::Cow;

use xpuprof_sdk::model::FrameKind;
pub use xpuprof_toolbox::python_frame::short_path;
use xpuprof_toolbox::python_frame::PyFrameName;

use super::names::basename;

/// What a frame is, for its colour and for the user-level view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FrameClass {
    /// Interpreted Python code (`function (file.py:line)`).
    Python,
    /// Python code the user-level view folds away (a file of `fold_files`: `nn.Module` call
    /// plumbing, the frozen import machinery).
    PythonPlumbing,
    /// Native code of the interpreter itself (its library or executable).
    Interpreter,
    /// Native code.
    Native,
    /// A device runtime's or driver's library: the module of a launch API function, and of the
    /// frames a launch stack has inside that call.
    Runtime,
    /// Device work (`[GPU_Kernel]…`).
    Gpu,
    /// A frame xpuprof adds (`[off-cpu]`, `[partial stack]`, a process or thread root).
    Marker,
    /// xpuprof's own code in the target (its agents: [`xpuprof_toolbox::own_code`]), and the
    /// one `[xpuprof]` frame the outputs put above it: the profiler's cost, not the program's.
    Own,
}

impl FrameClass {
    /// True for frames the user-level view folds away.
    pub fn is_plumbing(self) -> bool {
        matches!(self, FrameClass::PythonPlumbing | FrameClass::Interpreter)
    }
}

/// True for a frame of interpreted code: no address (a synthetic frame) named `function (file:line)`.
pub fn is_python_frame(kind: FrameKind, name: &str) -> bool {
    kind == FrameKind::Synthetic && PyFrameName::parse(name).is_some()
}

/// True when the module at `path` is a Python interpreter: its shared library (`libpython3.12.so.1.0`)
/// or its executable (`python3.12`, `python3`, `python`, a debug build's `python3.12d`).
pub fn is_interpreter_module(path: &str) -> bool {
    let name = basename(path);
    if name.starts_with("libpython") {
        return true;
    }
    let Some(version) = name.strip_prefix("python") else { return false };
    let version = version.strip_suffix('d').unwrap_or(version);
    version.bytes().all(|b| b.is_ascii_digit() || b == b'.')
}

/// Marks the end of a name cut to its width.
const ELLIPSIS: char = '…';

/// A demangled C++ function name without its parameter list, qualifiers and return type, no
/// longer than `width` characters: template arguments are elided (`<…>`) first, then the name
/// is cut on the right, so the function's qualified name always leads. Names that are not
/// well-formed C++ (unbalanced brackets) are only cut on the right.
///
/// `void at::native::gemm<float>(at::Tensor const&, long) const` → `at::native::gemm<float>`.
pub fn cut_cpp_name(name: &str, width: usize) -> Cow<'_, str> {
    let mut s = strip_parameters(name);
    if s.chars().count() > width {
        if let Some(elided) = elide_templates(&s) {
            s = Cow::Owned(elided);
        }
    }
    if s.chars().count() > width {
        let mut cut: String = s.chars().take(width.saturating_sub(1)).collect();
        cut.push(ELLIPSIS);
        s = Cow::Owned(cut);
    }
    s
}

/// The bracket depth change of `c`, for `(`, `[`, `{`, `<` and their closers.
fn depth_step(c: u8) -> i32 {
    match c {
        b'(' | b'[' | b'{' | b'<' => 1,
        b')' | b']' | b'}' | b'>' => -1,
        _ => 0,
    }
}

/// `name` without the trailing parameter list (and the qualifiers and clone suffixes after it)
/// and without a leading return type.
fn strip_parameters(name: &str) -> Cow<'_, str> {
    let mut s = name.trim_end();
    // Qualifiers and suffixes after the parameter list.
    loop {
        let before = s;
        for q in [" const", " volatile", " &&", " &", " noexcept"] {
            s = s.strip_suffix(q).unwrap_or(s).trim_end();
        }
        if s.ends_with(']') {
            if let Some(at) = s.rfind(" [") {
                s = s[..at].trim_end();
            }
        }
        if s.len() == before.len() {
            break;
        }
    }
    if !s.ends_with(')') {
        return Cow::Borrowed(name);
    }
    // The '(' matching the final ')'.
    let bytes = s.as_bytes();
    let mut depth = 0i32;
    let mut open = None;
    for (i, &b) in bytes.iter().enumerate().rev() {
        if b == b')' {
            depth += 1;
        } else if b == b'(' {
            depth -= 1;
            if depth == 0 {
                open = Some(i);
                break;
            }
        }
    }
    let Some(open) = open else { return Cow::Borrowed(name) };
    let function = &s[..open];
    if function.is_empty() || function.ends_with("operator") {
        return Cow::Borrowed(name);
    }
    Cow::Borrowed(drop_return_type(function))
}

/// `function` without a return type: the text after its last space outside brackets.
fn drop_return_type(function: &str) -> &str {
    let mut depth = 0i32;
    let mut start = 0;
    for (i, b) in function.bytes().enumerate() {
        depth += depth_step(b);
        // `operator<`, `operator->` and the like unbalance the count: keep the whole text.
        if depth < 0 {
            return function;
        }
        if b == b' ' && depth == 0 && !function[..i].ends_with("operator") {
            start = i + 1;
        }
    }
    if depth == 0 && start < function.len() {
        &function[start..]
    } else {
        function
    }
}

/// `name` with the contents of its outermost template argument lists replaced by `…`, or `None`
/// when its angle brackets do not balance.
fn elide_templates(name: &str) -> Option<String> {
    let mut out = String::with_capacity(name.len());
    let mut depth = 0i32;
    for c in name.chars() {
        match c {
            '<' => {
                if depth == 0 {
                    out.push('<');
                    out.push(ELLIPSIS);
                }
                depth += 1;
            }
            '>' => {
                depth -= 1;
                if depth < 0 {
                    return None;
                }
                if depth == 0 {
                    out.push('>');
                }
            }
            c if depth == 0 => out.push(c),
            _ => {}
        }
    }
    (depth == 0).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use xpuprof_toolbox::python_frame::short_frame;

    #[test]
    fn python_frames_are_synthetic_and_named_with_a_place() {
        assert!(is_python_frame(FrameKind::Synthetic, "forward (/w/model.py:12)"));
        assert!(is_python_frame(FrameKind::Synthetic, "<module> (<frozen importlib._bootstrap>:1360)"));
        assert!(!is_python_frame(FrameKind::FileOffset, "forward (/w/model.py:12)"), "native");
        assert!(!is_python_frame(FrameKind::Synthetic, "operator() (x)"));
        assert!(!is_python_frame(FrameKind::Synthetic, "f (file.py:)"));
    }

    #[test]
    fn interpreter_modules_are_libpython_and_the_python_executable() {
        for path in
            ["/usr/lib/x86_64-linux-gnu/libpython3.12.so.1.0", "/usr/bin/python3.12", "/opt/py/bin/python3"]
        {
            assert!(is_interpreter_module(path), "{path}");
        }
        assert!(is_interpreter_module("/usr/local/bin/python3.13d"));
        for path in ["/usr/lib/libtorch_python.so", "/usr/bin/python-config", "/lib/libc.so.6", "/w/pythonic"]
        {
            assert!(!is_interpreter_module(path), "{path}");
        }
    }

    #[test]
    fn paths_are_shortened_to_the_package() {
        let qwen = "/venv/lib/python3.12/site-packages/transformers/models/qwen3/modeling_qwen3.py";
        assert_eq!(short_path(qwen), "transformers/models/qwen3/modeling_qwen3.py");
        assert_eq!(short_path("/usr/lib/python3/dist-packages/numpy/core.py"), "numpy/core.py");
        assert_eq!(short_path("/usr/lib/python3.12/threading.py"), "threading.py");
        assert_eq!(short_path("/home/u/lib/pythonic/train.py"), "/home/u/lib/pythonic/train.py");
        assert_eq!(short_path("/home/u/train.py"), "/home/u/train.py");
        assert_eq!(
            short_frame(&format!("Qwen3Attention.forward ({qwen}:307)")),
            "Qwen3Attention.forward (transformers/models/qwen3/modeling_qwen3.py:307)"
        );
        assert!(matches!(short_frame("main (/w/t.py:3)"), Cow::Borrowed(_)));
    }

    #[test]
    fn cpp_names_lose_parameters_and_return_type_and_are_cut_on_the_right() {
        let cut = |n| cut_cpp_name(n, 60).into_owned();
        assert_eq!(
            cut("void at::native::gemm<float>(at::Tensor const&, long) const"),
            "at::native::gemm<float>"
        );
        assert_eq!(
            cut("c10::impl::wrap_kernel(c10::OperatorKernel*, c10::DispatchKeySet)"),
            "c10::impl::wrap_kernel"
        );
        assert_eq!(cut("ns::{lambda(int)#1}::operator()(int) const"), "ns::{lambda(int)#1}::operator()");
        assert_eq!(cut("(anonymous namespace)::run(int) [clone .cold]"), "(anonymous namespace)::run");
        assert_eq!(cut("main"), "main");
        assert_eq!(cut("libtorch.so+0x1a2b"), "libtorch.so+0x1a2b");
        // Too long with its template arguments: they are elided, the function name stays.
        let long = format!(
            "std::_Function_handler<void ({}), Lambda>::_M_invoke(std::_Any_data const&)",
            "x, ".repeat(40)
        );
        assert_eq!(cut(&long), "std::_Function_handler<…>::_M_invoke");
        // Still too long: cut on the right, the start (namespace and function) kept.
        let names = format!("a::{}::f(int)", "b".repeat(100));
        let c = cut(&names);
        assert!(c.starts_with("a::bbbb") && c.ends_with('…') && c.chars().count() == 60, "{c}");
    }
}
