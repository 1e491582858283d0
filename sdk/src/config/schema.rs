//! A plugin's configuration schema: every key with its type, default, allowed values, range and
//! documentation. Plugins derive it from one typed struct ([`crate::plugin_config!`]); the host
//! receives it as a TOML document ([`ConfigSchema::to_toml`]), so a new attribute never changes
//! the binary interface, and checks the user's table against it before the target starts.

use std::fmt::Write as _;

use toml::{Table, Value};

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

    /// Name used in error messages ("an integer").
    pub fn name(self) -> &'static str {
        match self {
            Self::Bool => "a boolean",
            Self::Integer => "an integer",
            Self::Float => "a number",
            Self::String => "a string",
            Self::StringList => "an array of strings",
        }
    }

    /// Name used in the schema document (`"integer"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Bool => "bool",
            Self::Integer => "integer",
            Self::Float => "float",
            Self::String => "string",
            Self::StringList => "string-list",
        }
    }

    /// Parses [`ConfigType::as_str`].
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Bool, Self::Integer, Self::Float, Self::String, Self::StringList]
            .into_iter()
            .find(|t| t.as_str() == s)
    }

    /// Whether `v` has this type.
    pub fn matches(self, v: &Value) -> bool {
        match self {
            Self::Bool => v.is_bool(),
            Self::Integer => v.is_integer(),
            Self::Float => v.is_float() || v.is_integer(),
            Self::String => v.is_str(),
            Self::StringList => v.as_array().is_some_and(|a| a.iter().all(Value::is_str)),
        }
    }
}

/// One configuration key a plugin accepts.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ConfigKey {
    /// Key name.
    pub name: String,
    /// Value type.
    pub ty: ConfigType,
    /// The default; `None` when the key is unset unless the user sets it.
    pub default: Option<Value>,
    /// One-line documentation (shown by `xpuprof plugins` and in `xpuprof.toml.example`).
    pub doc: String,
    /// The only values accepted (each element, for a list); empty for any.
    pub allowed: Vec<Value>,
    /// Smallest value accepted (numbers).
    pub min: Option<Value>,
    /// Largest value accepted (numbers).
    pub max: Option<Value>,
    /// Strings (each element, for a list) must be one word: not empty, no whitespace
    /// (symbol names, identifiers). Hosts older than SDK 0.2.1 ignore it; the plugin's own
    /// typed read still checks it.
    pub word: bool,
}

impl ConfigKey {
    /// Declares a key from a TOML literal default (`"99"`, `"\"agent\""`, `""` for unset).
    ///
    /// Prefer [`crate::plugin_config!`], which derives keys from a typed struct.
    pub fn new(name: &str, ty: ConfigType, default: &str, doc: &str) -> Self {
        Self {
            name: name.to_owned(),
            ty,
            default: parse_literal(default),
            doc: doc.to_owned(),
            allowed: Vec::new(),
            min: None,
            max: None,
            word: false,
        }
    }

    /// Checks one value; the error is a phrase that follows the key's name
    /// ("must be an integer, found string", "is -5, but must be between 0 and 10000").
    pub fn check(&self, v: &Value) -> Result<(), String> {
        if !self.ty.matches(v) {
            return Err(format!("must be {}, found {}", self.ty.name(), v.type_str()));
        }
        // TOML has `nan` and `inf`; no range check can hold them (every comparison with NaN is
        // false), and no key means them.
        if v.as_float().is_some_and(|f| !f.is_finite()) {
            return Err(format!("is {v}, but must be a finite number"));
        }
        if !self.allowed.is_empty() {
            let items: Vec<&Value> = match v.as_array() {
                Some(a) => a.iter().collect(),
                None => vec![v],
            };
            if let Some(bad) = items.into_iter().find(|x| !self.allowed.iter().any(|a| same_value(a, x))) {
                return Err(format!("has {bad}, but must be {}", self.constraint().unwrap_or_default()));
            }
        }
        if self.word {
            let items: Vec<&Value> = match v.as_array() {
                Some(a) => a.iter().collect(),
                None => vec![v],
            };
            let not_word =
                |x: &&Value| x.as_str().is_some_and(|s| s.is_empty() || s.contains(char::is_whitespace));
            if let Some(bad) = items.into_iter().find(not_word) {
                return Err(format!(
                    "has {bad}, which is not one word (it must not be empty or contain spaces)"
                ));
            }
        }
        let below = self.min.as_ref().is_some_and(|m| number(v) < number(m));
        let above = self.max.as_ref().is_some_and(|m| number(v) > number(m));
        if below || above {
            return Err(format!("is {v}, but must be {}", self.constraint().unwrap_or_default()));
        }
        Ok(())
    }

