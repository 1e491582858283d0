//! Python frames as the sources name them (`function (file:line)`, the function being CPython's
//! `co_qualname` from 3.11 on, e.g. `Qwen3Attention.forward`), and what the summary reads from
//! them: whether a frame is the user's code, which `nn.Module` class a `forward` belongs to, and
//! whether a launch ran for PyTorch's autograd (backward).
//!
//! **User code** is a Python file outside the interpreter's installation and its packages:
//! not under a `lib/pythonX.Y/` folder (the standard library, and a virtual environment's
//! packages, which live below it), not under a `site-packages` or `dist-packages` folder, and
//! not a pseudo-file such as `<frozen importlib._bootstrap>` or `<string>`. Two settings change
//! it: a file whose path contains one of `python_user_paths` is always user code (a package of
//! your own installed into `site-packages`), and one containing one of `python_library_paths`
//! never is (a vendored framework inside your project).

use xpuprof_python::autograd;
pub use xpuprof_python::autograd::AUTOGRAD_MARKER;
use xpuprof_toolbox::python_frame::{installed_part, short_path, PyFrameName};

/// A Python frame's parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PyFrame<'a> {
    /// Qualified function name (`Qwen3Attention.forward`; `forward` before Python 3.11).
    pub function: &'a str,
    /// The file as the interpreter knows it.
    pub file: &'a str,
    /// Line.
    pub line: u32,
}

impl<'a> PyFrame<'a> {
    /// Reads a frame name `function (file:line)` with a function; `None` for anything else.
    pub fn parse(name: &'a str) -> Option<Self> {
        let PyFrameName { function, file, line } = PyFrameName::parse(name)?;
        if function.is_empty() {
            return None;
        }
        Some(Self { function, file, line: line.parse().ok()? })
    }

    /// The `nn.Module` class whose `forward` this frame runs: the qualified name's part before
    /// `.forward` (`Qwen3Attention.forward` → `Qwen3Attention`, `build.<locals>.Block.forward` →
    /// `Block`). `Some("")` for a `forward` whose class the interpreter does not name (Python
    /// before 3.11 has no qualified names), `None` for any other function.
    pub fn module_class(&self) -> Option<&'a str> {
        if self.function == "forward" {
            return Some("");
        }
        let class = self.function.strip_suffix(".forward")?;
        let class = class.rsplit('.').next().unwrap_or(class);
        (class != "<locals>" && !class.is_empty()).then_some(class)
    }

    /// True for the calls through which Python enters PyTorch's autograd engine.
    pub fn is_backward_entry(&self) -> bool {
        autograd::is_backward_entry(self.function.rsplit('.').next().unwrap_or(self.function), self.file)
    }
}

/// True when a thread of this name is one of PyTorch's autograd engine threads.
pub fn is_engine_thread(name: &str) -> bool {
    autograd::is_engine_thread(name.as_bytes())
}

/// Which Python files are the user's (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserCode {
    /// Path parts that make a file user code whatever else holds.
    pub user_paths: Vec<String>,
    /// Path parts that make a file library code.
    pub library_paths: Vec<String>,
}

impl UserCode {
    /// True when `file` is user code.
    pub fn is_user(&self, file: &str) -> bool {
        if self.user_paths.iter().any(|p| !p.is_empty() && file.contains(p.as_str())) {
            return true;
        }
        if self.library_paths.iter().any(|p| !p.is_empty() && file.contains(p.as_str())) {
            return false;
        }
        !(file.starts_with('<') || installed_part(file).is_some())
    }
}

/// A Python frame as tables show it: `function (short file:line)`.
pub fn label(f: &PyFrame<'_>) -> String {
    format!("{} ({}:{})", f.function, short_path(f.file), f.line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_read_from_their_names() {
        let f = PyFrame::parse(
            "Qwen3Attention.forward (/x/site-packages/transformers/models/qwen3/modeling_qwen3.py:307)",
        )
        .unwrap();
        assert_eq!((f.function, f.line), ("Qwen3Attention.forward", 307));
        assert_eq!(f.module_class(), Some("Qwen3Attention"));
        assert_eq!(label(&f), "Qwen3Attention.forward (transformers/models/qwen3/modeling_qwen3.py:307)");
        assert_eq!(PyFrame::parse("<module> (<frozen runpy>:88)").unwrap().function, "<module>");
        for not_python in ["main", "operator() (x)", "f (file.py:)", "at::native::launch<float>(int)"] {
            assert_eq!(PyFrame::parse(not_python), None, "{not_python}");
        }
    }

    #[test]
    fn module_classes_come_from_qualified_names() {
        let class = |function| PyFrame { function, file: "m.py", line: 1 }.module_class();
        assert_eq!(class("build.<locals>.Block.forward"), Some("Block"));
        assert_eq!(class("forward"), Some(""));
        assert_eq!(class("outer.<locals>.forward"), None);
        assert_eq!(class("Linear._call_impl"), None);
        assert_eq!(class("Trainer.forwarding"), None);
    }

    #[test]
    fn user_code_is_outside_the_installation() {
        let u = UserCode::default();
        assert!(u.is_user("/home/me/proj/model.py"));
        assert!(u.is_user("train.py"));
        assert!(!u.is_user("/usr/lib/python3.12/threading.py"));
        assert!(!u.is_user("/opt/conda/lib/python3.11/site-packages/torch/nn/modules/module.py"));
        assert!(!u.is_user("/usr/lib/python3/dist-packages/numpy/core.py"));
        assert!(!u.is_user("/home/me/.venv/lib64/python3.12/site-packages/x.py"));
        assert!(!u.is_user("<frozen importlib._bootstrap>"));
        assert!(u.is_user("/home/me/python3.12/model.py"));
        let custom = UserCode {
            user_paths: vec!["site-packages/mypkg/".into()],
            library_paths: vec!["/vendor/".into()],
        };
        assert!(custom.is_user("/v/lib/python3.12/site-packages/mypkg/net.py"));
        assert!(!custom.is_user("/home/me/proj/vendor/lib.py"));
        assert_eq!(short_path("/usr/lib/python3.12/threading.py"), "threading.py");
    }

    #[test]
    fn backward_entries_and_engine_threads() {
        let f = PyFrame { function: "_engine_run_backward", file: "/x/torch/autograd/graph.py", line: 1 };
        assert!(f.is_backward_entry());
        assert!(is_engine_thread("pt_autograd_0"));
        assert!(!is_engine_thread("python3"));
    }
}
