//! Plugin configuration: declared keys, and typed access to the values the user gave.
//!
//! A plugin declares every key it accepts ([`ConfigKey`]) in its [`crate::PluginInfo`]. The
//! host checks the user's `[source.NAME]` / `[sink.NAME]` table against them (unknown keys and
//! wrong types are errors with file, line and column), fills in defaults, and hands the result to
//! the plugin as a [`PluginConfig`].

use crate::plugin::{PluginError, PluginResult};

/// Type of a configuration value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ConfigType {
    /// `true` / `false`.
    Bool = 1,
    /// A 64-bit integer.
    Integer = 2,
    /// A float (integers are accepted too).
    Float = 3,
    /// A string.
    String = 4,
    /// An array of strings.
    StringList = 5,
}

impl ConfigType {
    /// Decodes the ABI byte.
    pub fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            1 => Self::Bool,
            2 => Self::Integer,
            3 => Self::Float,
            4 => Self::String,
            5 => Self::StringList,
            _ => return None,
        })
    }

    /// Name used in error messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::Bool => "a boolean",
            Self::Integer => "an integer",
            Self::Float => "a number",
            Self::String => "a string",
            Self::StringList => "an array of strings",
        }
    }
}

/// One configuration key a plugin accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigKey {
    /// Key name.
    pub name: &'static str,
    /// Value type.
    pub ty: ConfigType,
    /// Default as a TOML literal (`"99"`, `"true"`, `"\"agent\""`, `"[]"`); empty for none.
    pub default: &'static str,
    /// One-line documentation (shown by `xpuprof plugins` and in `xpuprof.toml.example`).
    pub doc: &'static str,
}

impl ConfigKey {
    /// Declares a key.
    pub const fn new(name: &'static str, ty: ConfigType, default: &'static str, doc: &'static str) -> Self {
        Self { name, ty, default, doc }
    }
}

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

    /// The raw table.
    pub fn table(&self) -> &toml::Table {
        &self.table
    }

    fn wrong(key: &str, ty: ConfigType) -> PluginError {
        PluginError::new(format!("config key `{key}` must be {}", ty.name()))
    }

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
