//! Record buffers: allocated for the vendor library (CUPTI's activity buffers), handed to the
//! sender thread when complete, and reused.

use std::alloc::Layout;
use std::sync::Mutex;

/// An activity buffer owned by the agent.
#[derive(Debug)]
pub struct Buffer {
    ptr: *mut u8,
    cap: usize,
    valid: usize,
}

// SAFETY: the buffer is plain memory owned by exactly one holder at a time (the vendor library
// while it fills it, then the completion callback, then the sender thread).
unsafe impl Send for Buffer {}

impl Buffer {
    /// Takes back a buffer the vendor library completed.
    ///
    /// # Safety
    /// `ptr` must come from [`Pool::get`] with capacity `cap`, and `valid <= cap`.
    pub unsafe fn from_raw(ptr: *mut u8, cap: usize, valid: usize) -> Self {
        Self { ptr, cap, valid: valid.min(cap) }
    }

    /// The buffer's address (for the vendor's record iterator).
    pub fn as_mut_ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// The records the vendor library wrote.
    pub fn valid_bytes(&self) -> &[u8] {
        // SAFETY: `ptr` holds `cap >= valid` bytes, the first `valid` written by the vendor library.
        unsafe { std::slice::from_raw_parts(self.ptr, self.valid) }
    }
}

/// Free buffers.
#[derive(Debug)]
pub struct Pool {
    size: usize,
    free: Mutex<Vec<usize>>,
}

impl Pool {
    /// A pool of buffers of `size` bytes.
    pub fn new(size: usize) -> Self {
        Self { size, free: Mutex::new(Vec::new()) }
    }

    fn layout(&self) -> Layout {
        Layout::from_size_align(self.size, 8).expect("buffer size is valid")
    }

    /// A buffer for the vendor library: pointer and size (null when out of memory).
    pub fn get(&self) -> (*mut u8, usize) {
        if let Some(p) = self.free.lock().ok().and_then(|mut f| f.pop()) {
            return (p as *mut u8, self.size);
        }
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { std::alloc::alloc(self.layout()) };
        (p, if p.is_null() { 0 } else { self.size })
    }

    /// Returns a buffer to the pool (at most 8 are kept; the rest are freed).
    pub fn put(&self, b: Buffer) {
        if b.cap != self.size || b.ptr.is_null() {
            return;
        }
        if let Ok(mut f) = self.free.lock() {
            if f.len() < 8 {
                f.push(b.ptr as usize);
                return;
            }
        }
        // SAFETY: the buffer was allocated by `get` with this same layout.
        unsafe { std::alloc::dealloc(b.ptr, self.layout()) };
    }
}
