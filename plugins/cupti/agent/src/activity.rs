//! CUPTI activity buffers: requested by CUPTI, completed on CUPTI's own thread, framed here and
//! queued for the sender. The records are forwarded as CUPTI wrote them; only the texts behind
//! their `const char*` fields are added (the host cannot read this process's memory), and API
//! callback ids get their names.

use std::collections::{HashMap, HashSet};
use std::mem::offset_of;
use std::sync::Mutex;

use xpuprof_agent_kit::buffers::Buffer;
use xpuprof_agent_kit::channel::Chunk;
use xpuprof_agent_kit::wire;
use xpuprof_agent_kit::wire::names::Entries;

use crate::sys::ffi::{self, CUpti_ActivityKind as K, DOMAIN_DRIVER, DOMAIN_RUNTIME};

/// Offsets of `const char*` fields per activity kind. These fields sit in the part of each
/// record that later CUPTI versions keep unchanged (new fields are appended), so the offsets of
/// the oldest supported struct are valid for newer ones too (pinned in the host's tests).
fn string_fields(kind: u32) -> &'static [usize] {
    const KERNEL: [usize; 1] = [offset_of!(ffi::CUpti_ActivityKernel10, name)];
    const MARKER: [usize; 2] =
        [offset_of!(ffi::CUpti_ActivityMarker2, name), offset_of!(ffi::CUpti_ActivityMarker2, domain)];
    const DEVICE: [usize; 1] = [offset_of!(ffi::CUpti_ActivityDevice5, name)];
    match kind {
        K::CUPTI_ACTIVITY_KIND_KERNEL | K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL => &KERNEL,
        K::CUPTI_ACTIVITY_KIND_MARKER => &MARKER,
        K::CUPTI_ACTIVITY_KIND_DEVICE => &DEVICE,
        _ => &[],
    }
}

/// State of the completion thread.
#[derive(Debug, Default)]
pub struct Framer {
    /// Pointer → hash of the text last sent for it.
    sent: HashMap<u64, u64>,
    /// (domain, cbid) whose name was sent.
    api_names: HashSet<(u32, u32)>,
}

fn text_hash(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &c| (h ^ c as u64).wrapping_mul(0x100_0000_01b3))
}

impl Framer {
    /// Frames one completed buffer: queues strings, API names, then the activity message.
    pub fn frame(&mut self, agent: &crate::Agent, buf: Buffer) {
        let ptr = buf.as_mut_ptr();
        let valid = buf.valid_bytes().len();
        let mut sizes: Vec<u16> = Vec::with_capacity(valid / 64);
        let mut strings = Entries::default();
        let mut names = Entries::default();
        // SAFETY: `ptr`/`valid` is the buffer CUPTI just completed, owned by `buf` for the call.
        unsafe {
            agent.lib.for_each_record(ptr, valid, |rec| {
                sizes.push(rec.len().min(u16::MAX as usize) as u16);
                let kind = read_u32(rec, 0);
                for &off in string_fields(kind) {
                    let p = read_u64(rec, off);
                    if p == 0 {
                        continue;
                    }
                    // SAFETY: CUPTI guarantees the field points to a NUL-terminated string that
                    // stays valid at least until the buffer is returned.
                    let text = crate::sys::c_str(p as *const std::os::raw::c_char);
                    let h = text_hash(text);
                    if self.sent.insert(p, h) != Some(h) {
                        strings.string(p, text);
                    }
                }
                if kind == K::CUPTI_ACTIVITY_KIND_RUNTIME || kind == K::CUPTI_ACTIVITY_KIND_DRIVER {
                    let domain =
                        if kind == K::CUPTI_ACTIVITY_KIND_RUNTIME { DOMAIN_RUNTIME } else { DOMAIN_DRIVER };
                    let cbid = read_u32(rec, 4);
                    if self.api_names.insert((domain as u32, cbid)) {
                        let name = agent.lib.callback_name(domain as u32, cbid).unwrap_or_default();
                        names.api_name(domain as u32, cbid, name.as_bytes());
                    }
                }
            });
        }
        let mut out = Vec::new();
        strings.put_strings(&mut out);
        names.put_api_names(&mut out);
        if !out.is_empty() {
            agent.core.channel.push(Chunk::Bytes(out));
        }
        let mut head = Vec::with_capacity(16 + sizes.len() * 2);
        wire::records::put_head(&mut head, &sizes, valid);
        agent.core.channel.push(Chunk::Records(head, buf));
    }
}

fn read_u32(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4).and_then(|s| s.try_into().ok()).map(u32::from_le_bytes).unwrap_or(0)
}

fn read_u64(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8).and_then(|s| s.try_into().ok()).map(u64::from_le_bytes).unwrap_or(0)
}

/// The framer, used only on CUPTI's completion thread (a lock in case CUPTI uses several).
pub static FRAMER: Mutex<Option<Framer>> = Mutex::new(None);
