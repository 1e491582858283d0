//! `wrong-abi`: a test plugin that claims plugin ABI 999, to prove the host refuses it with a
//! message naming both versions.

use xpuprof_sdk::prelude::*;

/// A source that is otherwise fine.
#[derive(Debug)]
pub struct WrongAbi;

impl Source for WrongAbi {
    fn info() -> PluginInfo {
        PluginInfo {
            name: "wrong-abi",
            version: env!("CARGO_PKG_VERSION"),
            description: "test plugin built for another ABI version",
            config_keys: vec![],
            capabilities: vec![],
        }
    }

    fn create(_ctx: CreateContext) -> PluginResult<Self> {
        Ok(Self)
    }

    fn start(&mut self, _pid: u32) -> PluginResult<()> {
        Ok(())
    }

    fn stop(&mut self) -> PluginResult<()> {
        Ok(())
    }
}

xpuprof_sdk::export_plugin!(source: WrongAbi, abi_version = 999);
