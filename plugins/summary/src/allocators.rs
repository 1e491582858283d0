//! Caching allocators: frameworks that allocate device memory in large blocks, keep them in a
//! pool for the whole run and let the driver release them at exit. Memory they hold at exit is
//! not a leak, and the report says whose pool it is instead.
//!
//! Recognised by a function of the allocator on the allocating stack (names as the host's
//! symbolizer demangles them). These are framework names, not GPU vendor or API names: the
//! vendor's runtime is never matched here, and PyTorch's per-device allocators are recognised by
//! their naming pattern (`c10::<device>::<DEVICE>CachingAllocator`), whatever the device.

use std::sync::{Mutex, PoisonError};

/// (a function name part on the allocating stack, whose pool it is), besides PyTorch's.
const CACHING_ALLOCATORS: &[(&str, &str)] = &[("BFCAllocator", "a TensorFlow/XLA BFC allocator")];

/// Most distinct PyTorch device labels kept; later ones get a generic label.
const MAX_LABELS: usize = 16;

/// The caching allocator whose frame is on `stack` (function names, any order), if any.
pub fn caching_allocator(stack: &[String]) -> Option<&'static str> {
    if let Some(device) = stack.iter().find_map(|f| pytorch_device(f)) {
        return Some(pytorch_label(device));
    }
    CACHING_ALLOCATORS.iter().find(|(part, _)| stack.iter().any(|f| f.contains(part))).map(|(_, who)| *who)
}

/// The device of PyTorch's caching allocator that function `f` belongs to:
/// `c10::<namespace>::<DEVICE>CachingAllocator::...` gives `DEVICE`.
fn pytorch_device(f: &str) -> Option<&str> {
    let rest = &f[f.find("c10::")? + "c10::".len()..];
    let (_, class) = rest.split_once("::")?;
    let device = class.split("::").next()?.strip_suffix("CachingAllocator")?;
    let plain = !device.is_empty() && device.len() <= 16 && device.bytes().all(|c| c.is_ascii_alphanumeric());
    plain.then_some(device)
}

/// "PyTorch's DEVICE caching allocator", made once per device type for the report's
/// `&'static str`.
fn pytorch_label(device: &str) -> &'static str {
    static LABELS: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let label = format!("PyTorch's {device} caching allocator");
    let mut labels = LABELS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(l) = labels.iter().find(|l| **l == label) {
        return l;
    }
    if labels.len() >= MAX_LABELS {
        return "PyTorch's caching allocator";
    }
    let l: &'static str = Box::leak(label.into_boxed_str());
    labels.push(l);
    l
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_pytorchs_pools_by_their_pattern_and_nothing_else() {
        let torch = [
            "deviceMalloc".to_owned(),
            "c10::xpu::XPUCachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long)".to_owned(),
            "at::empty".to_owned(),
        ];
        assert_eq!(caching_allocator(&torch), Some("PyTorch's XPU caching allocator"));
        let other = ["c10::npu::NPUCachingAllocator::malloc(unsigned long)".to_owned()];
        assert_eq!(caching_allocator(&other), Some("PyTorch's NPU caching allocator"));
        let bfc = ["tensorflow::BFCAllocator::AllocateRaw".to_owned()];
        assert_eq!(caching_allocator(&bfc), Some("a TensorFlow/XLA BFC allocator"));
        assert_eq!(caching_allocator(&["main".to_owned(), "deviceMalloc".to_owned()]), None);
        assert_eq!(caching_allocator(&["c10::x::CachingAllocator::f".to_owned()]), None);
    }
}
