//! `[source.cupti]` settings: every key is declared once, with the agent's options, in
//! `xpuprof-cupti-wire`'s `CuptiOpts` (for both ends), which is the host's [`Config`]; [`read`]
//! checks it, and what the agent gets of it, with the session's capture windows, travels in
//! `XPUPROF_CUPTI_OPTS` ([`agent_opts`]).

use xpuprof_sdk::config::TypedConfig;
use xpuprof_sdk::prelude::*;
use xpuprof_toolbox::agent_host::CompileFrames;

use crate::windows::Windows;

/// The `[source.cupti]` table.
pub use xpuprof_cupti_wire::CuptiOpts as Config;

/// The keys `[source.cupti]` accepts.
pub fn keys() -> Vec<ConfigKey> {
    Config::schema().into_keys()
}

/// Reads and checks the settings.
pub fn read(c: &PluginConfig) -> PluginResult<Config> {
    let config: Config = c.typed()?;
    compile_frames(&config)?;
    let period = config.pc_sampling_period;
    if (1..5).contains(&period) {
        return Err(PluginError::new(format!(
            "pc_sampling_period = {period} is below CUPTI's shortest period (2^5 cycles): give 5 to 31, or 0 for CUPTI's default"
        )));
    }
    Ok(config)
}

/// The agent's options (`XPUPROF_CUPTI_OPTS`): those every agent takes, then this backend's
/// with the session's capture `windows`.
pub fn agent_opts(c: &Config, windows: &Windows) -> String {
    let own = Config {
        paused: windows.paused,
        range: windows.range.clone(),
        range_end: windows.range_end,
        ..c.clone()
    };
    let (depth, buffer_kib) = (c.max_depth as usize, c.buffer_kib as usize);
    xpuprof_toolbox::agent_host::agent_opts(c.launch_stacks, depth, buffer_kib, &own)
}

/// The functions of compile-time work (`compile_frames`'s patterns, read).
pub fn compile_frames(c: &Config) -> PluginResult<CompileFrames> {
    CompileFrames::parse(&c.compile_frames)
        .map_err(|e| PluginError::new(format!("[source.cupti] compile_frames: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_agent_options() {
        let c = read(&PluginConfig::default()).unwrap();
        assert_eq!(
            agent_opts(&c, &Windows::default()),
            "stacks=agent,depth=255,buffer_kib=8192,verbose=0,\
             kernels=1,memcpy=1,memset=1,sync=0,memory=1,nvtx=1,devices=1,overhead=1,api=launches,python=auto,\
             runtime_callbacks=0,monotonic=1,tsc=1,callback_noop=0,paused=0,range=,range_end=stop,dormant=finalize,pc_sampling=0,pc_sampling_period=16,annotations=1"
        );
        let c = read(&PluginConfig::parse("nvtx = false\napi = \"all\"\nlaunch_stacks = \"both\"").unwrap())
            .unwrap();
        assert!(!c.nvtx);
        let o = agent_opts(&c, &Windows::default());
        assert!(o.starts_with("stacks=both,") && o.contains(",nvtx=0,") && o.contains(",api=all,"), "{o}");
        assert!(compile_frames(&c).unwrap().matches("do_bench (/x/triton/testing.py:3)"));
        // Inductor's fusion benchmarking under max-autotune (seen unmarked on the H200).
        let sched = "Scheduler.speedup_by_fusion.<locals>.benchmark_when_ready (/x/torch/_inductor/scheduler.py:4225)";
        assert!(compile_frames(&c).unwrap().matches(sched));
        assert!(compile_frames(&c)
            .unwrap()
            .matches("Scheduler.benchmark_fused_nodes (/x/torch/_inductor/scheduler.py:3759)"));
        assert!(!compile_frames(&c)
            .unwrap()
            .matches("CachingAutotuner.run (/x/torch/_inductor/runtime/triton_heuristics.py:1495)"));
        let e = read(&PluginConfig::parse("compile_frames = [\"x.py\"]").unwrap()).unwrap_err();
        assert!(e.0.contains("compile_frames") && e.0.contains("FILE_SUFFIX:FUNCTION"), "{e}");
        let e = read(&PluginConfig::parse("api = \"some\"").unwrap()).unwrap_err();
        assert!(e.0.contains("api"), "{e}");
        let e = read(&PluginConfig::parse("max_depth = 0").unwrap()).unwrap_err();
        assert!(e.0.contains("max_depth"), "{e}");
        // Up to the wire's bound (a stack's frame count is a u16 since protocol 2), not a byte's.
        let c = read(&PluginConfig::parse("max_depth = 1024").unwrap()).unwrap();
        assert!(agent_opts(&c, &Windows::default()).contains(",depth=1024,"));
        let e = read(&PluginConfig::parse("max_depth = 1025").unwrap()).unwrap_err();
        assert!(e.0.contains("max_depth") && e.0.contains("1024"), "{e}");
        let e = read(&PluginConfig::parse("buffer_kib = 1").unwrap()).unwrap_err();
        assert!(e.0.contains("between 64 and 1048576"), "{e}");
        let c = read(&PluginConfig::parse("pc_sampling = true\npc_sampling_period = 18").unwrap()).unwrap();
        let o = agent_opts(&c, &Windows::default());
        assert!(o.ends_with(",pc_sampling=1,pc_sampling_period=18,annotations=1"), "{o}");
        let e = read(&PluginConfig::parse("pc_sampling_period = 4").unwrap()).unwrap_err();
        assert!(e.0.contains("5 to 31"), "{e}");
        let e = read(&PluginConfig::parse("pc_sampling_period = 32").unwrap()).unwrap_err();
        assert!(e.0.contains("pc_sampling_period"), "{e}");
    }
}
