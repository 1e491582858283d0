//! A fast, non-cryptographic hasher for maps keyed by ids, addresses and other small keys.
//!
//! The host and the plugins look up every record's ids in hash maps; the standard library's
//! SipHash costs more there than the rest of the record's handling. The keys come from the
//! profiled program and the host, not from an attacker, so SipHash's flood protection is not
//! needed on these paths. Use [`IdMap`] / [`IdSet`] like `HashMap` / `HashSet`, built with
//! `IdMap::default()`.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// `HashMap` with [`IdHasher`].
pub type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// `HashSet` with [`IdHasher`].
pub type IdSet<K> = HashSet<K, BuildHasherDefault<IdHasher>>;

/// The multiply-rotate hash used by rustc (FxHash).
#[derive(Debug, Default, Clone, Copy)]
pub struct IdHasher(u64);

const K: u64 = 0xf135_7aea_2e62_a9c5;

impl IdHasher {
    #[inline]
    fn add(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(26) ^ v).wrapping_mul(K);
    }
}

impl Hasher for IdHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(b));
        }
    }

    #[inline]
    fn write_u8(&mut self, v: u8) {
        self.add(u64::from(v));
    }

    #[inline]
    fn write_u32(&mut self, v: u32) {
        self.add(u64::from(v));
    }

    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.add(v);
    }

    #[inline]
    fn write_usize(&mut self, v: usize) {
        self.add(v as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0.rotate_left(26)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_and_sets_work_with_composite_keys() {
        let mut m: IdMap<(u32, u64), &str> = IdMap::default();
        m.insert((1, 2), "a");
        m.insert((2, 1), "b");
        assert_eq!(m.get(&(1, 2)), Some(&"a"));
        assert_eq!(m.get(&(2, 1)), Some(&"b"));
        let s: IdSet<Vec<u32>> = [vec![1, 2], vec![2, 1], vec![1, 2]].into_iter().collect();
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn nearby_ids_spread() {
        let h = |v: u64| {
            let mut x = IdHasher::default();
            x.write_u64(v);
            x.finish()
        };
        // hashbrown picks the bucket from the low bits and a tag from the top 7.
        let buckets: IdSet<u64> = (0..1024).map(|v| h(v) & 1023).collect();
        assert!(buckets.len() > 500, "consecutive ids share buckets: {}", buckets.len());
        let tags: IdSet<u64> = (0..1024).map(|v| h(v) >> 57).collect();
        assert!(tags.len() > 64, "consecutive ids share tags: {}", tags.len());
    }
}
