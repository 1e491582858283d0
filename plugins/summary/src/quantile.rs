//! Duration statistics with bounded memory: exact count/total/min/max, and percentiles that are
//! exact up to a sample cap and within 0.4 % relative error after it.
//!
//! # Method
//!
//! Each series keeps its first `cap` values (default 10 000, config key
//! `exact_percentile_samples`). While a series has at most `cap` values its percentiles are
//! exact. When value `cap + 1` arrives, the values move into a log-linear histogram and the
//! vector is freed: values below 256 ns get one bucket each; above, every power of two is split
//! into 128 equal buckets, so a bucket spans at most 1/128 of its lower bound. A percentile read
//! from the histogram is the midpoint of the bucket that holds the wanted rank, clamped to the
//! exact min and max, so it is within **1/256 (≈ 0.4 %) relative error** of the exact value.
//! The histogram is sparse (a map from bucket to count); it never holds more than 7 424 buckets
//! whatever the run length.
//!
//! Percentiles use the nearest-rank definition: the p-th percentile of n sorted values is the
//! value at 1-based rank `ceil(p/100 * n)` (at least 1).

use xpuprof_sdk::hash::IdMap;

/// Mantissa bits of the log-linear histogram: 2^7 = 128 buckets per power of two.
const PRECISION_BITS: u32 = 7;
/// Values below this get one bucket each.
const LINEAR_LIMIT: u64 = 1 << (PRECISION_BITS + 1);

/// Statistics of one series of durations (ns).
#[derive(Debug, Clone)]
pub struct DurStats {
    count: u64,
    total: u64,
    min: u64,
    max: u64,
    exact: Vec<u64>,
    hist: Option<IdMap<u16, u64>>,
}

impl Default for DurStats {
    fn default() -> Self {
        Self { count: 0, total: 0, min: u64::MAX, max: 0, exact: Vec::new(), hist: None }
    }
}

/// The numbers reported for one series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DurSummary {
    /// Number of values.
    pub count: u64,
    /// Sum (ns).
    pub total: u64,
    /// Mean, rounded down (ns).
    pub mean: u64,
    /// Smallest value (ns).
    pub min: u64,
    /// Largest value (ns).
    pub max: u64,
    /// Median (ns).
    pub p50: u64,
    /// 99th percentile (ns).
    pub p99: u64,
    /// True when the percentiles are exact (the series stayed under the sample cap).
    pub exact: bool,
}

