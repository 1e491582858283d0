//! Symbolization of normalised frames with blazesym: symbol names, inlined functions and the
//! source file and line of the address where the module has debug information (DWARF line
//! tables), from the module file (so processes that already exited still symbolise); PLT stubs
//! named after their target (`puts@plt`, [`PltStubs`]).
//!
//! Names come back raw (mangled): the host gives every string its display text once, with the
//! one demangler of the toolbox (`xpuprof_toolbox::demangle`), under the session's `demangle`
//! switch. blazesym's own demangling is off: it hands names without a `_Z` prefix to
//! `cpp_demangle`, which reads C functions `f`, `g`, `h` as the types `float`, `__float128`,
//! `unsigned char`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use blazesym::symbolize::source::{Elf, Kernel, Process, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer as Blaze};

use super::plt::PltStubs;

/// A resolved location: the function and, outermost first, the functions inlined into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The function containing the address.
    pub name: String,
    /// Inlined callees at the address, outermost first.
    pub inlined: Vec<String>,
    /// Source file of the code at the address (in the innermost function), when the module's
    /// debug information says and code information is on.
    pub file: Option<String>,
    /// Line of the code at the address, 0 when not known.
    pub line: u32,
}

/// Wraps a blazesym symbolizer with the settings xpuprof uses.
pub struct Symbolizer {
    inner: Blaze,
    /// PLT stubs of each module file met so far.
    plt: HashMap<PathBuf, PltStubs>,
    /// Addresses that could not be resolved.
    pub failures: u64,
}

impl std::fmt::Debug for Symbolizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Symbolizer").field("failures", &self.failures).finish()
    }
}

impl Default for Symbolizer {
    /// A symbolizer that reads source places ([`Symbolizer::new`] with `code_info`).
    fn default() -> Self {
        Self::new(true)
    }
}

impl Symbolizer {
    /// A symbolizer; `code_info` reads the source file and line of each address from the
    /// module's DWARF line tables where it has them (`benches/symbolize.rs` measures its cost).
    pub fn new(code_info: bool) -> Self {
        let inner = Blaze::builder()
            .enable_demangling(false)
            .enable_inlined_fns(true)
            .enable_code_info(code_info)
            .build();
        Self { inner, plt: HashMap::new(), failures: 0 }
    }

    /// Resolves a file offset inside the ELF file at `path`.
    pub fn file_offset(&mut self, path: &Path, offset: u64) -> Option<Resolved> {
        let stubs = self.plt.entry(path.to_owned()).or_insert_with(|| PltStubs::read(path));
        if let Some(name) = stubs.name(offset) {
            return Some(Resolved { name: name.to_owned(), inlined: Vec::new(), file: None, line: 0 });
        }
        let mut elf = Elf::new(path);
        elf.debug_syms = true;
        self.resolve(&Source::Elf(elf), Input::FileOffset(offset))
    }

    /// Resolves a kernel address through `/proc/kallsyms`.
    pub fn kernel(&mut self, addr: u64) -> Option<Resolved> {
        let src = Source::Kernel(Kernel { vmlinux: blazesym::MaybeDefault::None, ..Kernel::default() });
        self.resolve(&src, Input::AbsAddr(addr))
    }

    /// Resolves an address of JIT code in process `pid` through the `/tmp/perf-PID.map` file the
    /// JIT writes (the perf JIT interface: `START SIZE name` lines); needs the process alive.
    pub fn jit(&mut self, pid: u32, addr: u64) -> Option<Resolved> {
        if !std::path::Path::new(&format!("/tmp/perf-{pid}.map")).exists() {
            return None;
        }
        let mut p = Process::new(pid.into());
        (p.debug_syms, p.map_files, p.vdso) = (false, false, false);
        self.resolve(&Source::Process(p), Input::AbsAddr(addr))
    }