    /// What the key accepts beyond its type ("one of \"full\", \"short\"", "between 1 and 255").
    pub fn constraint(&self) -> Option<String> {
        if !self.allowed.is_empty() {
            let list: Vec<String> = self.allowed.iter().map(Value::to_string).collect();
            return Some(format!("one of {}", list.join(", ")));
        }
        if self.word {
            let each = if self.ty == ConfigType::StringList { "each " } else { "" };
            return Some(format!("{each}one word (not empty, no spaces)"));
        }
        match (&self.min, &self.max) {
            (Some(lo), Some(hi)) => Some(format!("between {lo} and {hi}")),
            (Some(lo), None) => Some(format!("at least {lo}")),
            (None, Some(hi)) => Some(format!("at most {hi}")),
            (None, None) => None,
        }
    }

    /// The type and constraint in words, for documentation ("an integer, between 0 and 10000").
    pub fn describe(&self) -> String {
        match self.constraint() {
            Some(c) => format!("{}, {c}", self.ty.name()),
            None => self.ty.name().to_owned(),
        }
    }
}

fn parse_literal(text: &str) -> Option<Value> {
    if text.trim().is_empty() {
        return None;
    }
    format!("v = {text}").parse::<Table>().ok().and_then(|mut t| t.remove("v"))
}

fn number(v: &Value) -> f64 {
    v.as_integer().map(|i| i as f64).or_else(|| v.as_float()).unwrap_or(f64::NAN)
}

fn same_value(a: &Value, b: &Value) -> bool {
    a == b || (a.is_integer() != b.is_integer() && number(a) == number(b))
}

/// A key that failed a check: which key, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyProblem {
    /// The key's name.
    pub key: String,
    /// A phrase that follows the key's name ("must be an integer, found string").
    pub problem: String,
}

impl std::fmt::Display for KeyProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "config key `{}` {}", self.key, self.problem)
    }
}

impl std::error::Error for KeyProblem {}

/// Every key a plugin accepts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfigSchema {
    keys: Vec<ConfigKey>,
}

impl ConfigSchema {
    /// A schema of these keys.
    pub fn new(keys: Vec<ConfigKey>) -> Self {
        Self { keys }
    }

    /// The keys, in declaration order.
    pub fn keys(&self) -> &[ConfigKey] {
        &self.keys
    }

    /// The keys, for [`crate::PluginInfo::config_keys`].
    pub fn into_keys(self) -> Vec<ConfigKey> {
        self.keys
    }

    /// The key named `name`.
    pub fn key(&self, name: &str) -> Option<&ConfigKey> {
        self.keys.iter().find(|k| k.name == name)
    }

    /// This schema followed by the keys of `other` (a plugin built from several typed structs).
    pub fn merge(mut self, other: ConfigSchema) -> Self {
        self.keys.extend(other.keys);
        self
    }

    /// Checks a user's table: every key known, of its type, within its allowed values and range.
    pub fn check_table(&self, table: &Table) -> Result<(), KeyProblem> {
        for (name, value) in table {
            let Some(key) = self.key(name) else {
                let known: Vec<&str> = self.keys.iter().map(|k| k.name.as_str()).collect();
                let accepts = if known.is_empty() { "no keys".to_owned() } else { known.join(", ") };
                return Err(KeyProblem {
                    key: name.clone(),
                    problem: format!("is not a key of this plugin; it accepts: {accepts}"),
                });
            };
            key.check(value).map_err(|problem| KeyProblem { key: name.clone(), problem })?;
        }
        Ok(())
    }

