//! Counting the allocations a piece of code makes, for tests that a hot path allocates
//! nothing per record.
//!
//! A test binary installs [`Counting`] as its global allocator, then measures with
//! [`allocations`]; only the calling thread's allocations count, so tests running in parallel
//! in the same binary do not disturb each other.
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOC: xpuprof_testkit::alloc::Counting = xpuprof_testkit::alloc::Counting;
//!
//! let (n, out) = xpuprof_testkit::alloc::allocations(|| work());
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    /// `Some(n)`: counting on this thread, `n` so far.
    static COUNT: Cell<Option<u64>> = const { Cell::new(None) };
}

/// The system allocator, counting allocations and reallocations on threads inside
/// [`allocations`].
#[derive(Debug)]
pub struct Counting;

fn count() {
    // `try_with`: the allocator also runs while thread-locals are being torn down.
    let _ = COUNT.try_with(|c| {
        if let Some(n) = c.get() {
            c.set(Some(n + 1));
        }
    });
}

// SAFETY: every call is forwarded to the system allocator unchanged; counting touches only a
// const-initialised thread-local without a destructor.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: forwarded with the caller's pointer, layout and size.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's pointer and layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Runs `f` and returns how many allocations and reallocations it made on this thread, with
/// its result. Counts nothing unless the binary's global allocator is [`Counting`].
pub fn allocations<R>(f: impl FnOnce() -> R) -> (u64, R) {
    COUNT.with(|c| c.set(Some(0)));
    let r = f();
    let n = COUNT.with(|c| c.replace(None)).unwrap_or(0);
    (n, r)
}

/// Checks that `what` allocated next to nothing per record: `small` and `large` are (records
/// handled, allocations counted by [`allocations`]) of two runs of different lengths. A path
/// that allocates only for definitions and for tables that double as they grow adds a few
/// allocations between the two; one allocation per record would add one per extra record.
/// Panics with both counts when the growth reaches 1 per 1,000 extra records.
pub fn assert_flat(what: &str, small: (usize, u64), large: (usize, u64)) {
    let per_record = (large.1 as f64 - small.1 as f64) / (large.0 - small.0) as f64;
    eprintln!(
        "{what}: {} allocations for {} records, {} for {}: {per_record:.6} per extra record",
        small.1, small.0, large.1, large.0
    );
    assert!(
        per_record < 0.001,
        "{what} allocates per record: {} allocations for {} records, {} for {} ({per_record:.4} per extra record)",
        small.1,
        small.0,
        large.1,
        large.0
    );
}
