//! Layout tests of `-sys` crates: the sizes, field offsets and constants of the bindings are
//! pinned in the test, and measured again by a C++ compiler from the vendor's own headers where
//! they are installed (the ROCm headers of the triton wheel), so a wrong declaration fails both
//! ways. Each `-sys` crate lists its facts; compiling, running and comparing is here.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `(C type, C member path, our value, pinned value)`; member `""` means `sizeof`.
pub type Fact = (&'static str, &'static str, usize, usize);

/// Facts of bindgen types: `offset_facts! { T { size N, field = OFF, a.b = OFF } ... }` gives
/// `Vec<Fact>` with our `size_of`/`offset_of` beside each pinned number.
#[macro_export]
macro_rules! offset_facts {
    ($( $t:ident { size $size:expr $(, $f:ident $(. $g:ident)* = $off:expr)* $(,)? } )*) => {
        vec![$(
            (stringify!($t), "", ::std::mem::size_of::<$t>(), $size),
            $( (
                stringify!($t),
                concat!(stringify!($f) $(, ".", stringify!($g))*),
                ::std::mem::offset_of!($t, $f $(. $g)*),
                $off,
            ), )*
        )*]
    };
}

/// The facts whose value in our bindings is not the pinned one, said as `T.f: bindings N,
/// pinned M`.
pub fn pinned_mismatches(facts: &[Fact]) -> Vec<String> {
    facts
        .iter()
        .filter(|(_, _, ours, pinned)| ours != pinned)
        .map(|(t, f, ours, pinned)| format!("{t}.{f}: bindings {ours}, pinned {pinned}"))
        .collect()
}

/// One value the C++ compiler measures: what it is, its C expression, and ours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// How a disagreement names it.
    pub what: String,
    /// The C expression (an integer).
    pub expr: String,
    /// Our value.
    pub ours: i64,
}

impl Check {
    /// `sizeof(T)` or `offsetof(T, f)` of a fact, against our bindings' value.
    pub fn fact(f: &Fact) -> Self {
        let (t, m, ours, _) = *f;
        let expr = if m.is_empty() { format!("sizeof({t})") } else { format!("offsetof({t}, {m})") };
        Self { what: format!("{t}.{m}"), expr, ours: ours as i64 }
    }

    /// A constant named `name` in the headers, against our value.
    pub fn value(name: &str, ours: i64) -> Self {
        Self { what: name.to_owned(), expr: name.to_owned(), ours }
    }
}

/// The pinned triton wheel whose ROCm headers the layout tests compile against
/// (`TRITON_PY` in `scripts/install-deps.sh`).
const TRITON: &str = "triton-3.9.0";

/// The ROCm include folder of the pinned triton wheel (its `triton/backends/amd/include`, which
/// `scripts/install-deps.sh` extracts into `.deps/triton-3.9.0-amd-include` without the rest of
/// the 1 GB wheel) when it holds `marker` (`"roctracer/roctracer.h"`). Missing: the test fails in
/// CI and is a visible skip elsewhere ([`crate::skip::missing`]); the caller then returns.
pub fn triton_amd_include(marker: &str) -> Option<PathBuf> {
    let inc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.deps").join(format!("{TRITON}-amd-include"));
    if inc.join(marker).is_file() {
        return Some(inc);
    }
    crate::skip::missing(&format!(
        "{TRITON}'s {marker} is not in {} (scripts/install-deps.sh extracts the wheel's ROCm headers there)",
        inc.display()
    ));
    None
}

/// Compiles a C++ program that includes `headers` (found under `includes`, HIP on the AMD
/// platform) and prints every check's expression; returns each check the headers disagree with,
/// said as `what: ours N, the headers M`.
pub fn disagreements(includes: &[PathBuf], headers: &[&str], checks: &[Check]) -> Vec<String> {
    let mut c = String::from("#include <stdio.h>\n#include <stddef.h>\n");
    for h in headers {
        c.push_str(&format!("#include <{h}>\n"));
    }
    c.push_str("int main(void) {\n");
    for k in checks {
        c.push_str(&format!("  printf(\"%lld\\n\", (long long)({}));\n", k.expr));
    }
    c.push_str("  return 0;\n}\n");
    let dir = tempfile_dir();
    std::fs::write(dir.join("facts.cpp"), c).unwrap();
    let mut cmd = Command::new("c++");
    cmd.args(["-x", "c++", "-D__HIP_PLATFORM_AMD__", "-w"]);
    for i in includes {
        cmd.arg("-I").arg(i);
    }
    let o = cmd
        .arg(dir.join("facts.cpp"))
        .arg("-o")
        .arg(dir.join("facts"))
        .output()
        .expect("run c++: install a C++ compiler (scripts/install-deps.sh)");
    assert!(o.status.success(), "compiling against {includes:?}: {}", String::from_utf8_lossy(&o.stderr));
    let out = Command::new(dir.join("facts")).output().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), checks.len(), "the program printed one line per check");
    checks
        .iter()
        .zip(text.lines())
        .filter_map(|(k, line)| {
            let theirs = line.trim().parse::<i64>().ok();
            (theirs != Some(k.ours)).then(|| format!("{}: ours {}, the headers {line}", k.what, k.ours))
        })
        .collect()
}

/// A fresh scratch folder of this process.
fn tempfile_dir() -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "xpuprof-struct-offsets-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(C)]
    struct Pair {
        a: u32,
        b: u64,
    }

    #[test]
    fn facts_measure_our_types_and_name_what_moved() {
        let facts: Vec<Fact> = offset_facts! { Pair { size 16, a = 0, b = 4 } };
        assert_eq!(facts[0], ("Pair", "", 16, 16));
        assert_eq!(pinned_mismatches(&facts), ["Pair.b: bindings 8, pinned 4"]);
        assert_eq!(Check::fact(&facts[2]).expr, "offsetof(Pair, b)");
        assert_eq!(Check::fact(&facts[0]).expr, "sizeof(Pair)");
    }

    #[test]
    fn the_compiler_measures_each_check() {
        let dir = tempfile_dir();
        std::fs::write(
            dir.join("pair.h"),
            "#include <stdint.h>\nstruct Pair { uint32_t a; uint64_t b; };\nenum { SEVEN = 7 };\n",
        )
        .unwrap();
        let checks =
            [Check::fact(&("struct Pair", "b", 8, 8)), Check::value("SEVEN", 7), Check::value("SEVEN", 8)];
        let wrong = disagreements(std::slice::from_ref(&dir), &["pair.h"], &checks);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(wrong, ["SEVEN: ours 8, the headers 7"]);
    }
}
