//! Decoding the ring-buffer records of `src/bpf/events.h` with `plain` (no pointer casts).

/// Frames in a kernel stack.
pub const MAX_KSTACK: usize = 48;
/// Most bytes of user stack a record carries.
pub const USTACK_MAX: usize = 65536;
/// `StackEvent::flags`: `user_ip` is a return address (an agent's caller-side start).
pub const START_CALLER: u32 = 1;

/// On-CPU sample.
pub const EV_SAMPLE: u32 = 1;
/// End of a blocked interval.
pub const EV_OFFCPU: u32 = 2;
/// Uprobe hit on a launch symbol.
pub const EV_LAUNCH: u32 = 3;
/// Uprobe hit on the correlation trampoline.
pub const EV_TRAMPOLINE: u32 = 4;
/// A tracked process forked a new process.
pub const EV_FORK: u32 = 5;
/// A tracked process called exec.
pub const EV_EXEC: u32 = 6;
/// A tracked process exited.
pub const EV_EXIT: u32 = 7;
/// An executable file mapping of an exiting process.
pub const EV_MAPPING: u32 = 8;
/// Path components in a mapping record.
pub const PATH_DEPTH: usize = 16;
/// Bytes per path component slot.
pub const NAME_LEN: usize = 64;

/// Mirror of `struct xp_stack_event` up to its variable-length user stack copy (`ustack`,
/// `ustack_bytes` of it follow the header in the record).
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct StackEvent {
    pub kind: u32,
    pub pid: u32,
    pub tid: u32,
    pub backend: u32,
    pub time: u64,
    pub weight: u64,
    pub correlation: u64,
    pub cookie: u64,
    pub user_ip: u64,
    pub user_sp: u64,
    pub user_bp: u64,
    pub flags: u32,
    pub ustack_bytes: i32,
    pub kstack_bytes: i32,
    pub pad: u32,
    pub comm: [u8; 16],
    pub kstack: [u64; MAX_KSTACK],
    /// The thread's Python frames as BPF read them (`frames = 0` outside CPython).
    pub py: crate::python::PyStack,
}

// SAFETY: `StackEvent` is `repr(C)`, made only of integers and arrays of integers, so every bit
// pattern is a valid value and it has no padding-dependent invariants.
unsafe impl plain::Plain for StackEvent {}

/// Mirror of `struct xp_proc_event`.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct ProcEvent {
    pub kind: u32,
    pub pid: u32,
    pub ppid: u32,
    pub tid: u32,
    pub time: u64,
    pub comm: [u8; 16],
}

// SAFETY: as for `StackEvent`: `repr(C)`, integers only, every bit pattern valid.
unsafe impl plain::Plain for ProcEvent {}

/// Mirror of `struct xp_mapping_event`.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct MappingEvent {
    pub kind: u32,
    pub pid: u32,
    pub time: u64,
    pub start: u64,
    pub end: u64,
    pub pgoff: u64,
    pub depth: u32,
    pub complete: u32,
    pub names: [u8; PATH_DEPTH * NAME_LEN],
}

// SAFETY: as for `StackEvent`: `repr(C)`, integers only, every bit pattern valid.
unsafe impl plain::Plain for MappingEvent {}

impl MappingEvent {
    /// The mapped file's path, rebuilt from its components (`None` when the walk did not reach
    /// the root, so the path would be relative to some mount).
    pub fn path(&self) -> Option<String> {
        if self.complete == 0 || self.depth == 0 {
            return None;
        }
        let n = (self.depth as usize).min(PATH_DEPTH);
        let mut path = String::new();
        for i in (0..n).rev() {
            let slot = &self.names[i * NAME_LEN..(i + 1) * NAME_LEN];
            let end = slot.iter().position(|&b| b == 0).unwrap_or(NAME_LEN);
            path.push('/');
            path.push_str(&String::from_utf8_lossy(&slot[..end]));
        }
        Some(path)
    }
}

