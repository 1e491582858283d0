//! Clock conversion: turns timestamps of a source's own clock domain into the session clock
//! (`CLOCK_MONOTONIC` ns) from the paired readings the source reports ([`ClockSync`]).

use xpuprof_sdk::hash::IdMap;

use xpuprof_sdk::model::{ClockDomain, ClockSync};

/// A (source time, session time) reading.
type Pair = (u64, u64);

/// Conversion state for one source.
#[derive(Debug, Default)]
pub struct ClockMap {
    /// Per domain: the first and the latest pairing (source time, session time).
    pairs: IdMap<u32, (Pair, Pair)>,
    /// Timestamps that could not be converted (no pairing yet for their domain).
    pub unconvertible: u64,
}

impl ClockMap {
    /// Records a pairing.
    pub fn sync(&mut self, s: &ClockSync) {
        let p = (s.source_time, s.session_time);
        self.pairs.entry(s.domain.0).and_modify(|e| e.1 = p).or_insert((p, p));
    }

    /// Converts `t` from `domain` to the session clock: a straight line through the first and
    /// latest pairings (drift-corrected), or an offset when there is only one.
    pub fn convert(&mut self, domain: ClockDomain, t: u64) -> u64 {
        if domain == ClockDomain::SESSION {
            return t;
        }
        let Some(&((s0, h0), (s1, h1))) = self.pairs.get(&domain.0) else {
            self.unconvertible += 1;
            return t;
        };
        if s1 == s0 {
            return (t as i128 + h0 as i128 - s0 as i128).max(0) as u64;
        }
        let slope = (h1 as f64 - h0 as f64) / (s1 as f64 - s0 as f64);
        let v = h0 as f64 + (t as f64 - s0 as f64) * slope;
        v.max(0.0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_then_drift() {
        let mut c = ClockMap::default();
        let d = ClockDomain(7);
        assert_eq!(c.convert(d, 5), 5);
        assert_eq!(c.unconvertible, 1);
        c.sync(&ClockSync { domain: d, source_time: 1000, session_time: 5000 });
        assert_eq!(c.convert(d, 1100), 5100);
        c.sync(&ClockSync { domain: d, source_time: 2000, session_time: 6002 });
        assert_eq!(c.convert(d, 3000), 7004);
        assert_eq!(c.convert(ClockDomain::SESSION, 42), 42);
    }
}
