//! The session's capture settings as the agent's options: `paused=1` when the session starts
//! paused, `range=` for windows the program's markers open (`cuda-profiler-api` or
//! `nvtx:MESSAGE[@DOMAIN]`, percent-encoded: option values hold no `,` or `=`), `range_end=`.

use xpuprof_sdk::{PluginError, PluginResult, SessionInfo};

/// The agent options for `session`'s windows (empty when it has none).
pub fn agent_opts(session: &SessionInfo) -> PluginResult<String> {
    let mut v = Vec::new();
    if session.start_paused {
        v.push("paused=1".to_owned());
    }
    let range = session.capture_range.as_str();
    if !range.is_empty() {
        let nvtx = range.strip_prefix("nvtx:").filter(|m| !m.is_empty());
        if range != "cuda-profiler-api" && nvtx.is_none() {
            return Err(PluginError::new(format!(
                "capture range `{range}` is not one the cupti source knows: cuda-profiler-api or nvtx:MESSAGE[@DOMAIN]"
            )));
        }
        v.push(format!("range={}", encode(range)));
        match session.capture_range_end.as_str() {
            "" | "stop" => v.push("range_end=stop".to_owned()),
            "repeat" => v.push("range_end=repeat".to_owned()),
            other => {
                return Err(PluginError::new(format!("capture range end `{other}` must be stop or repeat")))
            }
        }
    }
    Ok(v.join(","))
}

/// True when the program's NVTX ranges open windows (NVTX must then reach the agent).
pub fn nvtx_range(session: &SessionInfo) -> bool {
    session.capture_range.starts_with("nvtx:")
}

/// `%`, `,` and `=` as `%XX`.
fn encode(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '%' | ',' | '=' => out.push_str(&format!("%{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(paused: bool, range: &str, end: &str) -> SessionInfo {
        SessionInfo {
            start_paused: paused,
            capture_range: range.into(),
            capture_range_end: end.into(),
            ..Default::default()
        }
    }

    #[test]
    fn windows_become_agent_options() {
        assert_eq!(agent_opts(&session(false, "", "")).unwrap(), "");
        assert_eq!(agent_opts(&session(true, "", "")).unwrap(), "paused=1");
        assert_eq!(
            agent_opts(&session(false, "nvtx:step, 5=x@train", "repeat")).unwrap(),
            "range=nvtx:step%2C 5%3Dx@train,range_end=repeat"
        );
        assert_eq!(
            agent_opts(&session(false, "cuda-profiler-api", "")).unwrap(),
            "range=cuda-profiler-api,range_end=stop"
        );
        assert!(agent_opts(&session(false, "nvtx:", ""))
            .unwrap_err()
            .0
            .contains("cuda-profiler-api or nvtx"));
        assert!(agent_opts(&session(false, "cuda-profiler-api", "again"))
            .unwrap_err()
            .0
            .contains("stop or repeat"));
    }
}