    /// Checks the declared defaults against the keys' own types and constraints.
    pub fn check_defaults(&self) -> Result<(), KeyProblem> {
        for k in &self.keys {
            if let Some(d) = &k.default {
                k.check(d).map_err(|p| KeyProblem {
                    key: k.name.clone(),
                    problem: format!("has a default that {p}"),
                })?;
            }
        }
        Ok(())
    }

    /// The schema as a TOML document (how it travels to the host).
    pub fn to_toml(&self) -> String {
        let keys: Vec<Value> = self.keys.iter().map(|k| Value::Table(key_table(k))).collect();
        let mut doc = Table::new();
        doc.insert("key".into(), Value::Array(keys));
        toml::to_string(&doc).unwrap_or_default()
    }

    /// Parses [`ConfigSchema::to_toml`]. Attributes this SDK does not know are ignored.
    pub fn from_toml(text: &str) -> Result<Self, String> {
        let doc: Table = text.parse().map_err(|e| format!("invalid config schema: {e}"))?;
        let Some(list) = doc.get("key") else { return Ok(Self::default()) };
        let list = list.as_array().ok_or("invalid config schema: `key` is not an array")?;
        list.iter().map(parse_key).collect::<Result<Vec<_>, _>>().map(Self::new)
    }

    /// Documentation of every key as commented TOML lines (`# doc (type)` then `# key = default`).
    pub fn example(&self) -> String {
        let mut s = String::new();
        for k in &self.keys {
            let v = k.default.as_ref().map_or_else(|| "(unset)".to_owned(), Value::to_string);
            let _ = write!(s, "# {} ({})\n# {} = {v}\n", k.doc, k.describe(), k.name);
        }
        s
    }
}

fn key_table(k: &ConfigKey) -> Table {
    let mut t = Table::new();
    t.insert("name".into(), Value::String(k.name.clone()));
    t.insert("type".into(), Value::String(k.ty.as_str().into()));
    if let Some(d) = &k.default {
        t.insert("default".into(), d.clone());
    }
    t.insert("doc".into(), Value::String(k.doc.clone()));
    if !k.allowed.is_empty() {
        t.insert("allowed".into(), Value::Array(k.allowed.clone()));
    }
    if let Some(m) = &k.min {
        t.insert("min".into(), m.clone());
    }
    if let Some(m) = &k.max {
        t.insert("max".into(), m.clone());
    }
    if k.word {
        t.insert("word".into(), Value::Boolean(true));
    }
    t
}

