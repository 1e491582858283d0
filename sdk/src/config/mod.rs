//! Plugin configuration: one typed struct per plugin, from which everything else is derived.
//!
//! A plugin declares its `[source.NAME]` / `[sink.NAME]` table once, with
//! [`crate::plugin_config!`]: each field's name is a key, its Rust type the key's type, and the
//! declaration carries the default, the allowed values or range, and the documentation. From it
//! come the [`ConfigSchema`] (put in [`crate::PluginInfo::config`], sent to the host, printed by
//! `xpuprof plugins` and in `xpuprof.toml.example`), the struct's `Default`, and the typed
//! reading of the user's table ([`PluginConfig::typed`]).
//!
//! The host checks the user's table against the schema before the target starts (unknown keys,
//! types, allowed values and ranges are errors with file, line and column) and passes only the
//! keys the user wrote: a key left out keeps its declared default when the plugin reads it, and
//! an `Option` field declared `= None` stays *unset*, so a plugin can tell "not given" from any
//! value.

#[cfg(feature = "agent-stream")]
mod backend;
mod declare;
mod schema;
mod value;

pub use schema::{ConfigKey, ConfigSchema, ConfigType, KeyProblem};
pub use toml::{Table, Value};
pub use value::{read_key, ConfigValue, FromDefault, KeyBuilder, TypedConfig};

use crate::plugin::{PluginError, PluginResult};

/// The validated configuration a plugin instance receives.
#[derive(Debug, Clone, Default)]
pub struct PluginConfig {
    table: toml::Table,
}

impl PluginConfig {
    /// Wraps a TOML table (the host does this; tests may too).
    pub fn from_table(table: toml::Table) -> Self {
        Self { table }
    }

    /// Parses a TOML table text (for tests of plugin code).
    pub fn parse(text: &str) -> PluginResult<Self> {
        text.parse::<toml::Table>()
            .map(Self::from_table)
            .map_err(|e| PluginError::new(format!("failed to parse plugin config: {e}")))
    }

    /// The raw table: only the keys the user wrote.
    pub fn table(&self) -> &toml::Table {
        &self.table
    }

    /// Reads the table into the plugin's typed configuration struct; absent keys take the
    /// struct's declared defaults, and every value is checked against its declaration.
    pub fn typed<T: TypedConfig>(&self) -> PluginResult<T> {
        T::from_table(&self.table).map_err(|p| PluginError::new(p.to_string()))
    }

    fn wrong(key: &str, ty: ConfigType) -> PluginError {
        PluginError::new(format!("config key `{key}` must be {}", ty.name()))
    }

    // Untyped getters, kept for plugins written before `plugin_config!`. They make a plugin state
    // each default twice (in its declared keys and here): new plugins use `PluginConfig::typed`.

    /// A boolean, or `default` when the key is absent.
    pub fn bool(&self, key: &str, default: bool) -> PluginResult<bool> {
        match self.table.get(key) {
            None => Ok(default),
            Some(v) => v.as_bool().ok_or_else(|| Self::wrong(key, ConfigType::Bool)),
        }
    }

    /// An integer, or `default` when the key is absent.
    pub fn integer(&self, key: &str, default: i64) -> PluginResult<i64> {
        match self.table.get(key) {
            None => Ok(default),
            Some(v) => v.as_integer().ok_or_else(|| Self::wrong(key, ConfigType::Integer)),
        }
    }

    /// A number, or `default` when the key is absent.
    pub fn float(&self, key: &str, default: f64) -> PluginResult<f64> {
        match self.table.get(key) {
            None => Ok(default),
            Some(v) => v
                .as_float()
                .or_else(|| v.as_integer().map(|i| i as f64))
                .ok_or_else(|| Self::wrong(key, ConfigType::Float)),
        }
    }

    /// A string, or `default` when the key is absent.
    pub fn string(&self, key: &str, default: &str) -> PluginResult<String> {
        match self.table.get(key) {
            None => Ok(default.to_owned()),
            Some(v) => v.as_str().map(str::to_owned).ok_or_else(|| Self::wrong(key, ConfigType::String)),
        }
    }

    /// A string that must be one of `allowed`, or `default` when the key is absent.
    pub fn choice(&self, key: &str, allowed: &[&str], default: &str) -> PluginResult<String> {
        let v = self.string(key, default)?;
        if allowed.contains(&v.as_str()) {
            Ok(v)
        } else {
            Err(PluginError::new(format!(
                "config key `{key}` is \"{v}\"; expected one of: {}",
                allowed.iter().map(|a| format!("\"{a}\"")).collect::<Vec<_>>().join(", ")
            )))
        }
    }

    /// An array of strings, or `default` when the key is absent.
    pub fn string_list(&self, key: &str, default: &[&str]) -> PluginResult<Vec<String>> {
        match self.table.get(key) {
            None => Ok(default.iter().map(|s| (*s).to_owned()).collect()),
            Some(v) => v
                .as_array()
                .and_then(|a| a.iter().map(|x| x.as_str().map(str::to_owned)).collect())
                .ok_or_else(|| Self::wrong(key, ConfigType::StringList)),
        }
    }
}
