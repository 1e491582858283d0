//! Clock conversion: turns timestamps of a source's own clock domains into the session clock
//! (`CLOCK_MONOTONIC` ns).
//!
//! A source declares a domain with a [`ClockDomainDef`] (its tick rate, and how many bits of a
//! timestamp are valid before it wraps) and pairs it with the session clock through
//! [`ClockSync`] records. Timestamps of a domain that wraps are unwrapped first (each one is
//! taken as the value nearest the domain's previous one); then they are mapped by the straight
//! line through the first and latest pairings (drift-corrected), or, with a single pairing or
//! pairings of a declared rate less than 50 ms apart, by the latest one's offset and the
//! declared tick rate. A record whose domain has no pairing yet cannot be
//! converted: it is counted and not delivered, never passed through with a foreign timestamp.

use xpuprof_sdk::hash::IdMap;

use xpuprof_sdk::model::{ClockDomain, ClockDomainDef, ClockSync};

/// A (source time, session time) reading, source time unwrapped.
type Pair = (u64, u64);

const NANOS_PER_SECOND: u64 = 1_000_000_000;

/// Pairings of a domain with a declared tick rate closer than this (session ns) give the rate
/// they measure no weight: the declared rate is used from the latest pairing.
const MIN_DRIFT_SPAN_NS: u64 = 50_000_000;

/// What the host knows about one domain.
#[derive(Debug, Default, Clone)]
struct Domain {
    /// The source declared the domain ([`ClockDomainDef`]), so its rate is known: its ticks
    /// per second, or nanoseconds.
    declared: bool,
    /// Ticks per second (0 = nanoseconds).
    ticks_per_second: u64,
    /// Valid bits before the timestamp wraps (0 or 64 = never).
    valid_bits: u8,
    /// The last unwrapped value, to unwrap the next one against.
    last: Option<u64>,
    /// The first and the latest pairing.
    pairs: Option<(Pair, Pair)>,
}

impl Domain {
    /// The unwrapped value of raw timestamp `t`: the value with `t`'s low bits nearest the
    /// previous one.
    fn unwrap(&mut self, t: u64) -> u64 {
        let bits = u32::from(self.valid_bits);
        if bits == 0 || bits >= 64 {
            return t;
        }
        let span = 1u64 << bits;
        let t = t & (span - 1);
        let Some(last) = self.last else {
            self.last = Some(t);
            return t;
        };
        let half = span / 2;
        let mut v = (last & !(span - 1)) | t;
        if v.saturating_add(half) < last {
            v = v.saturating_add(span);
        } else if v > last.saturating_add(half) && v >= span {
            v -= span;
        }
        self.last = Some(v.max(last));
        v
    }

    /// Ticks to nanoseconds at the declared rate.
    fn ticks_to_ns(&self, ticks: i128) -> i128 {
        match self.ticks_per_second {
            0 | NANOS_PER_SECOND => ticks,
            tps => ticks * i128::from(NANOS_PER_SECOND) / i128::from(tps),
        }
    }

    fn convert(&mut self, t: u64) -> Option<u64> {
        let t = self.unwrap(t);
        let ((s0, h0), (s1, h1)) = self.pairs?;
        let v = if s1 == s0 {
            i128::from(h0) + self.ticks_to_ns(i128::from(t) - i128::from(s0))
        } else if self.declared && h1.saturating_sub(h0) < MIN_DRIFT_SPAN_NS {
            // Pairs this close measure the rate worse than the declared one (a tick of
            // quantisation, or the tens of ns a pairing's reads may be apart, is a large share
            // of the span: 100 ns over 2 ms made a 2 ms kernel 0.1 µs long or short): the
            // latest offset, the declared rate.
            i128::from(h1) + self.ticks_to_ns(i128::from(t) - i128::from(s1))
        } else {
            let slope = (h1 as f64 - h0 as f64) / (s1 as f64 - s0 as f64);
            (h0 as f64 + (t as f64 - s0 as f64) * slope) as i128
        };
        Some(v.clamp(0, i128::from(u64::MAX)) as u64)
    }
}

/// Conversion state for one source.
#[derive(Debug, Default)]
pub struct ClockMap {
    domains: IdMap<u32, Domain>,
    /// Records not delivered because their domain had no pairing.
    pub unconvertible: u64,
}

impl ClockMap {
    /// Records a domain's declaration (rate, wrap).
    pub fn define(&mut self, d: &ClockDomainDef) {
        let e = self.domains.entry(d.domain.0).or_default();
        e.declared = true;
        e.ticks_per_second = d.ticks_per_second;
        e.valid_bits = d.valid_bits;
    }

    /// Records a pairing.
    pub fn sync(&mut self, s: &ClockSync) {
        let d = self.domains.entry(s.domain.0).or_default();
        let p = (d.unwrap(s.source_time), s.session_time);
        d.pairs = Some(match d.pairs {
            Some((first, _)) => (first, p),
            None => (p, p),
        });
    }

