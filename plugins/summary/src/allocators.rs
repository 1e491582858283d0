//! Caching allocators: frameworks that allocate device memory in large blocks, keep them in a
//! pool for the whole run and let the driver release them at exit. Memory they hold at exit is
//! not a leak, and the report says whose pool it is instead.
//!
//! Recognised by a function of the allocator on the allocating stack (names as the host's
//! symbolizer demangles them). These are framework names, not GPU vendor or API names: the
//! vendor's runtime is never matched here.

/// (a function name part on the allocating stack, whose pool it is).
const CACHING_ALLOCATORS: &[(&str, &str)] = &[
    ("c10::cuda::CUDACachingAllocator", "PyTorch's CUDA caching allocator"),
    ("c10::hip::HIPCachingAllocator", "PyTorch's HIP caching allocator"),
    ("c10::xpu::XPUCachingAllocator", "PyTorch's XPU caching allocator"),
    ("BFCAllocator", "a TensorFlow/XLA BFC allocator"),
];

/// The caching allocator whose frame is on `stack` (function names, any order), if any.
pub fn caching_allocator(stack: &[String]) -> Option<&'static str> {
    CACHING_ALLOCATORS.iter().find(|(part, _)| stack.iter().any(|f| f.contains(part))).map(|(_, who)| *who)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_pytorchs_pool_and_nothing_else() {
        let torch = [
            "cudaMalloc".to_owned(),
            "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)".to_owned(),
            "at::empty".to_owned(),
        ];
        assert_eq!(caching_allocator(&torch), Some("PyTorch's CUDA caching allocator"));
        assert_eq!(caching_allocator(&["main".to_owned(), "cudaMalloc".to_owned()]), None);
    }
}
