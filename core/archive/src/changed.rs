//! Which columns of an event differ from their predictions: the archive writer's inner loop,
//! run over every column of every event (about fifty for a kernel).
//!
//! Compared four columns at a time with AVX2 where the CPU has it (one compare and one mask
//! move per four columns), eight at a time in plain code otherwise; both give the same bits.

use xpuprof_sdk::codec::columns::MAX_COLUMNS;

/// A bit per column `i < n` (`n <= 64`) where `values[i] != predicted[i]`.
#[inline]
pub fn changed_columns(values: &[u64; MAX_COLUMNS], predicted: &[u64; MAX_COLUMNS], n: usize) -> u64 {
    let all = {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU supports AVX2, checked just above.
                unsafe { avx2(values, predicted, n) }
            } else {
                portable(values, predicted, n)
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            portable(values, predicted, n)
        }
    };
    // The bits of the slots past the event's columns (stale values) are dropped.
    all & u64::MAX.checked_shr(64 - n as u32).unwrap_or(0)
}

/// Eight columns at a time, without branches; bits past `n` may be set.
#[inline]
fn portable(values: &[u64; MAX_COLUMNS], predicted: &[u64; MAX_COLUMNS], n: usize) -> u64 {
    let mut changed = 0u64;
    for (c, (v8, p8)) in values.chunks_exact(8).zip(predicted.chunks_exact(8)).take(n.div_ceil(8)).enumerate()
    {
        let mut bits = 0u64;
        for j in 0..8 {
            bits |= u64::from(v8[j] != p8[j]) << j;
        }
        changed |= bits << (8 * c);
    }
    changed
}

/// Four columns at a time; bits past `n` may be set.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2(values: &[u64; MAX_COLUMNS], predicted: &[u64; MAX_COLUMNS], n: usize) -> u64 {
    use std::arch::x86_64::{
        __m256i, _mm256_castsi256_pd, _mm256_cmpeq_epi64, _mm256_loadu_si256, _mm256_movemask_pd,
    };
    let mut equal = 0u64;
    for q in 0..n.div_ceil(4) {
        // SAFETY: q < 16 (n <= 64), so the four u64 at 4q..4q+4 lie within both 64-element
        // arrays; unaligned loads need no alignment.
        let eq = unsafe {
            let v = _mm256_loadu_si256(values.as_ptr().add(4 * q).cast::<__m256i>());
            let p = _mm256_loadu_si256(predicted.as_ptr().add(4 * q).cast::<__m256i>());
            _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(v, p)))
        };
        equal |= u64::from(eq as u32 & 0xf) << (4 * q);
    }
    !equal
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_path_finds_the_same_columns() {
        let mut a = [0u64; MAX_COLUMNS];
        let mut b = [0u64; MAX_COLUMNS];
        for i in 0..MAX_COLUMNS {
            a[i] = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            // Every third column differs, one of them only in its high half.
            b[i] = match i % 3 {
                0 => a[i],
                1 => a[i] ^ 1,
                _ => a[i] ^ 1 << 40,
            };
        }
        for n in 0..=MAX_COLUMNS {
            let want: u64 = (0..n).filter(|i| i % 3 != 0).map(|i| 1u64 << i).sum();
            assert_eq!(changed_columns(&a, &b, n), want, "{n} columns");
            let low = u64::MAX.checked_shr(64 - n as u32).unwrap_or(0);
            assert_eq!(portable(&a, &b, n) & low, want, "{n} columns, plain code");
        }
        assert_eq!(changed_columns(&a, &a, MAX_COLUMNS), 0);
    }
}
