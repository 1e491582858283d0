//! Reading [`MSG_STRINGS`](crate::MSG_STRINGS) and [`MSG_API_NAMES`](crate::MSG_API_NAMES)
//! payloads (a truncated tail is dropped).

use crate::Reader;

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
