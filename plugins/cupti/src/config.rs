//! `[source.cupti]` settings: every key is declared once, with the agent's options, in
//! [`CuptiOpts`] (`xpuprof-cupti-wire`, for both ends); [`Config`] is what the host reads of them
//! and writes into `XPUPROF_CUPTI_OPTS`.

use xpuprof_cupti_wire::CuptiOpts;
use xpuprof_sdk::config::TypedConfig;
use xpuprof_sdk::prelude::*;
use xpuprof_toolbox::agent_host::CompileFrames;
use xpuprof_wire::opts::CommonOpts;

use crate::windows::Windows;

/// The keys `[source.cupti]` accepts.
pub fn keys() -> Vec<ConfigKey> {
    CuptiOpts::schema().into_keys()
}

/// The `[source.cupti]` table, read and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The settings, as the user wrote them (defaults for the keys left out).
    pub opts: CuptiOpts,
}

impl Config {
    /// Reads and checks the settings.
    pub fn from_plugin(c: &PluginConfig) -> PluginResult<Self> {
        let config = Self { opts: c.typed()? };
        config.compile_frames()?;
        let period = config.opts.pc_sampling_period;
        if (1..5).contains(&period) {
            return Err(PluginError::new(format!(
                "pc_sampling_period = {period} is below CUPTI's shortest period (2^5 cycles): give 5 to 31, or 0 for CUPTI's default"
            )));
        }
        Ok(config)
    }

    /// The agent's options (`XPUPROF_CUPTI_OPTS`): those every agent takes, then this backend's
    /// ([`CuptiOpts`]) with the session's capture `windows`.
    pub fn agent_opts(&self, windows: &Windows) -> String {
        let o = &self.opts;
        let (depth, buffer_kib) = (o.max_depth as usize, o.buffer_kib as usize);
        let common = CommonOpts { stacks: o.launch_stacks, depth, buffer_kib, verbose: false };
        let own = CuptiOpts {
            paused: windows.paused,
            range: windows.range.clone(),
            range_end: windows.range_end,
            ..o.clone()
        };
        format!("{},{}", common.to_opts(), own.to_opts())
    }

    /// The functions of compile-time work (`compile_frames`'s patterns, read).
    pub fn compile_frames(&self) -> PluginResult<CompileFrames> {
        CompileFrames::parse(&self.opts.compile_frames)
            .map_err(|e| PluginError::new(format!("[source.cupti] compile_frames: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_agent_options() {
        let c = Config::from_plugin(&PluginConfig::default()).unwrap();
        assert_eq!(
            c.agent_opts(&Windows::default()),
            "stacks=agent,depth=255,buffer_kib=8192,verbose=0,\
             kernels=1,memcpy=1,memset=1,sync=0,memory=1,nvtx=1,devices=1,overhead=1,api=launches,python=auto,\
             runtime_callbacks=0,monotonic=1,tsc=1,callback_noop=0,paused=0,range=,range_end=stop,dormant=finalize,pc_sampling=0,pc_sampling_period=0,annotations=0"
        );
        let c = Config::from_plugin(
            &PluginConfig::parse("nvtx = false\napi = \"all\"\nlaunch_stacks = \"both\"").unwrap(),
        )
        .unwrap();
        assert!(!c.opts.nvtx);
        let o = c.agent_opts(&Windows::default());
        assert!(o.starts_with("stacks=both,") && o.contains(",nvtx=0,") && o.contains(",api=all,"), "{o}");
        assert!(c.compile_frames().unwrap().matches("do_bench (/x/triton/testing.py:3)"));
        let e =
            Config::from_plugin(&PluginConfig::parse("compile_frames = [\"x.py\"]").unwrap()).unwrap_err();
        assert!(e.0.contains("compile_frames") && e.0.contains("FILE_SUFFIX:FUNCTION"), "{e}");
        let e = Config::from_plugin(&PluginConfig::parse("api = \"some\"").unwrap()).unwrap_err();
        assert!(e.0.contains("api"), "{e}");
        let e = Config::from_plugin(&PluginConfig::parse("max_depth = 0").unwrap()).unwrap_err();
        assert!(e.0.contains("max_depth"), "{e}");
        // Up to the wire's bound (a stack's frame count is a u16 since protocol 2), not a byte's.
        let c = Config::from_plugin(&PluginConfig::parse("max_depth = 1024").unwrap()).unwrap();
        assert!(c.agent_opts(&Windows::default()).contains(",depth=1024,"));
        let e = Config::from_plugin(&PluginConfig::parse("max_depth = 1025").unwrap()).unwrap_err();
        assert!(e.0.contains("max_depth") && e.0.contains("1024"), "{e}");
        let e = Config::from_plugin(&PluginConfig::parse("buffer_kib = 1").unwrap()).unwrap_err();
        assert!(e.0.contains("between 64 and 1048576"), "{e}");
        let c =
            Config::from_plugin(&PluginConfig::parse("pc_sampling = true\npc_sampling_period = 18").unwrap())
                .unwrap();
        let o = c.agent_opts(&Windows::default());
        assert!(o.ends_with(",pc_sampling=1,pc_sampling_period=18,annotations=0"), "{o}");
        let e = Config::from_plugin(&PluginConfig::parse("pc_sampling_period = 4").unwrap()).unwrap_err();
        assert!(e.0.contains("5 to 31"), "{e}");
        let e = Config::from_plugin(&PluginConfig::parse("pc_sampling_period = 32").unwrap()).unwrap_err();
        assert!(e.0.contains("pc_sampling_period"), "{e}");
    }
}
