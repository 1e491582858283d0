//! Python frames as sources name them, `function (file:line)`, read back by the sinks: the
//! name's parts, and the file as tables and flame graphs show it (from its package on).
//!
//! A file is **installed** when it lies below a `site-packages` or `dist-packages` folder, or
//! below the interpreter's library folder `lib/pythonX.Y/` (or `lib64/pythonX.Y/`, as Fedora
//! and RHEL place the standard library): its short form is the part after that folder.

use std::borrow::Cow;

/// The parts of a Python frame's name `function (file:line)`, as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PyFrameName<'a> {
    /// The function (CPython's `co_qualname` from 3.11 on, e.g. `Qwen3Attention.forward`); may
    /// be empty.
    pub function: &'a str,
    /// The file as the interpreter knows it (never empty).
    pub file: &'a str,
    /// The line, one or more ASCII digits.
    pub line: &'a str,
}

impl<'a> PyFrameName<'a> {
    /// Reads a frame name `function (file:line)`; `None` for anything else. The function ends
    /// at the first ` (`: a qualified name never holds one (identifiers, dots, `<locals>`,
    /// `<lambda>`, `<genexpr>`), a path may (`/home/me/My Project (copy)/x.py`). The line starts
    /// after the last `:`.
    pub fn parse(name: &'a str) -> Option<Self> {
        let inner = name.strip_suffix(')')?;
        let (function, place) = inner.split_once(" (")?;
        let (file, line) = place.rsplit_once(':')?;
        let digits = !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit());
        (digits && !file.is_empty()).then_some(Self { function, file, line })
    }
}

/// The part of `file` after the folder that marks it installed (`site-packages/`,
/// `dist-packages/`, `lib/pythonX.Y/`, `lib64/pythonX.Y/`), if any.
pub fn installed_part(file: &str) -> Option<&str> {
    for marker in ["/site-packages/", "/dist-packages/"] {
        if let Some(i) = file.rfind(marker) {
            return Some(&file[i + marker.len()..]);
        }
    }
    let mut at = 0;
    while let Some(i) = file[at..].find("/python") {
        let start = at + i;
        let rest = &file[start + "/python".len()..];
        let version = rest.split('/').next().unwrap_or("");
        let lib = file[..start].ends_with("/lib") || file[..start].ends_with("/lib64");
        if lib && !version.is_empty() && version.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            return rest.split_once('/').map(|(_, tail)| tail);
        }
        at = start + 1;
    }
    None
}

/// `file` as people name it: an installed file from its package on
/// (`transformers/models/qwen3/modeling_qwen3.py`, `threading.py`), any other file as it is.
pub fn short_path(file: &str) -> &str {
    installed_part(file).unwrap_or(file)
}

/// A Python frame's name with its file shortened by [`short_path`]; any other name as it is.
pub fn short_frame(name: &str) -> Cow<'_, str> {
    match PyFrameName::parse(name) {
        Some(PyFrameName { function, file, line }) if short_path(file).len() != file.len() => {
            Cow::Owned(format!("{function} ({}:{line})", short_path(file)))
        }
        _ => Cow::Borrowed(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_read_into_their_parts() {
        let f = PyFrameName::parse("Block.forward (/w/model.py:307)").unwrap();
        assert_eq!((f.function, f.file, f.line), ("Block.forward", "/w/model.py", "307"));
        assert_eq!(PyFrameName::parse("<module> (<frozen runpy>:88)").unwrap().file, "<frozen runpy>");
        let f = PyFrameName::parse("Module._call_impl (/venv/torch/nn/modules/module.py:1750)").unwrap();
        assert_eq!(
            (f.function, f.file, f.line),
            ("Module._call_impl", "/venv/torch/nn/modules/module.py", "1750")
        );
        let f = PyFrameName::parse("<module> (<frozen importlib._bootstrap>:1360)").unwrap();
        assert_eq!((f.function, f.file, f.line), ("<module>", "<frozen importlib._bootstrap>", "1360"));
        let f = PyFrameName::parse("run.<locals>.<lambda> (/home/me/My Project (copy)/x.py:3)").unwrap();
        assert_eq!(
            (f.function, f.file, f.line),
            ("run.<locals>.<lambda>", "/home/me/My Project (copy)/x.py", "3")
        );
        for not_python in [
            "main",
            "operator() (x)",
            "f (file.py:)",
            "f (:3)",
            "at::native::launch<float>(int)",
            "add_kernel(float*, float*, int)",
            "libc.so.6+0x1234",
        ] {
            assert_eq!(PyFrameName::parse(not_python), None, "{not_python}");
        }
    }

    #[test]
    fn installed_files_are_shortened_to_their_package() {
        let qwen = "/venv/lib/python3.12/site-packages/transformers/models/qwen3/modeling_qwen3.py";
        assert_eq!(short_path(qwen), "transformers/models/qwen3/modeling_qwen3.py");
        assert_eq!(short_path("/usr/lib/python3/dist-packages/numpy/core.py"), "numpy/core.py");
        assert_eq!(short_path("/usr/lib/python3.12/threading.py"), "threading.py");
        assert_eq!(short_path("/usr/lib64/python3.12/threading.py"), "threading.py");
        assert_eq!(short_path("/home/u/lib/pythonic/train.py"), "/home/u/lib/pythonic/train.py");
        assert_eq!(short_path("/home/me/python3.12/model.py"), "/home/me/python3.12/model.py");
        assert_eq!(installed_part("<frozen importlib._bootstrap>"), None);
        assert_eq!(
            short_frame(&format!("Qwen3Attention.forward ({qwen}:307)")),
            "Qwen3Attention.forward (transformers/models/qwen3/modeling_qwen3.py:307)"
        );
        assert!(matches!(short_frame("forward (/w/model.py:12)"), Cow::Borrowed(_)));
    }
}
