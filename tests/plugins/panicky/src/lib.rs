//! `panicky`: a test plugin that panics in the entry points its `panic_in` key lists (all of
//! them by default), to prove that no panic crosses the ABI and the session goes on.

use xpuprof_sdk::prelude::*;

/// The panicking source.
#[derive(Debug)]
pub struct Panicky {
    panic_in: Vec<String>,
}

impl Panicky {
    fn maybe_panic(&self, what: &str) {
        if self.panic_in.iter().any(|p| p == what) {
            panic!("panicky plugin panics in {what} on purpose");
        }
    }
}

impl Source for Panicky {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "panicky",
            version: env!("CARGO_PKG_VERSION"),
            description: "test plugin: panics in the entry points listed in `panic_in`",
            config_keys: vec![ConfigKey::new(
                "panic_in",
                ConfigType::StringList,
                r#"["create", "prepare", "start", "stop"]"#,
                "entry points that panic",
            )],
            capabilities: vec![],
        }
    }

    fn create(ctx: CreateContext) -> PluginResult<Self> {
        let me = Self { panic_in: ctx.config.string_list("panic_in", &[])? };
        me.maybe_panic("create");
        Ok(me)
    }

    fn prepare(&mut self, _env: &mut TargetEnv) -> PluginResult<()> {
        self.maybe_panic("prepare");
        Ok(())
    }

    fn start(&mut self, _pid: u32) -> PluginResult<()> {
        self.maybe_panic("start");
        Ok(())
    }

    fn stop(&mut self) -> PluginResult<()> {
        self.maybe_panic("stop");
        Ok(())
    }
}

xpuprof_sdk::export_plugin!(source: Panicky);
