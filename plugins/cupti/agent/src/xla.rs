//! The annotations XLA's GPU runtime and compiler push as NVTX ranges (domain `TSL`), read
//! into what the agent shows.
//!
//! XLA creates its NVTX domain (`TSL`) when an NVTX injection is loaded, which the host does
//! whenever NVTX is recorded (`NVTX_INJECTION64_PATH`); its ranges then carry:
//!
//! - `XlaModule:#prefix=jit(step),hlo_module=jit_step,program_id=3#` around each run of a
//!   compiled module (a registered string; older versions have no `prefix`);
//! - `Thunk:#name=layer1/dot_general,hlo_op=fusion.2,unique_hlo_op_id=7#` around each
//!   operation's launches, and around the recording of its command-buffer (CUDA graph) nodes;
//!   `name` is the operation's JAX name after the module's prefix, `hlo_op` the HLO instruction.
//!   Its payload (an NVTX extended payload) holds registered-string handles, one of them the
//!   operation's source locations (`- /path/train.py:30 dot_general`, one line per location;
//!   JAX 0.11.2's payload is `{hlo_dump, src_locations, called_hlo_dump}`);
//! - `XlaCompile:#module=…#`, `XlaPass:#name=…#`, `XlaCompileBackend:#…#`,
//!   `XlaAutotunerMeasurement:#…#` and other compiler phases around compilation: compile-time
//!   work, whatever it launches.

/// XLA's NVTX domain (TSL's `nvtxDomainCreateA` name); no other domain's ranges are read.
pub const DOMAIN: &str = "TSL";

/// What a range's text says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A compiled module runs: the prefix its operations' names are under, when the range
    /// gives one (`prefix=`; without it the operations' names are whole).
    Module(Option<String>),
    /// An operation: its name (without the module's prefix) and, when known, its HLO name.
    Op {
        /// The framework's name of the operation (`layer1/dot_general`), or the HLO name.
        name: String,
    },
    /// Compiler work.
    Compile,
    /// Any other range.
    Other,
}

/// Range texts of compiler phases (prefixes).
const COMPILE_PREFIXES: [&str; 11] = [
    "XlaCompile",
    "XlaAutotun",
    "XlaPass",
    "XlaOptimizeHlo",
    "XlaCreateGpuExecutable",
    "XlaBufferAssignment",
    "XlaMemoryScheduler",
    "XlaDumpLlvmIr",
    "XlaEmit",
    "XlaRunBackend",
    "XlaLlvm",
];

/// The value of `key` in the `#k=v,k=v#` part of an annotation text.
fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let body = text.split_once(":#")?.1;
    let body = body.strip_suffix('#').unwrap_or(body);
    body.split(',').find_map(|kv| kv.strip_prefix(key)?.strip_prefix('=')).filter(|v| !v.is_empty())
}

/// Reads a range's text.
pub fn classify(text: &str) -> Kind {
    if text.starts_with("Thunk:#") {
        match field(text, "name").or_else(|| field(text, "hlo_op")) {
            Some(name) => Kind::Op { name: name.to_owned() },
            None => Kind::Other,
        }
    } else if text.starts_with("XlaModule:#") {
        Kind::Module(field(text, "prefix").map(str::to_owned))
    } else if COMPILE_PREFIXES.iter().any(|p| text.starts_with(p)) {
        Kind::Compile
    } else {
        Kind::Other
    }
}

/// The source place of an operation from its locations text (`- /path/f.py:30:4[fn] op`, one
/// location per line, the frames of a location's call stack below it with one more dash each):
/// the innermost frame of the first location, `(file, line)`.
pub fn first_location(text: &str) -> Option<(&str, u32)> {
    let mut found = None;
    for l in text.lines() {
        let dashes = l.len() - l.trim_start_matches('-').len();
        if dashes == 0 {
            continue;
        }
        if dashes == 1 && found.is_some() {
            break;
        }
        if let Some(p) = place(l[dashes..].trim_start()) {
            found = Some(p);
        }
    }
    found
}

/// `file:line[:column]` at the start of `l`, up to a space or `[`.
fn place(l: &str) -> Option<(&str, u32)> {
    let place = l.split([' ', '[']).next()?;
    let (rest, last) = place.rsplit_once(':')?;
    let last: u32 = last.parse().ok()?;
    // `file:line:column` or `file:line`.
    let (file, line) = match rest.rsplit_once(':') {
        Some((file, line)) => match line.parse::<u32>() {
            Ok(line) => (file, line),
            Err(_) => (rest, last),
        },
        None => (rest, last),
    };
    (!file.is_empty()).then_some((file, line))
}

/// The frame text of operation `name` of module `prefix`, at `source` when known:
/// `[xla] jit(step)/layer1/dot_general (/path/train.py:30)`.
pub fn op_label(prefix: Option<&str>, name: &str, source: Option<(&str, u32)>) -> String {
    let mut s = String::with_capacity(64);
    s.push_str("[xla] ");
    if let Some(p) = prefix.filter(|p| !name.starts_with(*p)) {
        s.push_str(p);
        s.push('/');
    }
    s.push_str(name);
    if let Some((file, line)) = source {
        s.push_str(&format!(" ({file}:{line})"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xla_texts() {
        assert_eq!(
            classify("XlaModule:#prefix=jit(train_step),hlo_module=jit_train_step,program_id=3#"),
            Kind::Module(Some("jit(train_step)".into()))
        );
        assert_eq!(classify("XlaModule:#hlo_module=jit_f,program_id=1#"), Kind::Module(None));
        assert_eq!(
            classify("Thunk:#name=layer1/dot_general,hlo_op=custom-call.2,unique_hlo_op_id=45#"),
            Kind::Op { name: "layer1/dot_general".into() }
        );
        assert_eq!(classify("Thunk:#hlo_op=fusion.3#"), Kind::Op { name: "fusion.3".into() });
        assert_eq!(classify("Thunk:##"), Kind::Other);
        for c in [
            "XlaCompile:#module=jit_f,program_id=1#",
            "XlaCompileBackend:#module=jit_f,program_id=1#",
            "XlaAutotunerMeasurement:#hlo_op=fusion.1#",
            "XlaPass:#name=triton-autotuner,module=jit_f#",
        ] {
            assert_eq!(classify(c), Kind::Compile, "{c}");
        }
        assert_eq!(classify("my range"), Kind::Other);
    }

    #[test]
    fn source_locations() {
        assert_eq!(first_location("\n- /w/train.py:30 dot_general\n"), Some(("/w/train.py", 30)));
        assert_eq!(first_location("\n- /w/train.py:30:12[dense] dot_general\n"), Some(("/w/train.py", 30)));
        assert_eq!(
            first_location("\n- /w/train.py:80[main]\n-- /w/train.py:31[dense] add\n- /w/t.py:9 mul\n"),
            Some(("/w/train.py", 31)),
            "the innermost frame of the first location"
        );
        assert_eq!(first_location("\n"), None);
        assert_eq!(first_location("- nothing here"), None);
    }

    #[test]
    fn labels() {
        assert_eq!(
            op_label(Some("jit(step)"), "layer1/dot_general", Some(("/w/train.py", 30))),
            "[xla] jit(step)/layer1/dot_general (/w/train.py:30)"
        );
        assert_eq!(op_label(None, "fusion.3", None), "[xla] fusion.3");
        assert_eq!(op_label(Some("jit(step)"), "jit(step)/add", None), "[xla] jit(step)/add");
    }
}
