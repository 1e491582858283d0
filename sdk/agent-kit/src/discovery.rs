//! Finding the vendor library that matches the runtime this process already uses (CUPTI next to
//! the `libcudart` the program maps, for instance), never a library linked at build time.
//!
//! A backend describes where its library may be ([`Search`]); the search order is:
//! 1. the override variable (a file);
//! 2. folders derived from the libraries this process maps ([`Search::anchor_names`],
//!    [`Search::anchor_dirs`], each with [`Search::relative`] folders);
//! 3. install roots from environment variables, then `/usr/local/<prefix>*` (the unversioned
//!    link first, then newest version first), each with [`Search::root_subdirs`].
//!
//! In each folder, files named `<file_prefix>*` are tried: the unversioned name first, then the
//! longest (most specific version) first.

use std::path::{Path, PathBuf};

/// Where a backend's library may be.
#[derive(Debug, Clone, Copy)]
pub struct Search<'a> {
    /// What is looked for, for messages (`libcupti`).
    pub what: &'a str,
    /// File name prefix of the library (`libcupti.so`).
    pub file_prefix: &'a str,
    /// Environment variable naming the library file itself.
    pub override_var: &'a str,
    /// Mapped libraries whose folder may hold it (file name prefixes: `libcudart.so`).
    pub anchor_names: &'a [&'a str],
    /// Path fragments of folders of vendor libraries: any library mapped from such a folder
    /// anchors the search (`/site-packages/nvidia/`).
    pub anchor_dirs: &'a [&'a str],
    /// Folders relative to an anchor's folder (`..` goes up: `../../cuda_cupti/lib`).
    pub relative: &'a [&'a str],
    /// Environment variables naming install roots (`CUDA_HOME`).
    pub root_vars: &'a [&'a str],
    /// Prefix of install roots under `/usr/local` (`cuda` for `/usr/local/cuda-13.0`).
    pub local_prefix: &'a str,
    /// Folders relative to an install root (`lib64`).
    pub root_subdirs: &'a [&'a str],
    /// What the user can do when nothing is found.
    pub hint: &'a str,
}

fn push_unique(v: &mut Vec<PathBuf>, p: PathBuf) {
    if !v.contains(&p) {
        v.push(p);
    }
}

/// `dir` joined with `rel`, where leading `..` components go up.
fn join_relative(dir: &Path, rel: &str) -> Option<PathBuf> {
    let mut base = dir.to_path_buf();
    let mut rest = rel;
    while let Some(r) = rest.strip_prefix("../") {
        base = base.parent()?.to_path_buf();
        rest = r;
    }
    Some(if rest.is_empty() || rest == "." { base } else { base.join(rest) })
}

