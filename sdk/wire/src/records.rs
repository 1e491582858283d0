//! The [`MSG_RECORDS`](crate::MSG_RECORDS) payload: `count u32, pad u32`, `count × u16` record
//! sizes, zero padding to 8 bytes, then the records back to back.

use crate::{begin_message, end_message, Reader, HEADER_BYTES, MSG_RECORDS};

/// Appends a record message holding `recs` (each at most 65535 bytes).
pub fn put(out: &mut Vec<u8>, recs: &[&[u8]]) {
    let at = begin_message(out, MSG_RECORDS);
    put_sizes(out, at, recs.iter().map(|r| r.len() as u16));
    for r in recs {
        out.extend_from_slice(r);
    }
    end_message(out, at);
}

/// Appends the head of a record message whose `body` bytes of records (of `sizes`, in order)
/// the caller sends right after it from its own buffer, without copying them here (an agent
/// handing a tracing library's buffer to the channel as it is).
pub fn put_head(out: &mut Vec<u8>, sizes: &[u16], body: usize) {
    let at = begin_message(out, MSG_RECORDS);
    put_sizes(out, at, sizes.iter().copied());
    // The length covers the records that follow the head in the stream.
    let len = (out.len() - at - 4 + body) as u32;
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
}

fn put_sizes(out: &mut Vec<u8>, at: usize, sizes: impl ExactSizeIterator<Item = u16>) {
    out.extend_from_slice(&(sizes.len() as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    for s in sizes {
        out.extend_from_slice(&s.to_le_bytes());
    }
    while (out.len() - at - HEADER_BYTES) % 8 != 0 {
        out.push(0);
    }
}

/// The records of a payload, in order (a truncated tail is dropped).
pub fn split(payload: &[u8]) -> Vec<&[u8]> {
    let mut r = Reader::new(payload);
    let n = r.u32() as usize;
    r.u32();
    let sizes: Vec<u16> = (0..n).map(|_| r.u16()).collect();
    r.align8();
    let mut out = Vec::with_capacity(n);
    for s in sizes {
        let rec = r.bytes(s as usize);
        if r.short {
            break;
        }
        out.push(rec);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_records_of_any_size() {
        let (a, b) = ([1u8; 3], [2u8; 64]);
        let mut m = Vec::new();
        put(&mut m, &[&a, &b]);
        let (msgs, _) = crate::split_messages(&m);
        assert_eq!(msgs[0].ty, MSG_RECORDS);
        assert_eq!(split(msgs[0].payload), vec![&a[..], &b[..]]);
        assert_eq!(split(&msgs[0].payload[..msgs[0].payload.len() - 1]), vec![&a[..]]);
    }

    #[test]
    fn a_head_followed_by_the_records_is_the_same_message() {
        let (a, b) = ([1u8; 3], [2u8; 64]);
        let mut whole = Vec::new();
        put(&mut whole, &[&a, &b]);
        let mut m = Vec::new();
        put_head(&mut m, &[3, 64], 67);
        m.extend_from_slice(&a);
        m.extend_from_slice(&b);
        assert_eq!(m, whole);
    }
}