/// One decoded ring-buffer record, borrowing the ring buffer's bytes.
#[derive(Debug)]
pub enum Event<'a> {
    /// Sample, off-CPU interval or launch probe, and its copy of the user stack.
    Stack(&'a StackEvent, &'a [u8]),
    /// Fork, exec or exit.
    Proc(&'a ProcEvent),
    /// A mapping of an exiting process.
    Mapping(&'a MappingEvent),
}

/// Decodes one record; `None` for a record that is too short or of an unknown kind.
pub fn decode(data: &[u8]) -> Option<Event<'_>> {
    let kind = u32::from_ne_bytes(data.get(..4)?.try_into().ok()?);
    match kind {
        EV_SAMPLE | EV_OFFCPU | EV_LAUNCH | EV_TRAMPOLINE => {
            let e: &StackEvent = plain::from_bytes(data).ok()?;
            let n = (e.ustack_bytes.max(0) as usize).min(USTACK_MAX);
            let ustack = data.get(std::mem::size_of::<StackEvent>()..)?.get(..n)?;
            Some(Event::Stack(e, ustack))
        }
        EV_FORK | EV_EXEC | EV_EXIT => plain::from_bytes(data).ok().map(Event::Proc),
        EV_MAPPING => plain::from_bytes(data).ok().map(Event::Mapping),
        _ => None,
    }
}

impl StackEvent {
    /// An on-CPU sample of thread `tid` of `pid` as the BPF program writes it now: the user
    /// registers `regs`, `ustack_bytes` of user stack copied after the header, weight 1, no
    /// kernel or Python frames, no thread name (the handler's tests and the decode benchmark
    /// build their records with it, changing what they need).
    pub fn sample(pid: u32, tid: u32, regs: &xpuprof_unwind::Registers, ustack_bytes: usize) -> Self {
        Self {
            kind: EV_SAMPLE,
            pid,
            tid,
            backend: 0,
            time: xpuprof_sdk::clock::now_ns(),
            weight: 1,
            correlation: 0,
            cookie: 0,
            user_ip: regs.ip,
            user_sp: regs.sp,
            user_bp: regs.bp,
            flags: 0,
            ustack_bytes: ustack_bytes.min(USTACK_MAX) as i32,
            kstack_bytes: 0,
            pad: 0,
            comm: [0; 16],
            kstack: [0; MAX_KSTACK],
            py: crate::python::PyStack::default(),
        }
    }

    /// The captured kernel frames, innermost first.
    pub fn kernel_frames(&self) -> &[u64] {
        frames(&self.kstack, self.kstack_bytes)
    }

    /// The thread's name.
    pub fn comm(&self) -> &str {
        comm_str(&self.comm)
    }
}

impl ProcEvent {
    /// The process's name.
    pub fn comm(&self) -> &str {
        comm_str(&self.comm)
    }
}

fn frames(buf: &[u64], bytes: i32) -> &[u64] {
    let n = (bytes.max(0) as usize / 8).min(buf.len());
    let f = &buf[..n];
    // bpf_get_stack fills whole words; trailing zero entries are padding.
    let end = f.iter().rposition(|&a| a != 0).map_or(0, |i| i + 1);
    &f[..end]
}

fn comm_str(c: &[u8; 16]) -> &str {
    let end = c.iter().position(|&b| b == 0).unwrap_or(c.len());
    std::str::from_utf8(&c[..end]).unwrap_or("?")
}

#[cfg(test)]
mod tests {
    use std::mem::{offset_of, size_of};

    use super::*;
    use crate::bpf::types;