    fn resolve(&mut self, src: &Source<'_>, input: Input<u64>) -> Option<Resolved> {
        match self.inner.symbolize_single(src, input) {
            Ok(Symbolized::Sym(sym)) => {
                // The innermost function's place: the last inlined one's, else the symbol's own
                // (blazesym gives each inlined function the place inside it, and the symbol the
                // place of its call into the first).
                let place = match sym.inlined.last() {
                    Some(f) => f.code_info.as_ref(),
                    None => sym.code_info.as_deref(),
                };
                let (file, line) = match place {
                    Some(c) => (Some(c.to_path().to_string_lossy().into_owned()), c.line.unwrap_or(0)),
                    None => (None, 0),
                };
                Some(Resolved {
                    name: sym.name.to_string(),
                    inlined: sym.inlined.iter().map(|f| f.name.to_string()).collect(),
                    file,
                    line,
                })
            }
            _ => {
                self.failures += 1;
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use object::{Object, ObjectSection, ObjectSymbol};
    use xpuprof_toolbox::demangle::display;

    use super::*;

    /// C functions with one-letter names (which `cpp_demangle` alone reads as types), a C++ name
    /// given by an asm label, and calls into libc through the PLT.
    const PROGRAM: &str = r#"
        #include <stdio.h>
        #include <unistd.h>
        __attribute__((noinline)) int f(int x) { return x * 3 + getpid(); }
        __attribute__((noinline)) int g(int x) { return f(x) ^ 5; }
        __attribute__((noinline)) int h(int x) { return g(x) + 1; }
        __attribute__((noinline)) int cxx(int x) __asm__("_Z3cxxi");
        int cxx(int x) { return h(x) - 2; }
        int main(void) { printf("%d\n", cxx(1)); puts("done"); return 0; }
    "#;

    /// Compiles [`PROGRAM`] with `flags`; `None` (with the reason printed) where no C compiler
    /// runs, which fails under CI.
    fn compile(dir: &Path, name: &str, flags: &[&str]) -> Option<PathBuf> {
        let (src, exe) = (dir.join("prog.c"), dir.join(name));
        std::fs::write(&src, PROGRAM).unwrap();
        let o = Command::new("cc").args(flags).arg("-O1").arg("-o").arg(&exe).arg(&src).output();
        match o {
            Ok(o) if o.status.success() => Some(exe),
            other => {
                let why = format!("cannot compile the test program with cc {flags:?}: {other:?}");
                assert!(std::env::var_os("CI").is_none(), "{why}");
                crate::say!("SKIPPED: {why}");
                None
            }
        }
    }

    /// File offset of virtual address `addr` in `exe`.
    fn file_offset(exe: &Path, addr: u64) -> u64 {
        let bytes = std::fs::read(exe).unwrap();
        let obj = object::File::parse(&*bytes).unwrap();
        let s = obj
            .sections()
            .find(|s| (s.address()..s.address() + s.size()).contains(&addr))
            .unwrap_or_else(|| panic!("no section holds {addr:#x}"));
        addr - s.address() + s.file_range().unwrap().0
    }

    /// The file offset of symbol `name`'s first instruction + 1.
    fn symbol_offset(exe: &Path, name: &str) -> u64 {
        let bytes = std::fs::read(exe).unwrap();
        let obj = object::File::parse(&*bytes).unwrap();
        let sym = obj.symbols().find(|s| s.name() == Ok(name)).unwrap_or_else(|| panic!("no {name}"));
        file_offset(exe, sym.address() + 1)
    }

    /// The PLT stubs `objdump -d` names (`getpid@plt`), as (name, address).
    fn objdump_plt_stubs(exe: &Path) -> Vec<(String, u64)> {
        let o = Command::new("objdump").args(["-d", "-j", ".plt", "-j", ".plt.sec"]).arg(exe).output();
        let o = o.expect("objdump (binutils) runs");
        let text = String::from_utf8_lossy(&o.stdout);
        text.lines()
            .filter_map(|l| {
                let (addr, rest) = l.split_once(" <")?;
                let name = rest.strip_suffix(">:")?.strip_suffix("@plt")?;
                Some((name.to_owned(), u64::from_str_radix(addr.trim(), 16).ok()?))
            })
            .collect()
    }

    const VARIANTS: [(&str, &[&str]); 4] = [
        ("pie", &[]),
        ("no-pie", &["-no-pie", "-fno-pie"]),
        ("now", &["-Wl,-z,now"]),
        ("ibtplt", &["-fcf-protection", "-Wl,-z,ibtplt"]),
    ];

    #[test]
    fn names_that_are_not_mangled_are_shown_as_they_are() {
        let dir = tempfile::tempdir().unwrap();
        let Some(exe) = compile(dir.path(), "prog", &[]) else { return };
        let mut s = Symbolizer::default();
        for name in ["f", "g", "h", "main"] {
            let r = s.file_offset(&exe, symbol_offset(&exe, name)).expect(name);
            assert_eq!((r.name.as_str(), display(&r.name).as_ref()), (name, name));
        }
        // A mangled name comes back raw; the host's one demangler gives its display text.
        let r = s.file_offset(&exe, symbol_offset(&exe, "_Z3cxxi")).unwrap();
        assert_eq!((r.name.as_str(), display(&r.name).as_ref()), ("_Z3cxxi", "cxx(int)"));
    }

    /// The line of `PROGRAM` that holds `text`.
    fn program_line(text: &str) -> u32 {
        PROGRAM.lines().position(|l| l.contains(text)).unwrap() as u32 + 1
    }

    #[test]
    fn source_file_and_line_come_from_debug_information_where_there_is_some() {
        let dir = tempfile::tempdir().unwrap();
        let Some(exe) = compile(dir.path(), "prog-g", &["-g"]) else { return };
        let mut s = Symbolizer::default();
        for (name, text) in [("f", "int f(int x)"), ("h", "int h(int x)"), ("_Z3cxxi", "int cxx(int x) {")] {
            let r = s.file_offset(&exe, symbol_offset(&exe, name)).expect(name);
            let file = r.file.unwrap_or_else(|| panic!("{name}: no file"));
            assert!(file.ends_with("/prog.c"), "{name}: {file}");
            assert_eq!(r.line, program_line(text), "{name}");
        }
        // Without debug information: the name, and no place.
        let Some(bare) = compile(dir.path(), "prog", &[]) else { return };
        let r = s.file_offset(&bare, symbol_offset(&bare, "f")).unwrap();
        assert_eq!((r.name.as_str(), r.file, r.line), ("f", None, 0));
    }

    #[test]
    fn plt_stubs_are_named_after_their_target_as_perf_and_objdump_do() {
        let dir = tempfile::tempdir().unwrap();
        for (variant, flags) in VARIANTS {
            let Some(exe) = compile(dir.path(), variant, flags) else { return };
            let stubs = objdump_plt_stubs(&exe);
            let names: Vec<&str> = stubs.iter().map(|(n, _)| n.as_str()).collect();
            assert!(names.contains(&"getpid") && names.contains(&"puts"), "{variant}: {names:?}");
            let mut s = Symbolizer::default();
            for (name, addr) in &stubs {
                for within in [0, 4, 15] {
                    let r = s.file_offset(&exe, file_offset(&exe, addr + within));
                    let got = r.map(|r| r.name);
                    assert_eq!(got.as_deref(), Some(format!("{name}@plt").as_str()), "{variant} +{within}");
                }
            }
            // Code outside the PLT still resolves to its function.
            assert_eq!(s.file_offset(&exe, symbol_offset(&exe, "f")).unwrap().name, "f");
        }
    }
}
