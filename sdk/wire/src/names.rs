//! Writing and reading [`MSG_STRINGS`](crate::MSG_STRINGS) and
//! [`MSG_API_NAMES`](crate::MSG_API_NAMES) payloads (`count u32`, then the entries; a
//! truncated tail is dropped when read). Every agent writes them with [`Entries`], every
//! decoder reads them with [`parse_strings`] and [`parse_api_names`].

use crate::{put_message, Reader, MSG_API_NAMES, MSG_STRINGS};

/// The text of the frame agents put above compile-time work (a compiler's autotuning and the
/// other launches it makes while it compiles), below the stack of the call that triggered the
/// compilation: sent like a Python frame's text ([`MSG_PY_FRAMES`](crate::MSG_PY_FRAMES)); the
/// host's outputs tell compile-time work from steady state by it.
pub const COMPILE_MARKER: &str = "[compile]";

/// The entries of one names message, counted as they are added.
#[derive(Debug, Default, Clone)]
pub struct Entries {
    count: u32,
    body: Vec<u8>,
}

impl Entries {
    /// Adds the text behind pointer `addr` (a [`MSG_STRINGS`] entry).
    pub fn string(&mut self, addr: u64, text: &[u8]) {
        self.body.extend_from_slice(&addr.to_le_bytes());
        self.body.extend_from_slice(&(text.len() as u32).to_le_bytes());
        self.body.extend_from_slice(text);
        self.count += 1;
    }

    /// Adds the name of API `id` of `domain` (a [`MSG_API_NAMES`] entry).
    pub fn api_name(&mut self, domain: u32, id: u32, name: &[u8]) {
        for v in [domain, id, name.len() as u32] {
            self.body.extend_from_slice(&v.to_le_bytes());
        }
        self.body.extend_from_slice(name);
        self.count += 1;
    }

    /// Entries added so far.
    pub fn len(&self) -> u32 {
        self.count
    }

    /// True when none were added.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Appends the strings message holding the entries to `out` (nothing when empty), and
    /// starts over.
    pub fn put_strings(&mut self, out: &mut Vec<u8>) {
        self.put(out, MSG_STRINGS);
    }

    /// Appends the API names message holding the entries to `out` (nothing when empty), and
    /// starts over.
    pub fn put_api_names(&mut self, out: &mut Vec<u8>) {
        self.put(out, MSG_API_NAMES);
    }

    fn put(&mut self, out: &mut Vec<u8>, ty: u8) {
        if self.count > 0 {
            put_message(out, ty, &[&self.count.to_le_bytes(), &self.body]);
        }
        self.count = 0;
        self.body.clear();
    }
}

/// `(address, text)` pairs: the text behind a pointer field of the records that follow.
pub fn parse_strings(payload: &[u8]) -> Vec<(u64, String)> {
    let mut r = Reader::new(payload);
    let n = r.u32();
    let mut out = Vec::new();
    for _ in 0..n {
        let (p, len) = (r.u64(), r.u32());
        let text = String::from_utf8_lossy(r.bytes(len as usize)).into_owned();
        if r.short {
            break;
        }
        out.push((p, text));
    }
    out
}

/// `(domain, api_id, name)` triples.
pub fn parse_api_names(payload: &[u8]) -> Vec<(u32, u32, String)> {
    let mut r = Reader::new(payload);
    let n = r.u32();
    let mut out = Vec::new();
    for _ in 0..n {
        let (domain, id, len) = (r.u32(), r.u32(), r.u32());
        let name = String::from_utf8_lossy(r.bytes(len as usize)).into_owned();
        if r.short {
            break;
        }
        out.push((domain, id, name));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_entries_read_back_and_an_empty_message_is_not_written() {
        let mut e = Entries::default();
        let mut out = Vec::new();
        e.put_strings(&mut out);
        assert!(out.is_empty());
        e.string(0x10, b"k1");
        e.string(0x20, b"kernel_two");
        e.put_strings(&mut out);
        e.api_name(3, 7, b"abc");
        e.put_api_names(&mut out);
        let (msgs, used) = crate::split_messages(&out);
        assert_eq!(used, out.len());
        assert_eq!((msgs[0].ty, msgs[1].ty), (MSG_STRINGS, MSG_API_NAMES));
        assert_eq!(parse_strings(msgs[0].payload), vec![(0x10, "k1".into()), (0x20, "kernel_two".into())]);
        assert_eq!(parse_api_names(msgs[1].payload), vec![(3, 7, "abc".into())]);
    }

    #[test]
    fn reads_strings_and_names_and_drops_a_truncated_tail() {
        let mut p = 2u32.to_le_bytes().to_vec();
        for (a, t) in [(0x10u64, "k1"), (0x20, "kernel_two")] {
            p.extend_from_slice(&a.to_le_bytes());
            p.extend_from_slice(&(t.len() as u32).to_le_bytes());
            p.extend_from_slice(t.as_bytes());
        }
        assert_eq!(parse_strings(&p), vec![(0x10, "k1".into()), (0x20, "kernel_two".into())]);
        assert_eq!(parse_strings(&p[..p.len() - 1]), vec![(0x10, "k1".into())]);
        let mut q = 1u32.to_le_bytes().to_vec();
        for v in [3u32, 7, 3] {
            q.extend_from_slice(&v.to_le_bytes());
        }
        q.extend_from_slice(b"abc");
        assert_eq!(parse_api_names(&q), vec![(3, 7, "abc".into())]);
    }
}
