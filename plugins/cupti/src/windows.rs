//! The session's capture settings as the agent's options ([`xpuprof_cupti_wire::CuptiOpts`]):
//! `paused` when the session starts paused, `range` for windows the program's markers open
//! (`cuda-profiler-api` or `nvtx:MESSAGE[@DOMAIN]`), `range_end`.

use xpuprof_cupti_wire::{Range, RangeEnd};
use xpuprof_sdk::{PluginError, PluginResult, SessionInfo};

/// A session's capture windows, as the agent takes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Windows {
    /// The session starts with no window open.
    pub paused: bool,
    /// The program's markers that open and close windows.
    pub range: Option<Range>,
    /// After the first marker window.
    pub range_end: RangeEnd,
}

impl Default for Windows {
    fn default() -> Self {
        Self { paused: false, range: None, range_end: RangeEnd::Stop }
    }
}

impl Windows {
    /// The windows of `session`; a range or range end the agent does not know is an error.
    pub fn of(session: &SessionInfo) -> PluginResult<Self> {
        let mut w = Self { paused: session.start_paused, ..Self::default() };
        let range = session.capture_range.as_str();
        if range.is_empty() {
            return Ok(w);
        }
        w.range = Some(Range::parse(range).map_err(|_| {
            PluginError::new(format!(
                "capture range `{range}` is not one the cupti source knows: cuda-profiler-api or nvtx:MESSAGE[@DOMAIN]"
            ))
        })?);
        w.range_end = match session.capture_range_end.as_str() {
            "" => RangeEnd::Stop,
            other => RangeEnd::from_word(other).ok_or_else(|| {
                PluginError::new(format!("capture range end `{other}` must be stop or repeat"))
            })?,
        };
        Ok(w)
    }

    /// True when the program's NVTX ranges open windows (NVTX must then reach the agent).
    pub fn nvtx_range(&self) -> bool {
        matches!(self.range, Some(Range::Nvtx { .. }))
    }
}

#[cfg(test)]
mod tests {
    use xpuprof_sdk::prelude::PluginConfig;

    use super::*;

    fn session(paused: bool, range: &str, end: &str) -> SessionInfo {
        SessionInfo {
            start_paused: paused,
            capture_range: range.into(),
            capture_range_end: end.into(),
            ..Default::default()
        }
    }

    /// The window options of the agent's option string for `session`.
    fn opts(session: &SessionInfo) -> PluginResult<String> {
        let c = crate::config::read(&PluginConfig::default()).unwrap();
        let all = crate::config::agent_opts(&c, &Windows::of(session)?);
        let keep = ["paused=", "range=", "range_end="];
        Ok(all.split(',').filter(|o| keep.iter().any(|k| o.starts_with(k))).collect::<Vec<_>>().join(","))
    }

    #[test]
    fn windows_become_agent_options() {
        assert_eq!(opts(&session(false, "", "")).unwrap(), "paused=0,range=,range_end=stop");
        assert_eq!(opts(&session(true, "", "")).unwrap(), "paused=1,range=,range_end=stop");
        assert_eq!(
            opts(&session(false, "nvtx:step, 5=x@train", "repeat")).unwrap(),
            "paused=0,range=nvtx:step%2C 5%3Dx@train,range_end=repeat"
        );
        assert_eq!(
            opts(&session(false, "cuda-profiler-api", "")).unwrap(),
            "paused=0,range=cuda-profiler-api,range_end=stop"
        );
        assert!(Windows::of(&session(false, "nvtx:step", "")).unwrap().nvtx_range());
        assert!(!Windows::of(&session(false, "cuda-profiler-api", "")).unwrap().nvtx_range());
        assert!(Windows::of(&session(false, "nvtx:", ""))
            .unwrap_err()
            .0
            .contains("cuda-profiler-api or nvtx"));
        assert!(Windows::of(&session(false, "cuda-profiler-api", "again"))
            .unwrap_err()
            .0
            .contains("stop or repeat"));
    }
}