fn parse_key(v: &Value) -> Result<ConfigKey, String> {
    let t = v.as_table().ok_or("invalid config schema: a key is not a table")?;
    let name = t.get("name").and_then(Value::as_str).ok_or("invalid config schema: a key has no name")?;
    let ty = t.get("type").and_then(Value::as_str).unwrap_or_default();
    let ty = ConfigType::parse(ty).ok_or_else(|| format!("config key `{name}` has unknown type {ty:?}"))?;
    Ok(ConfigKey {
        name: name.to_owned(),
        ty,
        default: t.get("default").cloned(),
        doc: t.get("doc").and_then(Value::as_str).unwrap_or_default().to_owned(),
        allowed: t.get("allowed").and_then(Value::as_array).cloned().unwrap_or_default(),
        min: t.get("min").cloned(),
        max: t.get("max").cloned(),
        word: t.get("word").and_then(Value::as_bool).unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> ConfigKey {
        let mut k = ConfigKey::new("sample_hz", ConfigType::Integer, "99", "sampling frequency");
        k.min = Some(Value::Integer(0));
        k.max = Some(Value::Integer(10_000));
        k
    }

    #[test]
    fn a_word_key_refuses_empty_and_spaced_strings_and_travels_in_the_schema() {
        let mut probes = ConfigKey::new("launch_probes", ConfigType::StringList, "[]", "");
        probes.word = true;
        let list = |xs: &[&str]| Value::Array(xs.iter().map(|x| Value::from(*x)).collect());
        assert!(probes.check(&list(&["cudaLaunchKernel", "hipLaunchKernel"])).is_ok());
        assert_eq!(
            probes.check(&list(&["ok", "a b"])).unwrap_err(),
            "has \"a b\", which is not one word (it must not be empty or contain spaces)"
        );
        assert!(probes.check(&list(&[""])).is_err());
        assert_eq!(probes.describe(), "an array of strings, each one word (not empty, no spaces)");
        let back = ConfigSchema::from_toml(&ConfigSchema::new(vec![probes.clone()]).to_toml()).unwrap();
        assert_eq!(back.keys(), &[probes]);
    }

    #[test]
    fn checks_type_range_and_allowed_values() {
        let k = key();
        assert_eq!(k.check(&Value::Integer(-5)).unwrap_err(), "is -5, but must be between 0 and 10000");
        assert_eq!(k.check(&Value::String("x".into())).unwrap_err(), "must be an integer, found string");
        assert!(k.check(&Value::Integer(99)).is_ok());
        let mut names = ConfigKey::new("kernel_names", ConfigType::String, "\"full\"", "");
        names.allowed = vec!["full".into(), "short".into()];
        assert_eq!(
            names.check(&"medium".into()).unwrap_err(),
            "has \"medium\", but must be one of \"full\", \"short\""
        );
        let mut list = ConfigKey::new("panic_in", ConfigType::StringList, "[]", "");
        list.allowed = vec!["create".into()];
        assert!(list.check(&Value::Array(vec!["create".into()])).is_ok());
        assert!(list.check(&Value::Array(vec!["nope".into()])).is_err());
    }

    #[test]
    fn nan_and_infinities_are_refused_whatever_the_range() {
        let mut gap = ConfigKey::new("idle_gap_threshold_us", ConfigType::Float, "100.0", "");
        gap.min = Some(Value::Float(0.0));
        let unbounded = ConfigKey::new("ratio", ConfigType::Float, "1.0", "");
        for k in [&gap, &unbounded] {
            for v in [f64::NAN, -f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                let e = k.check(&Value::Float(v)).unwrap_err();
                assert!(e.ends_with("but must be a finite number"), "{v}: {e}");
            }
            assert!(k.check(&Value::Float(2.5)).is_ok() && k.check(&Value::Integer(3)).is_ok());
        }
        let table: Table = "idle_gap_threshold_us = nan".parse().unwrap();
        let p = ConfigSchema::new(vec![gap.clone()]).check_table(&table).unwrap_err();
        assert_eq!(p.to_string(), "config key `idle_gap_threshold_us` is nan, but must be a finite number");
        gap.default = Some(Value::Float(f64::INFINITY));
        assert!(ConfigSchema::new(vec![gap]).check_defaults().is_err(), "a plugin's default too");
    }

    #[test]
    fn travels_as_toml_and_back() {
        let mut unset = ConfigKey::new("trampoline", ConfigType::Bool, "", "unset: automatic");
        unset.doc = "a \"quoted\" doc".into();
        let s = ConfigSchema::new(vec![key(), unset]);
        let back = ConfigSchema::from_toml(&s.to_toml()).unwrap();
        assert_eq!(back, s);
        assert_eq!(back.keys()[1].default, None);
        // Attributes from a newer SDK are ignored.
        let newer = "[[key]]\nname = \"x\"\ntype = \"bool\"\nfuture = 1\n";
        assert_eq!(ConfigSchema::from_toml(newer).unwrap().keys()[0].name, "x");
        assert!(ConfigSchema::from_toml("[[key]]\nname = \"x\"\ntype = \"complex\"\n").is_err());
    }

    #[test]
    fn checks_tables_and_defaults() {
        let s = ConfigSchema::new(vec![key()]);
        let t: Table = "bogus = 1".parse().unwrap();
        let p = s.check_table(&t).unwrap_err();
        assert_eq!(p.to_string(), "config key `bogus` is not a key of this plugin; it accepts: sample_hz");
        assert!(s.check_defaults().is_ok());
        let mut bad = key();
        bad.default = Some(Value::Integer(20_000));
        let p = ConfigSchema::new(vec![bad]).check_defaults().unwrap_err();
        assert!(p.problem.starts_with("has a default that is 20000"), "{p}");
    }
}