impl DurStats {
    /// Adds one value; `cap` is the number of values kept exactly.
    #[inline]
    pub fn add(&mut self, v: u64, cap: usize) {
        self.count += 1;
        self.total = self.total.saturating_add(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        match &mut self.hist {
            Some(h) => *h.entry(bucket_of(v)).or_insert(0) += 1,
            None if self.exact.len() < cap => self.exact.push(v),
            None => self.spill(v),
        }
    }

    /// Moves the exact values into the histogram (the cap was reached) and adds `v`.
    fn spill(&mut self, v: u64) {
        let mut h = IdMap::default();
        for x in self.exact.drain(..).chain(std::iter::once(v)) {
            *h.entry(bucket_of(x)).or_insert(0) += 1;
        }
        self.exact = Vec::new();
        self.hist = Some(h);
    }

    /// Number of values added.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Sum of the values added.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The reported numbers (sorts the kept values; call once at the end).
    pub fn summary(&mut self) -> DurSummary {
        if self.count == 0 {
            return DurSummary { exact: true, ..DurSummary::default() };
        }
        let (p50, p99) = match &self.hist {
            None => {
                self.exact.sort_unstable();
                (nearest_rank(&self.exact, 50.0), nearest_rank(&self.exact, 99.0))
            }
            Some(h) => {
                let mut buckets: Vec<(u16, u64)> = h.iter().map(|(b, c)| (*b, *c)).collect();
                buckets.sort_unstable();
                let at = |p| hist_rank(&buckets, rank(p, self.count)).clamp(self.min, self.max);
                (at(50.0), at(99.0))
            }
        };
        DurSummary {
            count: self.count,
            total: self.total,
            mean: self.total / self.count,
            min: self.min,
            max: self.max,
            p50,
            p99,
            exact: self.hist.is_none(),
        }
    }
}

/// 1-based nearest rank of percentile `p` among `n` values.
fn rank(p: f64, n: u64) -> u64 {
    ((p / 100.0 * n as f64).ceil() as u64).clamp(1, n)
}

/// Nearest-rank percentile of sorted values.
fn nearest_rank(sorted: &[u64], p: f64) -> u64 {
    sorted[(rank(p, sorted.len() as u64) - 1) as usize]
}

/// The representative value of the bucket holding 1-based rank `r`.
fn hist_rank(buckets: &[(u16, u64)], r: u64) -> u64 {
    let mut seen = 0;
    for &(b, c) in buckets {
        seen += c;
        if seen >= r {
            return bucket_mid(b);
        }
    }
    buckets.last().map_or(0, |&(b, _)| bucket_mid(b))
}

/// Histogram bucket of `v` (monotone in `v`).
#[inline]
pub fn bucket_of(v: u64) -> u16 {
    if v < LINEAR_LIMIT {
        return v as u16;
    }
    let shift = 63 - v.leading_zeros() - PRECISION_BITS;
    let mantissa = v >> shift;
    ((shift << PRECISION_BITS) as u64 + mantissa) as u16
}

/// Lower bound and width of bucket `b`.
fn bucket_range(b: u16) -> (u64, u64) {
    let b = u64::from(b);
    if b < LINEAR_LIMIT {
        return (b, 1);
    }
    let shift = (b >> PRECISION_BITS) - 1;
    let mantissa = b - (shift << PRECISION_BITS);
    (mantissa << shift, 1 << shift)
}

/// Midpoint of bucket `b`.
fn bucket_mid(b: u16) -> u64 {
    let (lo, width) = bucket_range(b);
    lo + (width - 1) / 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotone_and_contain_their_values() {
        for w in (0..5000u64).collect::<Vec<_>>().windows(2) {
            assert!(bucket_of(w[0]) <= bucket_of(w[1]));
        }
        for v in (0..5000u64).chain((0..64).map(|s| (1u64 << s) | (12345 % (1u64 << s)))) {
            let b = bucket_of(v);
            let (lo, w) = bucket_range(b);
            assert!(lo <= v && v - lo < w, "v={v} b={b} lo={lo} w={w}");
            assert!(w == 1 || w * 128 <= lo, "bucket too wide for v={v}");
        }
        assert!(bucket_of(u64::MAX) < 7424);
    }

    #[test]
    fn exact_percentiles_use_nearest_rank() {
        let mut s = DurStats::default();
        for v in 1..=10 {
            s.add(v * 100, 100);
        }
        let r = s.summary();
        assert_eq!((r.count, r.total, r.mean, r.min, r.max), (10, 5500, 550, 100, 1000));
        assert_eq!((r.p50, r.p99, r.exact), (500, 1000, true));
    }

    #[test]
    fn histogram_percentiles_stay_within_error_bound() {
        let mut s = DurStats::default();
        for v in 1..=100_000u64 {
            s.add(v * 37, 1000);
        }
        let r = s.summary();
        assert!(!r.exact);
        let (e50, e99) = (50_000.0 * 37.0, 99_000.0 * 37.0);
        assert!((r.p50 as f64 - e50).abs() / e50 <= 1.0 / 256.0, "p50 {}", r.p50);
        assert!((r.p99 as f64 - e99).abs() / e99 <= 1.0 / 256.0, "p99 {}", r.p99);
        assert_eq!((r.min, r.max, r.count), (37, 3_700_000, 100_000));
    }
}
