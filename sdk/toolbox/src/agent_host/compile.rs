//! Compile-time work told by the functions on its stack: a launch whose stack holds a Python
//! function of a compiler's autotuning or benchmarking (each source names them in its
//! configuration, [`CompileFrames::parse`]) gets the [`COMPILE_MARKER`] frame as its innermost
//! frame, as agents that know it from the program's annotations put it themselves. The host's
//! outputs then tell compile-time work from steady state by that one frame.
//!
//! A pattern is `FILE_SUFFIX:FUNCTION`: the frame's file ends with `FILE_SUFFIX` (at a `/` or
//! the whole name) and its function is `FUNCTION`, or starts with what precedes a final `*`
//! (`torch/_inductor/runtime/benchmarking.py:*`, `triton/testing.py:do_bench*`).

pub use xpuprof_wire::names::COMPILE_MARKER;

use crate::python_frame::PyFrameName;

/// One `FILE_SUFFIX:FUNCTION` pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pattern {
    file: String,
    function: String,
    prefix: bool,
}

/// The patterns of compile-time functions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompileFrames {
    patterns: Vec<Pattern>,
}

impl CompileFrames {
    /// Reads `FILE_SUFFIX:FUNCTION` patterns; an error names the first bad one.
    pub fn parse<S: AsRef<str>>(patterns: &[S]) -> Result<Self, String> {
        let mut out = Vec::with_capacity(patterns.len());
        for p in patterns {
            let p = p.as_ref();
            let Some((file, function)) = p.rsplit_once(':').filter(|(f, n)| !f.is_empty() && !n.is_empty())
            else {
                return Err(format!(
                    "compile-time frame pattern `{p}` is not FILE_SUFFIX:FUNCTION (e.g. `triton/testing.py:do_bench*`)"
                ));
            };
            let (function, prefix) = match function.strip_suffix('*') {
                Some(f) => (f, true),
                None => (function, false),
            };
            out.push(Pattern { file: file.into(), function: function.into(), prefix });
        }
        Ok(Self { patterns: out })
    }

    /// True when there are no patterns.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// True when the Python frame text `name` (`function (file:line)`) is a compile-time
    /// function.
    pub fn matches(&self, name: &str) -> bool {
        if self.patterns.is_empty() {
            return false;
        }
        let Some(f) = PyFrameName::parse(name) else { return false };
        self.patterns.iter().any(|p| {
            let file_ok = f.file.ends_with(&p.file)
                && (f.file.len() == p.file.len() || f.file[..f.file.len() - p.file.len()].ends_with('/'));
            let fun_ok = match p.prefix {
                true => f.function.starts_with(&p.function),
                false => f.function == p.function,
            };
            file_ok && fun_ok
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_file_suffixes_and_functions() {
        let c = CompileFrames::parse(&[
            "triton/testing.py:do_bench*",
            "torch/_inductor/select_algorithm.py:autotune",
        ])
        .unwrap();
        assert!(c.matches("do_bench (/usr/lib/python3/site-packages/triton/testing.py:120)"));
        assert!(c.matches("do_bench_cudagraph (/x/triton/testing.py:9)"));
        assert!(!c.matches("bench (/x/triton/testing.py:9)"));
        assert!(c.matches("autotune (/x/torch/_inductor/select_algorithm.py:2000)"));
        assert!(!c.matches("autotune_x (/x/torch/_inductor/select_algorithm.py:2000)"));
        assert!(!c.matches("do_bench (/x/mytriton/testing.py:1)"), "the suffix starts at a /");
        assert!(!c.matches("[GPU_Kernel]do_bench"));
        assert!(CompileFrames::default().is_empty());
        assert!(!CompileFrames::default().matches("do_bench (/x/triton/testing.py:1)"));
    }

    #[test]
    fn bad_patterns_are_named() {
        let e = CompileFrames::parse(&["triton/testing.py"]).unwrap_err();
        assert!(e.contains("`triton/testing.py` is not FILE_SUFFIX:FUNCTION"), "{e}");
        assert!(CompileFrames::parse(&[":f"]).is_err());
    }
}