    #[test]
    fn layouts_match_the_bpf_side() {
        assert_eq!(size_of::<StackEvent>(), offset_of!(types::xp_stack_event, ustack));
        assert_eq!(size_of::<StackEvent>() + USTACK_MAX, size_of::<types::xp_stack_event>());
        assert_eq!(size_of::<ProcEvent>(), size_of::<types::xp_proc_event>());
        assert_eq!(offset_of!(StackEvent, kstack), offset_of!(types::xp_stack_event, kstack));
        assert_eq!(offset_of!(StackEvent, comm), offset_of!(types::xp_stack_event, comm));
        assert_eq!(offset_of!(StackEvent, user_ip), offset_of!(types::xp_stack_event, user_ip));
        assert_eq!(offset_of!(StackEvent, flags), offset_of!(types::xp_stack_event, flags));
        assert_eq!(offset_of!(StackEvent, py), offset_of!(types::xp_stack_event, py));
        assert_eq!(size_of::<crate::python::PyStack>(), size_of::<types::xp_py_stack>());
        assert_eq!(offset_of!(ProcEvent, comm), offset_of!(types::xp_proc_event, comm));
        assert_eq!(offset_of!(ProcEvent, time), offset_of!(types::xp_proc_event, time));
        assert_eq!(size_of::<MappingEvent>(), size_of::<types::xp_mapping_event>());
        assert_eq!(offset_of!(MappingEvent, names), offset_of!(types::xp_mapping_event, names));
        assert_eq!(offset_of!(MappingEvent, depth), offset_of!(types::xp_mapping_event, depth));
    }

    #[test]
    fn decodes_a_proc_event_and_rejects_short_records() {
        // Ring-buffer records are 8-byte aligned; so is this buffer.
        let mut words = vec![0u64; size_of::<ProcEvent>() / 8];
        // SAFETY: viewing initialised u64s as bytes; the length is the same memory.
        let bytes =
            unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), words.len() * 8) };
        bytes[..4].copy_from_slice(&EV_FORK.to_ne_bytes());
        bytes[4..8].copy_from_slice(&42u32.to_ne_bytes());
        bytes[24..27].copy_from_slice(b"abc");
        match decode(bytes) {
            Some(Event::Proc(p)) => {
                assert_eq!((p.kind, p.pid, p.comm()), (EV_FORK, 42, "abc"));
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(decode(&bytes[..10]).is_none());
        assert!(decode(&[9, 0, 0, 0]).is_none());
    }

    #[test]
    fn mapping_paths_are_rebuilt_root_first() {
        let mut e = MappingEvent {
            kind: EV_MAPPING,
            pid: 1,
            time: 0,
            start: 0,
            end: 0,
            pgoff: 0,
            depth: 3,
            complete: 1,
            names: [0; PATH_DEPTH * NAME_LEN],
        };
        for (i, name) in ["libc.so.6", "lib", "usr"].iter().enumerate() {
            e.names[i * NAME_LEN..i * NAME_LEN + name.len()].copy_from_slice(name.as_bytes());
        }
        assert_eq!(e.path().as_deref(), Some("/usr/lib/libc.so.6"));
        e.complete = 0;
        assert_eq!(e.path(), None);
    }

    #[test]
    fn a_stack_record_carries_its_copied_bytes() {
        let hdr = size_of::<StackEvent>();
        let mut words = vec![0u64; (hdr + 64) / 8];
        // SAFETY: viewing initialised u64s as bytes; the length is the same memory.
        let bytes =
            unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), words.len() * 8) };
        bytes[..4].copy_from_slice(&EV_SAMPLE.to_ne_bytes());
        let at = offset_of!(StackEvent, ustack_bytes);
        bytes[at..at + 4].copy_from_slice(&24i32.to_ne_bytes());
        bytes[hdr] = 7;
        match decode(bytes) {
            Some(Event::Stack(e, ustack)) => {
                assert_eq!((e.kind, ustack.len(), ustack[0]), (EV_SAMPLE, 24, 7));
                assert!(e.kernel_frames().is_empty());
            }
            other => panic!("unexpected {other:?}"),
        }
        bytes[at..at + 4].copy_from_slice(&128i32.to_ne_bytes());
        assert!(decode(bytes).is_none(), "a record shorter than its stated copy is rejected");
    }
}
