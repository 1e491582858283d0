//! Kernel names for the report's tables: the short name (the toolbox's
//! [`xpuprof_toolbox::kernel_name::short`]) and, where several kernels share it, a short suffix
//! that tells them apart, so seven instantiations of `at::native::vectorized_elementwise_kernel`
//! read `… [FillFunctor float]`, `… [AddFunctor]` and so on instead of seven equal rows.
//!
//! The suffix is made of the words of the full name that the fewest of the kernels sharing the
//! short name have (at most [`SUFFIX_WORDS`], in the order they appear): identifiers that are
//! not a namespace or class qualifier (`at::`, `c10::`), numbers only where no identifier
//! differs. Where even that leaves two labels equal, the id ([`kernel_name::id`]) is the suffix.

use std::collections::{HashMap, HashSet};

use xpuprof_toolbox::kernel_name;

/// Words in a suffix at most.
pub const SUFFIX_WORDS: usize = 2;

/// The label of each of `names` (full, demangled kernel names), in the same order.
pub fn labels(names: &[&str]) -> Vec<String> {
    let shorts: Vec<String> = names.iter().map(|n| kernel_name::short(n)).collect();
    let mut groups: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, s) in shorts.iter().enumerate() {
        groups.entry(s.as_str()).or_default().push(i);
    }
    let mut out = shorts.clone();
    for members in groups.values().filter(|m| m.len() > 1) {
        let words: Vec<Vec<&str>> = members.iter().map(|&i| distinct_words(names[i])).collect();
        let mut freq: HashMap<&str, usize> = HashMap::new();
        for w in words.iter().flatten() {
            *freq.entry(w).or_default() += 1;
        }
        for (k, &i) in members.iter().enumerate() {
            let suffix = suffix(&words[k], &freq, members.len());
            if !suffix.is_empty() {
                out[i] = format!("{} [{suffix}]", shorts[i]);
            }
        }
    }
    let mut count: HashMap<String, usize> = HashMap::new();
    for l in &out {
        *count.entry(l.clone()).or_default() += 1;
    }
    for (i, l) in out.iter_mut().enumerate() {
        if count[l.as_str()] > 1 {
            *l = format!("{} [{}]", shorts[i], kernel_name::id(names[i]));
        }
    }
    out
}

/// The words of `name` that can tell it apart, each once, in order.
fn distinct_words(name: &str) -> Vec<&str> {
    let mut seen = HashSet::new();
    words(name).filter(|w| seen.insert(*w)).collect()
}

/// The rarest words (fewer members than all of the group have them), in their order in the name.
fn suffix(words: &[&str], freq: &HashMap<&str, usize>, members: usize) -> String {
    let rare = |numbers: bool| {
        let mut picked: Vec<(usize, usize)> = words
            .iter()
            .enumerate()
            .filter(|(_, w)| freq[*w] < members && w.as_bytes()[0].is_ascii_digit() == numbers)
            .map(|(pos, w)| (freq[w], pos))
            .collect();
        picked.sort_unstable();
        picked.truncate(SUFFIX_WORDS);
        picked.sort_unstable_by_key(|&(_, pos)| pos);
        picked.iter().map(|&(_, pos)| words[pos]).collect::<Vec<_>>().join(" ")
    };
    let names = rare(false);
    if names.is_empty() {
        rare(true)
    } else {
        names
    }
}

/// Identifiers and numbers of `name`, leaving out qualifiers (a word followed by `::`).
fn words(name: &str) -> impl Iterator<Item = &str> {
    let bytes = name.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            if !word(bytes[i]) {
                i += 1;
                continue;
            }
            let start = i;
            while i < bytes.len() && word(bytes[i]) {
                i += 1;
            }
            if !name[i..].starts_with("::") {
                return Some(&name[start..i]);
            }
        }
        None
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instantiations_sharing_a_short_name_get_what_tells_them_apart() {
        let names = [
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)",
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::Half>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<c10::Half>, at::detail::Array<char*, 1>)",
            "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, at::detail::Array<char*, 3> >(int, at::native::AddFunctor<float>, at::detail::Array<char*, 3>)",
            "ampere_sgemm_128x64_nn",
        ];
        let l = labels(&names);
        assert_eq!(l[0], "at::native::vectorized_elementwise_kernel [FillFunctor float]");
        assert_eq!(l[1], "at::native::vectorized_elementwise_kernel [FillFunctor Half]");
        assert_eq!(l[2], "at::native::vectorized_elementwise_kernel [AddFunctor float]");
        assert_eq!(l[3], "ampere_sgemm_128x64_nn");
        assert_eq!(l.iter().collect::<HashSet<_>>().len(), 4);
    }

    #[test]
    fn numbers_and_then_ids_when_nothing_else_differs() {
        let l = labels(&["k<1>(int)", "k<2>(int)"]);
        assert_eq!(l, ["k [1]", "k [2]"]);
        let same = labels(&["k<a::x>()", "k<b::x>()"]);
        assert_eq!(
            same,
            [
                format!("k [{}]", kernel_name::id("k<a::x>()")),
                format!("k [{}]", kernel_name::id("k<b::x>()"))
            ]
        );
    }
}
