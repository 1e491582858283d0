//! Where the libcupti that matches the process's CUDA runtime may be (searched with the kit's
//! [`discovery`](xpuprof_agent_kit::discovery)): `XPUPROF_CUPTI_LIB`; next to the `libcudart`
//! this process maps (toolkit `lib64`, or a Python wheel's `nvidia/cu13/lib`;
//! `nvidia/cuda_runtime/lib` → `nvidia/cuda_cupti/lib`) and beside any other mapped
//! `site-packages/nvidia/` library folder; `CUDA_HOME` / `CUDA_PATH`; `/usr/local/cuda*`.

use xpuprof_agent_kit::discovery::Search;

/// The CUPTI search.
pub const CUPTI: Search<'static> = Search {
    what: "libcupti",
    file_prefix: "libcupti.so",
    override_var: "XPUPROF_CUPTI_LIB",
    anchor_names: &["libcudart.so"],
    anchor_dirs: &["/site-packages/nvidia/", "/dist-packages/nvidia/"],
    // Older wheels: nvidia/cuda_runtime/lib -> nvidia/cuda_cupti/lib; toolkit:
    // .../lib64/libcudart.so -> .../extras/CUPTI/lib64.
    relative: &["../../cuda_cupti/lib", "../extras/CUPTI/lib64"],
    root_vars: &["CUDA_HOME", "CUDA_PATH"],
    local_prefix: "cuda",
    root_subdirs: &["lib64", "targets/x86_64-linux/lib", "extras/CUPTI/lib64", "lib"],
    hint: "install CUPTI for this CUDA version (pip install nvidia-cuda-cupti, or the toolkit's extras/CUPTI) or set XPUPROF_CUPTI_LIB",
};

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::CUPTI;

    #[test]
    fn searches_beside_the_mapped_runtime_and_its_wheel() {
        let maps = "7f00-7f10 r-xp 00000000 08:01 1 /opt/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcudart.so.13\n\
                    7f20-7f30 r-xp 00000000 08:01 2 /usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13.0.96\n";
        let d = CUPTI.searched_dirs(maps);
        assert_eq!(d[0], PathBuf::from("/opt/venv/lib/python3.12/site-packages/nvidia/cu13/lib"));
        assert!(d.contains(&PathBuf::from("/usr/local/cuda-13.0/targets/x86_64-linux/lib")));
        assert!(d.contains(&PathBuf::from("/opt/venv/lib/python3.12/site-packages/nvidia/cuda_cupti/lib")));
        assert!(d.contains(&PathBuf::from("/usr/local/cuda-13.0/targets/x86_64-linux/extras/CUPTI/lib64")));
    }
}
