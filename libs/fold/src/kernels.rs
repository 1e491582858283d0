//! Kernel names in frames: the full (display) name, the short one, and the stable id added to
//! a short name that two different kernels of the session share.

use xpuprof_sdk::hash::IdMap;
use xpuprof_sdk::model::StrId;
use xpuprof_toolbox::kernel_name;
use xpuprof_toolbox::Definitions;

use super::names::sanitize_frame;
use super::options::{FoldedOptions, KernelNames};

/// The frame text and full name of every kernel name of a session.
#[derive(Debug, Default)]
pub(crate) struct KernelNamer {
    /// name id → (frame text, full name).
    names: IdMap<StrId, (String, String)>,
}

impl KernelNamer {
    /// Names every kernel in `ids` (each once): short names shared by two different full names
    /// get their stable ids, so two kernels never merge into one frame.
    pub(crate) fn new(opts: &FoldedOptions, defs: &Definitions, ids: impl Iterator<Item = StrId>) -> Self {
        let mut full: IdMap<StrId, String> = IdMap::default();
        for id in ids {
            // The display text: demangled by the host (unless the session said `demangle = false`).
            full.entry(id).or_insert_with(|| defs.str(id).unwrap_or("[unknown kernel]").to_owned());
        }
        let mut by_short: IdMap<String, u32> = IdMap::default();
        if opts.kernel_names == KernelNames::Short {
            let mut distinct: Vec<&String> = full.values().collect();
            distinct.sort_unstable();
            distinct.dedup();
            for f in distinct {
                *by_short.entry(kernel_name::short(f)).or_default() += 1;
            }
        }
        let names = full
            .into_iter()
            .map(|(id, full)| {
                let text = match opts.kernel_names {
                    KernelNames::Full => full.clone(),
                    KernelNames::Short => {
                        let short = kernel_name::short(&full);
                        if by_short.get(&short).copied().unwrap_or(0) > 1 {
                            kernel_name::short_with_id(&full)
                        } else {
                            short
                        }
                    }
                };
                (id, (sanitize_frame(&text).into_owned(), full))
            })
            .collect();
        Self { names }
    }

    /// The frame text of kernel name `id`.
    pub(crate) fn frame(&self, id: StrId) -> &str {
        self.names.get(&id).map_or("[unknown kernel]", |(t, _)| t.as_str())
    }

    /// The full (demangled) name of kernel name `id`.
    pub(crate) fn full(&self, id: StrId) -> &str {
        self.names.get(&id).map_or("[unknown kernel]", |(_, f)| f.as_str())
    }
}
