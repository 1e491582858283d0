//! Finds the libcupti that matches the CUDA runtime of this process. Never linked at build time.
//!
//! Search order (first existing file wins):
//! 1. `XPUPROF_CUPTI_LIB` (a file);
//! 2. next to the `libcudart` this process maps (toolkit `lib64`, or a Python wheel's
//!    `nvidia/cu13/lib`, `nvidia/cuda_runtime/lib` → `nvidia/cuda_cupti/lib`), and beside any
//!    other mapped `site-packages/nvidia/` library folder;
//! 3. `CUDA_HOME` / `CUDA_PATH`;
//! 4. `/usr/local/cuda*` (newest first);
//! 5. the dynamic linker's own search (`libcupti.so.<major>`, `libcupti.so`).

use std::path::{Path, PathBuf};

const SUBDIRS: [&str; 4] = ["lib64", "targets/x86_64-linux/lib", "extras/CUPTI/lib64", "lib"];

/// Candidate folders derived from the libraries this process maps.
fn dirs_from_maps(maps: &str) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for line in maps.lines() {
        let Some(path) = line.split_whitespace().nth(5) else { continue };
        let p = Path::new(path);
        let Some(name) = p.file_name().and_then(|n| n.to_str()) else { continue };
        let Some(dir) = p.parent() else { continue };
        let wheel = path.contains("/site-packages/nvidia/") || path.contains("/dist-packages/nvidia/");
        if name.starts_with("libcudart.so") || (wheel && name.starts_with("lib")) {
            push_unique(&mut dirs, dir.to_path_buf());
            // Older wheels: nvidia/cuda_runtime/lib -> nvidia/cuda_cupti/lib.
            if let Some(nv) = dir.parent().and_then(Path::parent) {
                push_unique(&mut dirs, nv.join("cuda_cupti/lib"));
            }
            // Toolkit: .../lib64/libcudart.so -> .../extras/CUPTI/lib64.
            if let Some(root) = dir.parent() {
                push_unique(&mut dirs, root.join("extras/CUPTI/lib64"));
            }
        }
    }
    dirs
}

fn push_unique(v: &mut Vec<PathBuf>, p: PathBuf) {
    if !v.contains(&p) {
        v.push(p);
    }
}

fn toolkit_dirs() -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> =
        ["CUDA_HOME", "CUDA_PATH"].iter().filter_map(std::env::var_os).map(PathBuf::from).collect();
    let mut local: Vec<PathBuf> = std::fs::read_dir("/usr/local")
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("cuda")))
                .collect()
        })
        .unwrap_or_default();
    // `cuda` (the default link) first, then versions newest first.
    local.sort_by_key(|p| {
        let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("").to_owned();
        let ver: Vec<u32> = n
            .trim_start_matches("cuda")
            .trim_start_matches('-')
            .split('.')
            .filter_map(|x| x.parse().ok())
            .collect();
        (n != "cuda", std::cmp::Reverse(ver))
    });
    roots.extend(local);
    roots.iter().flat_map(|r| SUBDIRS.iter().map(move |s| r.join(s))).collect()
}

/// `libcupti.so*` files in `dir`, the unversioned name first, then newest version first.
fn cupti_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut v: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("libcupti.so")))
        .collect();
    v.sort_by_key(|p| std::cmp::Reverse(p.file_name().map(|n| n.len()).unwrap_or(0)));
    v.sort_by_key(|p| p.file_name().and_then(|n| n.to_str()) != Some("libcupti.so"));
    v
}

/// Every place looked at, in order, for the error message.
pub fn candidates(maps: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(p) = std::env::var_os("XPUPROF_CUPTI_LIB") {
        out.push(PathBuf::from(p));
    }
    let mut dirs = dirs_from_maps(maps);
    for d in toolkit_dirs() {
        push_unique(&mut dirs, d);
    }
    for d in &dirs {
        out.extend(cupti_files(d));
    }
    out
}

/// The folders searched (for the "not found" message).
pub fn searched_dirs(maps: &str) -> Vec<PathBuf> {
    let mut dirs = dirs_from_maps(maps);
    for d in toolkit_dirs() {
        push_unique(&mut dirs, d);
    }
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derives_folders_from_mapped_runtime() {
        let maps = "7f00-7f10 r-xp 00000000 08:01 1 /opt/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcudart.so.13\n\
                    7f20-7f30 r-xp 00000000 08:01 2 /usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13.0.96\n";
        let d = dirs_from_maps(maps);
        assert_eq!(d[0], PathBuf::from("/opt/venv/lib/python3.12/site-packages/nvidia/cu13/lib"));
        assert!(d.contains(&PathBuf::from("/usr/local/cuda-13.0/targets/x86_64-linux/lib")));
        assert!(d.contains(&PathBuf::from("/opt/venv/lib/python3.12/site-packages/nvidia/cuda_cupti/lib")));
    }

    #[test]
    fn prefers_unversioned_then_longest_name() {
        let dir = std::env::temp_dir().join(format!("xpuprof-loader-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for n in ["libcupti.so.13", "libcupti.so.13.0.85", "libother.so"] {
            std::fs::write(dir.join(n), b"").unwrap();
        }
        let f = cupti_files(&dir);
        assert_eq!(f.len(), 2);
        assert!(f[0].ends_with("libcupti.so.13.0.85"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
