//! What an API call does, from its name: a backend names the fragments of its runtime's call
//! names ([`ApiKind`] for each, checked in order) and [`classify`] reads a name with them, so the
//! vendor's names stay in its plugin and sinks read the kind instead of matching names.

use xpuprof_sdk::model::ApiKind;

/// The kind of the first of `fragments` that `name` contains ([`ApiKind::Other`] for none).
pub fn classify(name: &str, fragments: &[(&str, ApiKind)]) -> ApiKind {
    fragments.iter().find(|(frag, _)| name.contains(frag)).map_or(ApiKind::Other, |&(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_fragment_found_decides() {
        let table = [("GraphAdd", ApiKind::Other), ("Memcpy", ApiKind::Copy), ("Launch", ApiKind::Launch)];
        assert_eq!(classify("xGraphAddMemcpyNode", &table), ApiKind::Other);
        assert_eq!(classify("xMemcpyLaunch", &table), ApiKind::Copy);
        assert_eq!(classify("xLaunch", &table), ApiKind::Launch);
        assert_eq!(classify("xGetDevice", &table), ApiKind::Other);
    }
}
