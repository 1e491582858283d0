//! The correlator's table of joinable launches, built for a million launches per second.
//!
//! Two things made the first version (one hash map, per-key expiry queues) slow at that rate,
//! both cache misses: every launch forgot the launch [`MAX_USED`](super::correlator) launches
//! older than itself (a lookup in a cold part of a 10 MB table), and the hash spread
//! consecutive correlation ids over the whole table. Here:
//! - launches live in two *generations*; a new launch goes into the young one, and when that
//!   one is full (or old enough) the old generation is dropped whole (no per-key removal) and the
//!   young one becomes old. Only launches nothing has used yet (work in flight) are carried
//!   over, one by one, until their own lifetime ends;
//! - the key's hash keeps consecutive ids of one process in neighbouring buckets ([`KeyHasher`]),
//!   so a launch, its API call and its device work touch the same few cache lines.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::time::{Duration, Instant};

use xpuprof_sdk::model::{CorrelationKey, LaunchRef};

/// One joinable launch.
#[derive(Debug, Clone, Copy)]
pub struct Launch {
    /// What device work joined to it carries.
    pub r: LaunchRef,
    /// Whether `r.stack` came from a launch site (else only the API call was seen).
    pub has_stack: bool,
    /// Whether device work was joined to it.
    pub used: bool,
    /// The source whose stack `r.stack` is.
    pub stack_source: usize,
    /// When it was registered.
    pub inserted: Instant,
}

/// Hashes a [`CorrelationKey`] so that consecutive ids of one (backend, process) land in
/// consecutive buckets: the low bits are the id plus a mix of the backend and the process, the
/// top seven bits (hashbrown's tag byte) a mix of the id, so probing still tells keys apart.
#[derive(Debug, Default, Clone, Copy)]
pub struct KeyHasher {
    salt: u64,
    id: u64,
}

const MIX: u64 = 0x9e37_79b9_7f4a_7c15;
const TAG: u64 = 0x7f << 57;

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.salt = (self.salt ^ u64::from(b)).wrapping_mul(MIX);
        }
    }

    #[inline]
    fn write_u32(&mut self, v: u32) {
        // The backend and the process.
        self.salt = (self.salt.rotate_left(29) ^ u64::from(v)).wrapping_mul(MIX);
    }

    #[inline]
    fn write_u64(&mut self, v: u64) {
        // The id.
        self.id = v;
    }

    #[inline]
    fn finish(&self) -> u64 {
        let low = self.id.wrapping_add(self.salt) & !TAG;
        low | (self.id.wrapping_mul(MIX) & TAG)
    }
}

type Map = HashMap<CorrelationKey, Launch, BuildHasherDefault<KeyHasher>>;

/// One generation: its launches and when it started.
#[derive(Debug)]
struct Generation {
    map: Map,
    /// Launches registered in it (those carried over from the previous one not counted).
    fresh: usize,
    started: Instant,
}

impl Generation {
    fn new(now: Instant) -> Self {
        Self { map: Map::default(), fresh: 0, started: now }
    }

    /// A generation with room for `launches` (a full one): it never grows by rehashing.
    fn with_room(launches: usize, now: Instant) -> Self {
        Self { map: Map::with_capacity_and_hasher(launches, Default::default()), fresh: 0, started: now }
    }
}

/// What a rotation or the end forgot, for the correlator's counters.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Forgotten {
    /// Launches with a stack that no device work was joined to.
    pub unused_with_stack: u64,
}

/// The table: see the module docs.
#[derive(Debug)]
pub struct LaunchTable {
    young: Generation,
    old: Generation,
    /// Fresh launches per generation.
    per_generation: usize,
    /// A generation older than this is retired at the next [`LaunchTable::tick`].
    generation_age: Duration,
    /// A launch nothing used is forgotten once older than this.
    unused_lifetime: Duration,
}

impl LaunchTable {
    /// A table keeping between one and two generations of `per_generation` launches each, a
    /// generation at most `generation_age` (after that, at least that long), and unused
    /// launches until `unused_lifetime`.
    pub fn new(per_generation: usize, generation_age: Duration, unused_lifetime: Duration) -> Self {
        let now = Instant::now();
        // Buckets are reserved (address space: untouched pages cost nothing) so that neither
        // map rehashes while the first generations fill; after that, each rotation hands the
        // drained map on with its buckets.
        let room = per_generation.clamp(1, 1 << 20);
        Self {
            young: Generation::with_room(room, now),
            old: Generation::with_room(room, now),
            per_generation: per_generation.max(1),
            generation_age,
            unused_lifetime,
        }
    }

    /// Launches kept now.
    pub fn len(&self) -> usize {
        self.young.map.len() + self.old.map.len()
    }

    /// Whether no launch is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The launch of `key`.
    #[inline]
    pub fn get(&self, key: &CorrelationKey) -> Option<&Launch> {
        self.young.map.get(key).or_else(|| self.old.map.get(key))
    }

    /// The launch of `key`, to update.
    #[inline]
    pub fn get_mut(&mut self, key: &CorrelationKey) -> Option<&mut Launch> {
        match self.young.map.get_mut(key) {
            Some(l) => Some(l),
            None => self.old.map.get_mut(key),
        }
    }

