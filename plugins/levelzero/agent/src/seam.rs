//! The parts every in-target agent needs and that the shared agent kit provides: clocks, the
//! channel to the host (bounded, drop-and-count), the launch-stack walk and the module map.
//! The Level Zero logic only uses this seam, so moving onto the kit replaces this file only.

use std::io::Write;
use std::os::raw::{c_int, c_void};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use xpuprof_levelzero_wire::{loss, Msg, Writer};

fn clock(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into a valid timespec.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `CLOCK_MONOTONIC` ns: the session clock.
pub fn mono() -> u64 {
    clock(libc::CLOCK_MONOTONIC)
}

/// `CLOCK_MONOTONIC_RAW` ns: the host clock Intel's driver pairs device ticks with.
pub fn raw() -> u64 {
    clock(libc::CLOCK_MONOTONIC_RAW)
}

/// A `CLOCK_MONOTONIC_RAW` / `CLOCK_MONOTONIC` pair (raw read on both sides, averaged).
pub fn host_pair() -> Msg {
    let r0 = raw();
    let m = mono();
    let r1 = raw();
    Msg::HostClock { raw: r0 + (r1 - r0) / 2, mono: m }
}

/// The calling thread's kernel id.
pub fn tid() -> u32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as u32 }
}

/// Most bytes waiting for the host before messages are dropped (and counted).
const CHANNEL_LIMIT: usize = 64 << 20;

/// Messages waiting for the sender thread.
pub struct Channel {
    buf: Mutex<Writer>,
    dropped: AtomicU64,
    sock: Mutex<Option<UnixStream>>,
}

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel").field("dropped", &self.dropped).finish()
    }
}

impl Channel {
    /// Connects to the host's socket.
    pub fn connect(path: &str) -> std::io::Result<Self> {
        let s = UnixStream::connect(path)?;
        Ok(Self { buf: Mutex::new(Writer::default()), dropped: AtomicU64::new(0), sock: Mutex::new(Some(s)) })
    }

    /// Queues messages; drops (and counts) them when the host is too far behind.
    pub fn send(&self, msgs: &[Msg]) {
        let mut w = self.buf.lock().unwrap_or_else(|e| e.into_inner());
        if w.buf.len() > CHANNEL_LIMIT {
            self.dropped.fetch_add(msgs.len() as u64, Ordering::Relaxed);
            return;
        }
        msgs.iter().for_each(|m| w.put(m));
    }

    /// Writes what is queued to the host (on the sender thread and at exit).
    pub fn flush(&self) {
        let bytes = {
            let mut w = self.buf.lock().unwrap_or_else(|e| e.into_inner());
            let d = self.dropped.swap(0, Ordering::Relaxed);
            if d > 0 {
                w.put(&Msg::Loss { cause: loss::CHANNEL_FULL, count: d });
            }
            std::mem::take(&mut w.buf)
        };
        if bytes.is_empty() {
            return;
        }
        let mut s = self.sock.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(sock) = s.as_mut() {
            if sock.write_all(&bytes).is_err() {
                *s = None;
            }
        }
    }
}

/// Most frames of a launch stack.
pub const MAX_FRAMES: usize = 128;

struct Walk<'a> {
    frames: &'a mut [u64],
    n: usize,
}

extern "C" {
    fn _Unwind_Backtrace(
        trace: extern "C" fn(ctx: *mut c_void, arg: *mut c_void) -> c_int,
        arg: *mut c_void,
    ) -> c_int;
    fn _Unwind_GetIP(ctx: *mut c_void) -> usize;
}

extern "C" fn step(ctx: *mut c_void, arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `Walk` passed to _Unwind_Backtrace by `stack` below, alive for the walk.
    let w = unsafe { &mut *(arg as *mut Walk<'_>) };
    // SAFETY: `ctx` is the unwinder's context for this frame.
    let ip = unsafe { _Unwind_GetIP(ctx) } as u64;
    if ip == 0 || w.n == w.frames.len() {
        return 5; // _URC_END_OF_STACK
    }
    w.frames[w.n] = ip;
    w.n += 1;
    0
}

/// The calling thread's stack as return addresses, innermost first, through the binaries'
/// unwind tables (the loader and its tracing layer are built without frame pointers).
pub fn stack(frames: &mut [u64]) -> usize {
    let mut w = Walk { frames, n: 0 };
    // SAFETY: `step` only writes inside `w.frames`; `w` outlives the call.
    unsafe { _Unwind_Backtrace(step, &mut w as *mut Walk<'_> as *mut c_void) };
    w.n
}

/// A stack's hash (FNV-1a over the addresses), never 0.
pub fn stack_hash(frames: &[u64]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for f in frames {
        h = (h ^ f).wrapping_mul(0x100_0000_01b3);
    }
    h.max(1)
}

/// Executable mappings of this process: `(start, end, file offset, path)`.
pub fn modules() -> Vec<(u64, u64, u64, String)> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    maps.lines()
        .filter_map(|l| {
            let mut it = l.splitn(6, ' ');
            let (range, perms, off) = (it.next()?, it.next()?, it.next()?);
            let path = it.nth(2).map(str::trim).unwrap_or("");
            if !perms.contains('x') || path.is_empty() {
                return None;
            }
            let (s, e) = range.split_once('-')?;
            let p = |v: &str| u64::from_str_radix(v, 16).ok();
            Some((p(s)?, p(e)?, p(off)?, path.to_string()))
        })
        .collect()
}
