//! Symbolization of normalised frames with blazesym: demangled names and inlined functions,
//! from the module file (so processes that already exited still symbolise).

use std::path::Path;

use blazesym::symbolize::source::{Elf, Kernel, Process, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer as Blaze};

/// A resolved location: the function and, outermost first, the functions inlined into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The function containing the address.
    pub name: String,
    /// Inlined callees at the address, outermost first.
    pub inlined: Vec<String>,
}

/// Wraps a blazesym symbolizer with the settings xpuprof uses.
pub struct Symbolizer {
    inner: Blaze,
    /// Addresses that could not be resolved.
    pub failures: u64,
}

impl std::fmt::Debug for Symbolizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Symbolizer").field("failures", &self.failures).finish()
    }
}

impl Default for Symbolizer {
    fn default() -> Self {
        let inner =
            Blaze::builder().enable_demangling(true).enable_inlined_fns(true).enable_code_info(false).build();
        Self { inner, failures: 0 }
    }
}

impl Symbolizer {
    /// Resolves a file offset inside the ELF file at `path`.
    pub fn file_offset(&mut self, path: &Path, offset: u64) -> Option<Resolved> {
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
            Ok(Symbolized::Sym(sym)) => Some(Resolved {
                name: sym.name.to_string(),
                inlined: sym.inlined.iter().map(|f| f.name.to_string()).collect(),
            }),
            _ => {
                self.failures += 1;
                None
            }
        }
    }
}
