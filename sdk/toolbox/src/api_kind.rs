//! What an API call does, from its name: a backend lists, kind by kind, the fragments of its
//! runtime's call names ([`Fragments`], checked in order) and [`classify`] reads a name with
//! them, so the vendor's names stay in its plugin and sinks read the kind instead of matching
//! names.

use xpuprof_sdk::model::ApiKind;

/// Kinds with the name fragments that make a call one of them, checked in order: the first
/// fragment the name contains decides.
pub type Fragments = [(ApiKind, &'static [&'static str])];

/// The kind of the first fragment of `table` that `name` contains ([`ApiKind::Other`] for
/// none).
pub fn classify(name: &str, table: &Fragments) -> ApiKind {
    table.iter().find(|(_, frags)| frags.iter().any(|f| name.contains(f))).map_or(ApiKind::Other, |&(k, _)| k)
}

/// Checks that every name of `cases` is classified as its kind with `table` (a backend's test of
/// its table).
///
/// # Panics
/// At the first name classified otherwise, naming it.
pub fn check(table: &Fragments, cases: &Fragments) {
    for &(kind, names) in cases {
        for name in names {
            assert_eq!(classify(name, table), kind, "{name}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_fragment_found_decides() {
        let table: &Fragments =
            &[(ApiKind::Other, &["GraphAdd"]), (ApiKind::Copy, &["Memcpy"]), (ApiKind::Launch, &["Launch"])];
        check(
            table,
            &[
                (ApiKind::Other, &["xGraphAddMemcpyNode", "xGetDevice"]),
                (ApiKind::Copy, &["xMemcpyLaunch"]),
                (ApiKind::Launch, &["xLaunch"]),
            ],
        );
    }
}
