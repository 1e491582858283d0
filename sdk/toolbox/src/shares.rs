//! Sharing a count out in proportion to weights: a kernel's PC samples among the launch stacks
//! its device time ran under (the folded views, pprof), so every sink splits them the same way.

/// Splits `total` in proportion to `weights` (largest remainder, earlier entries first on ties);
/// all to the first when every weight is 0.
pub fn split(total: u64, weights: &[u64]) -> Vec<u64> {
    let sum: u128 = weights.iter().map(|&w| u128::from(w)).sum();
    if sum == 0 {
        return weights.iter().enumerate().map(|(i, _)| if i == 0 { total } else { 0 }).collect();
    }
    let exact: Vec<(u64, u128)> = weights
        .iter()
        .map(|&w| {
            let p = u128::from(total) * u128::from(w);
            ((p / sum) as u64, p % sum)
        })
        .collect();
    let mut out: Vec<u64> = exact.iter().map(|e| e.0).collect();
    let mut left = total - out.iter().sum::<u64>();
    let mut order: Vec<usize> = (0..exact.len()).collect();
    order.sort_by(|&a, &b| exact[b].1.cmp(&exact[a].1).then(a.cmp(&b)));
    for i in order {
        if left == 0 {
            break;
        }
        out[i] += 1;
        left -= 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn splits_keep_the_total_and_the_proportions() {
        assert_eq!(split(10, &[3, 1]), vec![8, 2]);
        assert_eq!(split(7, &[1, 1, 1]), vec![3, 2, 2]);
        assert_eq!(split(5, &[0, 0]), vec![5, 0]);
        assert_eq!(split(0, &[4]), vec![0]);
        assert_eq!(
            split(u64::MAX, &[u64::MAX, u64::MAX]).iter().map(|&x| u128::from(x)).sum::<u128>(),
            u128::from(u64::MAX)
        );
    }
}

pub mod affinity;
pub mod launches;