    /// Converts `t` from `domain` to the session clock; `None` when the domain has no pairing.
    pub fn convert(&mut self, domain: ClockDomain, t: u64) -> Option<u64> {
        if domain == ClockDomain::SESSION {
            return Some(t);
        }
        self.domains.get_mut(&domain.0)?.convert(t)
    }

    /// Converts every timestamp of one record from `*clock` and sets `*clock` to the session
    /// clock; false (the record is counted in [`ClockMap::unconvertible`]) when it cannot be.
    pub fn to_session(&mut self, clock: &mut ClockDomain, times: &mut [&mut u64]) -> bool {
        if *clock == ClockDomain::SESSION {
            return true;
        }
        let mut converted = [0u64; 4];
        for (i, t) in times.iter().enumerate() {
            match self.convert(*clock, **t) {
                Some(v) => converted[i.min(3)] = v,
                None => {
                    self.unconvertible += 1;
                    return false;
                }
            }
        }
        for (t, v) in times.iter_mut().zip(converted) {
            **t = v;
        }
        *clock = ClockDomain::SESSION;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_then_drift() {
        let mut c = ClockMap::default();
        let d = ClockDomain(7);
        assert_eq!(c.convert(d, 5), None);
        c.sync(&ClockSync::new(d, 1000, 5000));
        assert_eq!(c.convert(d, 1100), Some(5100));
        c.sync(&ClockSync::new(d, 2000, 6002));
        assert_eq!(c.convert(d, 3000), Some(7004));
        assert_eq!(c.convert(ClockDomain::SESSION, 42), Some(42));
    }

    #[test]
    fn declared_tick_rate_scales_a_single_pairing() {
        let mut c = ClockMap::default();
        let d = ClockDomain(3);
        c.define(&ClockDomainDef::default().domain(d).ticks_per_second(19_200_000));
        c.sync(&ClockSync::new(d, 1_000, 1_000_000));
        // 192 ticks at 19.2 MHz are 10 µs.
        assert_eq!(c.convert(d, 1_192), Some(1_010_000));
    }

    #[test]
    fn close_pairings_of_a_declared_rate_keep_that_rate() {
        let mut c = ClockMap::default();
        let d = ClockDomain(5);
        c.define(&ClockDomainDef::default().domain(d).ticks_per_second(12_500_000));
        c.sync(&ClockSync::new(d, 1_000, 1_000_000));
        // 2 µs later, with the second pairing's ticks quantised one tick short: its 1.04x
        // "rate" is not used, the declared 80 ns per tick is, from the latest pairing.
        c.sync(&ClockSync::new(d, 1_024, 1_002_000));
        assert_eq!(c.convert(d, 1_124), Some(1_010_000));
    }

    #[test]
    fn close_pairings_of_a_declared_nanosecond_domain_keep_durations_exact() {
        // A domain declared in nanoseconds (ROCr's system clock), paired at the agent's start
        // and 2 ms later at its flush, the second pairing's midpoint 100 ns off (the reads of a
        // loaded machine): a 2 ms kernel stays 2 ms long, not 2000.1 µs.
        let mut c = ClockMap::default();
        let d = ClockDomain(6);
        c.define(&ClockDomainDef::default().domain(d));
        c.sync(&ClockSync::new(d, 10_000_000, 1_000_000));
        c.sync(&ClockSync::new(d, 12_000_000, 3_000_100));
        let (start, end) = (c.convert(d, 10_500_000).unwrap(), c.convert(d, 12_500_000).unwrap());
        assert_eq!((start, end - start), (1_500_100, 2_000_000));
        // 50 ms and more apart, the measured rate corrects the drift.
        c.sync(&ClockSync::new(d, 60_000_000, 51_000_100));
        assert_eq!(c.convert(d, 60_000_000), Some(51_000_100));
        assert_eq!(c.convert(d, 35_000_000), Some(26_000_050));
    }

    #[test]
    fn wrapping_timestamps_are_unwrapped() {
        let mut c = ClockMap::default();
        let d = ClockDomain(4);
        c.define(&ClockDomainDef::default().domain(d).valid_bits(8));
        c.sync(&ClockSync::new(d, 250, 10_000));
        // 250, 254, then 3 after the wrap: 259; then 255 (slightly out of order, before it).
        assert_eq!(c.convert(d, 254), Some(10_004));
        assert_eq!(c.convert(d, 3), Some(10_009));
        assert_eq!(c.convert(d, 255), Some(10_005));
        assert_eq!(c.convert(d, 3 + 256 * 7), Some(10_009), "bits above the valid ones are ignored");
    }

    #[test]
    fn records_without_a_pairing_are_counted_not_passed_through() {
        let mut c = ClockMap::default();
        let mut clock = ClockDomain(9);
        let (mut a, mut b) = (5u64, 6u64);
        assert!(!c.to_session(&mut clock, &mut [&mut a, &mut b]));
        assert_eq!((c.unconvertible, a, b, clock), (1, 5, 6, ClockDomain(9)));
        c.sync(&ClockSync::new(clock, 0, 100));
        assert!(c.to_session(&mut clock, &mut [&mut a, &mut b]));
        assert_eq!((a, b, clock), (105, 106, ClockDomain::SESSION));
    }
}