    /// Marks the launch of `key` used and returns it. A launch of the old generation moves to
    /// the young one: it stays joinable one to two generations after its last use (the other
    /// nodes of a graph launch, device work of a deep queue).
    #[inline]
    pub fn use_launch(&mut self, key: &CorrelationKey) -> Option<Launch> {
        if let Some(l) = self.young.map.get_mut(key) {
            l.used = true;
            return Some(*l);
        }
        let mut l = self.old.map.remove(key)?;
        l.used = true;
        self.young.map.insert(*key, l);
        Some(l)
    }

    /// Registers a new launch (`key` must not be kept yet); retires the old generation when the
    /// young one is full. `is_recording` tells launches kept elsewhere for the whole session
    /// (they are not counted as unused when forgotten here).
    pub fn insert(
        &mut self,
        key: CorrelationKey,
        l: Launch,
        now: Instant,
        is_recording: impl Fn(&CorrelationKey) -> bool,
    ) -> Forgotten {
        self.young.map.insert(key, l);
        self.young.fresh += 1;
        if self.young.fresh >= self.per_generation {
            self.rotate(now, is_recording)
        } else {
            Forgotten::default()
        }
    }

    /// Forgets `key` at once.
    pub fn remove(&mut self, key: &CorrelationKey) -> Option<Launch> {
        self.young.map.remove(key).or_else(|| self.old.map.remove(key))
    }

    /// Periodic work: retires the old generation once the young one is older than the
    /// generation age (so at a low launch rate a used launch stays joinable one to two ages).
    pub fn tick(&mut self, now: Instant, is_recording: impl Fn(&CorrelationKey) -> bool) -> Forgotten {
        if now.saturating_duration_since(self.young.started) > self.generation_age {
            self.rotate(now, is_recording)
        } else {
            Forgotten::default()
        }
    }

    /// Drops the old generation, carrying its unused launches that are still within their
    /// lifetime into the young one, which becomes the old one.
    fn rotate(&mut self, now: Instant, is_recording: impl Fn(&CorrelationKey) -> bool) -> Forgotten {
        let mut gone = Forgotten::default();
        let mut next = std::mem::replace(&mut self.old, Generation::new(now));
        for (key, l) in next.map.drain() {
            if l.used {
                continue;
            }
            if now.saturating_duration_since(l.inserted) <= self.unused_lifetime {
                self.young.map.insert(key, l);
            } else if l.has_stack && !is_recording(&key) {
                gone.unused_with_stack += 1;
            }
        }
        // The drained map keeps its buckets: it becomes the next young generation.
        next.fresh = 0;
        next.started = now;
        self.old = std::mem::replace(&mut self.young, next);
        gone
    }

    /// Forgets everything (the end of the session).
    pub fn clear(&mut self, is_recording: impl Fn(&CorrelationKey) -> bool) -> Forgotten {
        let mut gone = Forgotten::default();
        for (key, l) in self.young.map.drain().chain(self.old.map.drain()) {
            if !l.used && l.has_stack && !is_recording(&key) {
                gone.unused_with_stack += 1;
            }
        }
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;
    use xpuprof_sdk::model::{backend, Correlation};

    fn key(pid: u32, id: u64) -> CorrelationKey {
        CorrelationKey::new(pid, Correlation { backend: backend::TEST, id })
    }

    fn launch(now: Instant) -> Launch {
        Launch { r: LaunchRef::default(), has_stack: true, used: false, stack_source: 0, inserted: now }
    }

    #[test]
    fn consecutive_ids_hash_to_consecutive_buckets_with_distinct_tags() {
        let b = BuildHasherDefault::<KeyHasher>::default();
        let h = |k: CorrelationKey| b.hash_one(k);
        let (a, c) = (h(key(7, 100)), h(key(7, 101)));
        assert_eq!((c & !TAG).wrapping_sub(a & !TAG), 1, "neighbouring buckets");
        assert_ne!(a & TAG, c & TAG, "different tags");
        assert_ne!(h(key(7, 100)) & !TAG, h(key(8, 100)) & !TAG, "processes apart");
    }

    #[test]
    fn used_launches_go_after_two_generations_and_unused_ones_stay_their_lifetime() {
        let t = Instant::now();
        let mut tab = LaunchTable::new(4, Duration::from_secs(5), Duration::from_secs(60));
        let never = |_: &CorrelationKey| false;
        tab.insert(key(1, 0), launch(t), t, never);
        for id in 1..=20 {
            tab.insert(key(1, id), launch(t), t, never);
            tab.use_launch(&key(1, id));
        }
        assert!(tab.len() <= 2 * 4 + 1, "{}", tab.len());
        assert!(tab.get(&key(1, 0)).is_some(), "unused: work in flight, kept");
        assert!(tab.get(&key(1, 20)).is_some() && tab.get(&key(1, 1)).is_none());
        // A launch used again from the old generation moves to the young one.
        assert!(tab.old.map.contains_key(&key(1, 17)));
        assert!(tab.use_launch(&key(1, 17)).is_some_and(|l| l.used));
        assert!(tab.young.map.contains_key(&key(1, 17)) && !tab.old.map.contains_key(&key(1, 17)));
        // Time-based: two ticks past the age drop the rest but for the unused one, until its
        // own lifetime is over, when it is counted.
        let later = t + Duration::from_secs(6);
        tab.tick(later, never);
        tab.tick(later + Duration::from_secs(6), never);
        assert_eq!(tab.len(), 1);
        let end = t + Duration::from_secs(61);
        let gone = tab.tick(end, never).unused_with_stack
            + tab.tick(end + Duration::from_secs(6), never).unused_with_stack;
        assert_eq!((gone, tab.len()), (1, 0));
    }
}
