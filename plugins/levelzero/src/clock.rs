//! Device time to host time: Level Zero kernel timestamps are device ticks that wrap at the
//! device's `kernelTimestampValidBits`. Each device's [`DeviceClock`] unwraps them against the
//! latest `zeDeviceGetGlobalTimestamps` pair and converts them to `CLOCK_MONOTONIC_RAW` ns with
//! the rate measured between the first and latest pairs (the nominal tick rate until two pairs
//! are far enough apart). The host's clock service then takes `CLOCK_MONOTONIC_RAW` to the
//! session clock from the agent's RAW/MONOTONIC pairs.

/// One device's clock.
#[derive(Debug, Clone)]
pub struct DeviceClock {
    /// Nominal ticks per second.
    pub tick_hz: u64,
    /// Width of kernel timestamps.
    pub valid_bits: u32,
    /// First and latest (full device ticks, CLOCK_MONOTONIC_RAW ns) pairs.
    pairs: Option<((u64, u64), (u64, u64))>,
}

/// Pairs closer than this (ns of host time) give the nominal rate, not a measured one.
const MIN_SPAN_NS: u64 = 50_000_000;

impl DeviceClock {
    /// A clock with the device's properties and no pair yet.
    pub fn new(tick_hz: u64, valid_bits: u32) -> Self {
        Self { tick_hz: tick_hz.max(1), valid_bits: valid_bits.clamp(1, 64), pairs: None }
    }

    /// Adds a `zeDeviceGetGlobalTimestamps` pair.
    pub fn pair(&mut self, ticks: u64, raw: u64) {
        self.pairs = Some(match self.pairs {
            None => ((ticks, raw), (ticks, raw)),
            Some((first, _)) => (first, (ticks, raw)),
        });
    }

    /// The full tick value of `masked` nearest to `reference`.
    pub fn unwrap(&self, masked: u64, reference: u64) -> u64 {
        if self.valid_bits >= 64 {
            return masked;
        }
        let period = 1u64 << self.valid_bits;
        let mask = period - 1;
        let base = (reference & !mask) | (masked & mask);
        let half = period / 2;
        if base > reference && base - reference > half {
            base.wrapping_sub(period)
        } else if base < reference && reference - base > half {
            base.wrapping_add(period)
        } else {
            base
        }
    }

    /// `CLOCK_MONOTONIC_RAW` ns of device timestamp `masked`, or `None` before the first pair.
    pub fn to_raw(&self, masked: u64) -> Option<u64> {
        let ((t0, r0), (t1, r1)) = self.pairs?;
        let full = self.unwrap(masked, t1);
        let d = full as i128 - t1 as i128;
        let ns = if r1 - r0 >= MIN_SPAN_NS && t1 > t0 {
            d * (r1 - r0) as i128 / (t1 - t0) as i128
        } else {
            d * 1_000_000_000 / self.tick_hz as i128
        };
        u64::try_from(r1 as i128 + ns).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwraps_across_the_wrap_both_ways() {
        let c = DeviceClock::new(1_000_000_000, 32);
        let near = (1u64 << 32) + 10; // the reference just after a wrap
        assert_eq!(c.unwrap(0xffff_fff0, near), 0xffff_fff0);
        assert_eq!(c.unwrap(20, near), (1 << 32) + 20);
        assert_eq!(c.unwrap(5, (1 << 32) - 3), (1 << 32) + 5);
    }

    #[test]
    fn converts_ticks_with_the_nominal_then_measured_rate() {
        let mut c = DeviceClock::new(12_500_000, 32); // 80 ns per tick
        assert_eq!(c.to_raw(5), None);
        c.pair(1_000, 1_000_000);
        assert_eq!(c.to_raw(1_100), Some(1_008_000));
        // 1 s later, the device ran 0.1% fast: the measured rate wins.
        c.pair(1_000 + 12_512_500, 1_001_000_000);
        assert_eq!(c.to_raw(1_000 + 12_512_500 + 125_125), Some(1_001_000_000 + 10_000_000));
    }

    #[test]
    fn converts_a_kernel_that_straddles_the_wrap() {
        let mut c = DeviceClock::new(1_000_000_000, 32);
        c.pair((1 << 32) - 100, 5_000);
        let start = c.to_raw((1 << 32) - 50).unwrap();
        let end = c.to_raw(50).unwrap();
        assert_eq!(end - start, 100);
    }
}