impl Search<'_> {
    /// Candidate folders derived from the libraries in `maps` (a `/proc/<pid>/maps` text).
    fn dirs_from_maps(&self, maps: &str) -> Vec<PathBuf> {
        let mut dirs = Vec::new();
        for m in xpuprof_wire::maps::parse(maps) {
            let p = Path::new(&m.path);
            let Some(name) = p.file_name().and_then(|n| n.to_str()) else { continue };
            let Some(dir) = p.parent() else { continue };
            let vendor_dir = self.anchor_dirs.iter().any(|d| m.path.contains(d)) && name.starts_with("lib");
            if vendor_dir || self.anchor_names.iter().any(|a| name.starts_with(a)) {
                push_unique(&mut dirs, dir.to_path_buf());
                for rel in self.relative {
                    if let Some(d) = join_relative(dir, rel) {
                        push_unique(&mut dirs, d);
                    }
                }
            }
        }
        dirs
    }

    fn root_dirs(&self) -> Vec<PathBuf> {
        let mut roots: Vec<PathBuf> =
            self.root_vars.iter().filter_map(std::env::var_os).map(PathBuf::from).collect();
        let mut local: Vec<PathBuf> = std::fs::read_dir("/usr/local")
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.starts_with(self.local_prefix))
                    })
                    .collect()
            })
            .unwrap_or_default();
        // The unversioned link first, then versions newest first.
        local.sort_by_key(|p| {
            let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("").to_owned();
            let ver: Vec<u32> = n
                .trim_start_matches(self.local_prefix)
                .trim_start_matches('-')
                .split('.')
                .filter_map(|x| x.parse().ok())
                .collect();
            (n != self.local_prefix, std::cmp::Reverse(ver))
        });
        roots.extend(local);
        roots.iter().flat_map(|r| self.root_subdirs.iter().map(move |s| r.join(s))).collect()
    }

    /// Library files in `dir`, the unversioned name first, then newest version first.
    fn files_in(&self, dir: &Path) -> Vec<PathBuf> {
        let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
        let mut v: Vec<PathBuf> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(self.file_prefix))
            })
            .collect();
        v.sort_by_key(|p| std::cmp::Reverse(p.file_name().map(|n| n.len()).unwrap_or(0)));
        v.sort_by_key(|p| p.file_name().and_then(|n| n.to_str()) != Some(self.file_prefix));
        v
    }

    /// The folders searched, in order.
    pub fn searched_dirs(&self, maps: &str) -> Vec<PathBuf> {
        let mut dirs = self.dirs_from_maps(maps);
        for d in self.root_dirs() {
            push_unique(&mut dirs, d);
        }
        dirs
    }

    /// Every file to try, in order.
    pub fn candidates(&self, maps: &str) -> Vec<PathBuf> {
        let mut out = Vec::new();
        if let Some(p) = std::env::var_os(self.override_var) {
            out.push(PathBuf::from(p));
        }
        for d in self.searched_dirs(maps) {
            out.extend(self.files_in(&d));
        }
        out
    }

    /// Loads the first candidate `load` accepts (for this process's own maps). The error names
    /// every folder searched, why each candidate failed, and the hint.
    pub fn load<T>(&self, mut load: impl FnMut(&str) -> Result<T, String>) -> Result<T, String> {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
        let mut errors = Vec::new();
        for path in self.candidates(&maps) {
            match load(&path.display().to_string()) {
                Ok(lib) => return Ok(lib),
                Err(e) => errors.push(e),
            }
        }
        let dirs: Vec<String> = self.searched_dirs(&maps).iter().map(|d| d.display().to_string()).collect();
        Err(format!(
            "{} not found (looked in {}{}); {}",
            self.what,
            dirs.join(", "),
            if errors.is_empty() { String::new() } else { format!("; {}", errors.join("; ")) },
            self.hint
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEARCH: Search<'static> = Search {
        what: "libvendor",
        file_prefix: "libvendor.so",
        override_var: "XPUPROF_TEST_VENDOR_LIB",
        anchor_names: &["libvrt.so"],
        anchor_dirs: &["/site-packages/vendor/"],
        relative: &["../../vendor_tools/lib", "../extras/lib64"],
        root_vars: &[],
        local_prefix: "vendor-test-none",
        root_subdirs: &["lib64"],
        hint: "install it",
    };

    #[test]
    fn derives_folders_from_mapped_runtime() {
        let maps = "7f00-7f10 r-xp 00000000 08:01 1 /opt/venv/lib/python3.12/site-packages/vendor/v13/lib/libother.so.13\n\
                    7f20-7f30 r-xp 00000000 08:01 2 /usr/local/vendor-13.0/targets/lib/libvrt.so.13.0.96\n";
        let d = SEARCH.dirs_from_maps(maps);
        assert_eq!(d[0], PathBuf::from("/opt/venv/lib/python3.12/site-packages/vendor/v13/lib"));
        assert!(d.contains(&PathBuf::from("/opt/venv/lib/python3.12/site-packages/vendor/vendor_tools/lib")));
        assert!(d.contains(&PathBuf::from("/usr/local/vendor-13.0/targets/lib")));
        assert!(d.contains(&PathBuf::from("/usr/local/vendor-13.0/targets/extras/lib64")));
    }

    #[test]
    fn prefers_unversioned_then_longest_name_and_reports_what_failed() {
        let dir = std::env::temp_dir().join(format!("xpuprof-discovery-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for n in ["libvendor.so.13", "libvendor.so.13.0.85", "libother.so"] {
            std::fs::write(dir.join(n), b"").unwrap();
        }
        let f = SEARCH.files_in(&dir);
        assert_eq!(f.len(), 2);
        assert!(f[0].ends_with("libvendor.so.13.0.85"));
        let err = SEARCH.load(|p| Err::<(), _>(format!("{p} refused"))).unwrap_err();
        assert!(err.starts_with("libvendor not found (looked in "), "{err}");
        assert!(err.ends_with("; install it"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
