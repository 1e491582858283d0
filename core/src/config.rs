//! `xpuprof.toml`: strict parsing with file, line and column in every error, and validation of
//! each plugin's table against the keys the plugin declared.
//!
//! ```toml
//! sources = ["sampler", "tracer"]
//! sinks = ["folded", "chrome"]
//! output = "xpuprof-out"
//! plugin_dirs = ["/opt/xpuprof/plugins"]
//! plugin_timeout = 30
//! demangle = true
//!
//! [source.sampler]
//! sample_hz = 99
//!
//! [sink.folded]
//! min_weight = 1
//! ```

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::de::{DeTable, DeValue};
use xpuprof_sdk::{ConfigSchema, PluginKind};

/// A configuration error: what is wrong and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", location.as_ref().map(|l| format!("{l}: ")).unwrap_or_default())]
pub struct ConfigError {
    /// `file:line:column`, when the error is in a file.
    pub location: Option<String>,
    /// What is wrong, and the fix when known.
    pub message: String,
}

impl ConfigError {
    fn plain(message: impl Into<String>) -> Self {
        Self { location: None, message: message.into() }
    }
}

/// Top-level keys of the config file.
const TOP_KEYS: &[&str] =
    &["sources", "sinks", "output", "plugin_dirs", "plugin_timeout", "demangle", "source", "sink", "diff"];

/// How long one call into a plugin may run before the plugin is abandoned, unless the config
/// file's `plugin_timeout` says otherwise.
pub const DEFAULT_PLUGIN_TIMEOUT: Duration = Duration::from_secs(30);

/// Largest config file read: a real one is a few KiB.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Reads the config file at `path`: a regular file (devices, FIFOs and directories are refused
/// before and after opening it, so no read blocks or never ends), trusted when running as root,
/// of at most [`MAX_CONFIG_BYTES`], in UTF-8. The error is the cause, with the fix.
fn read_bounded(path: &Path) -> Result<String, String> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let not_regular = |m: &std::fs::Metadata| {
        let kind = m.file_type();
        let what =
            if kind.is_dir() { "a directory" } else { "not a regular file (a device, FIFO or socket)" };
        format!("it is {what}; hint: give the path of a TOML file such as xpuprof.toml")
    };
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err(not_regular(&meta));
    }
    let what = format!("the config file {}", path.display());
    xpuprof_sdk::trust::check_trusted_file(path, &what)?;
    // O_NONBLOCK: if the path was swapped for a FIFO since, opening it does not wait for a writer.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| e.to_string())?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err(not_regular(&meta));
    }
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(format!(
            "it is larger than {} MiB, too large for a config file; hint: give the path of a TOML file \
             such as xpuprof.toml",
            MAX_CONFIG_BYTES >> 20
        ));
    }
    String::from_utf8(bytes).map_err(|e| format!("it is not UTF-8 text ({e})"))
}

/// The parsed config file.
#[derive(Debug, Clone, Default)]
pub struct FileConfig {
    /// The file's path.
    pub path: PathBuf,
    text: String,
    /// `sources = [...]`.
    pub sources: Option<Vec<String>>,
    /// `sinks = [...]`.
    pub sinks: Option<Vec<String>>,
    /// `output = "..."`.
    pub output: Option<PathBuf>,
    /// `plugin_dirs = [...]`.
    pub plugin_dirs: Vec<PathBuf>,
    /// `plugin_timeout = <seconds>`: the deadline of each plugin call.
    pub plugin_timeout: Option<Duration>,
    /// `demangle = true|false`: whether the host gives mangled C++ names (kernels, functions)
    /// a demangled display name for every sink; `None` when the file does not say (on).
    pub demangle: Option<bool>,
    /// `[diff]` table: `threshold`, `metric`.
    pub diff: toml::Table,
    /// `[source.NAME]` tables with the span of their name.
    source_tables: BTreeMap<String, (toml::Table, Range<usize>)>,
    /// `[sink.NAME]` tables with the span of their name.
    sink_tables: BTreeMap<String, (toml::Table, Range<usize>)>,
    /// Spans of every key, by dotted path (`source.sampler.sample_hz`).
    spans: BTreeMap<String, Range<usize>>,
    /// Dotted paths of the plugin keys and tables `--set` gave (errors name the `--set`).
    set_paths: std::collections::BTreeSet<String>,
}

impl FileConfig {
    /// Reads and parses `path`. When running as root, a file that another user could have
    /// written (owned by someone else, or writable by group or others) is refused. Only a
    /// regular file of at most [`MAX_CONFIG_BYTES`] is read (`-c /dev/zero` would never end).
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = read_bounded(path).map_err(|cause| {
            ConfigError::plain(format!("failed to read config file {}: {cause}", path.display()))
        })?;
        Self::parse(path, &text)
    }

    /// Parses `text`, read from `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let mut cfg = FileConfig { path: path.to_path_buf(), text: text.to_owned(), ..Default::default() };
        let doc = DeTable::parse(text).map_err(|e| {
            let loc = e.span().map(|s| cfg.location(&s));
            ConfigError { location: loc, message: format!("invalid TOML: {}", e.message()) }
        })?;
        collect_spans(doc.get_ref(), "", &mut cfg.spans);
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            ConfigError::plain(format!("invalid TOML in {}: {e}", path.display()))
        })?;
        for (key, value) in table {
            cfg.top_level(&key, value)?;
        }
        Ok(cfg)
    }

    fn top_level(&mut self, key: &str, value: toml::Value) -> Result<(), ConfigError> {
        match key {
            "sources" => self.sources = Some(self.string_list(key, value)?),
            "sinks" => self.sinks = Some(self.string_list(key, value)?),
            "output" => match value {
                toml::Value::String(s) if !s.is_empty() && !s.contains('\0') => {
                    self.output = Some(PathBuf::from(s))
                }
                toml::Value::String(s) => {
                    let what = if s.is_empty() { "empty" } else { "a path with a NUL character" };
                    return Err(self.error(
                        key,
                        &format!("`output` is {what}, but must name a directory (default xpuprof-out)"),
                    ));
                }
                _ => return Err(self.error(key, "`output` must be a string (a directory path)")),
            },
            "plugin_dirs" => {
                self.plugin_dirs = self.string_list(key, value)?.into_iter().map(PathBuf::from).collect()
            }
            "plugin_timeout" => {
                let secs = match value {
                    toml::Value::Integer(i) => i as f64,
                    toml::Value::Float(f) => f,
                    _ => f64::NAN,
                };
                if !(0.01..=86_400.0).contains(&secs) {
                    return Err(self.error(
                        key,
                        "`plugin_timeout` must be a number of seconds between 0.01 and 86400 (default 30)",
                    ));
                }
                self.plugin_timeout = Some(Duration::from_secs_f64(secs));
            }
            "demangle" => match value {
                toml::Value::Boolean(b) => self.demangle = Some(b),
                _ => {
                    return Err(self.error(
                        key,
                        "`demangle` must be true or false (default true: sinks show mangled C++ names \
                         demangled, and still receive the raw name)",
                    ))
                }
            },
            "diff" => match value {
                toml::Value::Table(t) => {
                    for (k, v) in &t {
                        if !["threshold", "metric"].contains(&k.as_str()) {
                            return Err(self.error(
                                &format!("diff.{k}"),
                                &format!("unknown key `{k}` in [diff]; expected threshold or metric"),
                            ));
                        }
                        if !v.is_str() {
                            return Err(self.error(
                                &format!("diff.{k}"),
                                &format!("`diff.{k}` must be a string (\"5%\", \"total\")"),
                            ));
                        }
                    }
                    self.diff = t;
                }
                _ => return Err(self.error(key, "`diff` must be a table")),
            },
            "source" | "sink" => {
                let toml::Value::Table(t) = value else {
                    return Err(
                        self.error(key, &format!("`{key}` must be a table of plugin tables ([{key}.NAME])"))
                    );
                };
                for (name, v) in t {
                    let path = format!("{key}.{name}");
                    let toml::Value::Table(pt) = v else {
                        return Err(self.error(&path, &format!("`{path}` must be a table")));
                    };
                    let span = self.spans.get(&path).cloned().unwrap_or(0..0);
                    let dest = if key == "source" { &mut self.source_tables } else { &mut self.sink_tables };
                    dest.insert(name, (pt, span));
                }
            }
            other => {
                return Err(self.error(
                    other,
                    &format!("unknown key `{other}`; expected one of: {}", TOP_KEYS.join(", ")),
                ))
            }
        }
        Ok(())
    }

    fn string_list(&self, key: &str, value: toml::Value) -> Result<Vec<String>, ConfigError> {
        value
            .as_array()
            .and_then(|a| a.iter().map(|v| v.as_str().map(str::to_owned)).collect::<Option<Vec<_>>>())
            .ok_or_else(|| self.error(key, &format!("`{key}` must be an array of strings")))
    }

    /// `file:line:column` of a byte span.
    fn location(&self, span: &Range<usize>) -> String {
        let upto = &self.text[..span.start.min(self.text.len())];
        let line = upto.matches('\n').count() + 1;
        let col = upto.rfind('\n').map_or(upto.len(), |i| upto.len() - i - 1) + 1;
        format!("{}:{line}:{col}", self.path.display())
    }

    /// An error located at the key with dotted path `path` (in the file, or the `--set` that
    /// gave it).
    fn error(&self, path: &str, message: &str) -> ConfigError {
        if self.set_paths.contains(path) {
            return ConfigError { location: Some(format!("--set {path}")), message: message.to_owned() };
        }
        ConfigError { location: self.spans.get(path).map(|s| self.location(s)), message: message.to_owned() }
    }

    /// Sets `key` of plugin `name`'s table to `value`, over what the file says: what `--set
    /// KIND.NAME.KEY=VALUE` does. The value is checked with the file's tables (the plugin's
    /// schema: type, allowed values, range); an error about it names the `--set`.
    pub fn set_plugin_key(&mut self, kind: PluginKind, name: &str, key: &str, value: toml::Value) {
        let table = format!("{}.{name}", kind.as_str());
        let tables = match kind {
            PluginKind::Source => &mut self.source_tables,
            PluginKind::Sink => &mut self.sink_tables,
        };
        if !tables.contains_key(name) {
            self.set_paths.insert(table.clone());
        }
        tables.entry(name.to_owned()).or_default().0.insert(key.to_owned(), value);
        self.set_paths.insert(format!("{table}.{key}"));
    }

    /// The deadline of each plugin call: `plugin_timeout`, else [`DEFAULT_PLUGIN_TIMEOUT`].
    pub fn plugin_timeout(file: Option<&Self>) -> Duration {
        file.and_then(|f| f.plugin_timeout).unwrap_or(DEFAULT_PLUGIN_TIMEOUT)
    }

    /// Whether the host demangles names for display: `demangle`, else on.
    pub fn demangle(file: Option<&Self>) -> bool {
        file.and_then(|f| f.demangle).unwrap_or(true)
    }

    /// Names of the `[source.NAME]` or `[sink.NAME]` tables.
    pub fn plugin_tables(&self, kind: PluginKind) -> Vec<String> {
        self.tables(kind).keys().cloned().collect()
    }

    fn tables(&self, kind: PluginKind) -> &BTreeMap<String, (toml::Table, Range<usize>)> {
        match kind {
            PluginKind::Source => &self.source_tables,
            PluginKind::Sink => &self.sink_tables,
        }
    }

    /// Errors for a `[source.NAME]` / `[sink.NAME]` table that names no known plugin.
    pub fn check_known(&self, kind: PluginKind, known: &[String]) -> Result<(), ConfigError> {
        for (name, (_, span)) in self.tables(kind) {
            if !known.contains(name) {
                let path = format!("{}.{name}", kind.as_str());
                let set = self.set_paths.contains(&path);
                return Err(ConfigError {
                    location: Some(if set { format!("--set {path}") } else { self.location(span) }),
                    message: format!(
                        "unknown {} plugin `{name}` in [{}.{name}]; available: {}",
                        kind.as_str(),
                        kind.as_str(),
                        if known.is_empty() { "none".to_owned() } else { known.join(", ") }
                    ),
                });
            }
        }
        Ok(())
    }
}

fn collect_spans(t: &DeTable<'_>, prefix: &str, out: &mut BTreeMap<String, Range<usize>>) {
    for (k, v) in t.iter() {
        let path =
            if prefix.is_empty() { k.get_ref().to_string() } else { format!("{prefix}.{}", k.get_ref()) };
        out.insert(path.clone(), k.span());
        if let DeValue::Table(inner) = v.get_ref() {
            collect_spans(inner, &path, out);
        }
    }
}

/// Checks a plugin's table (from the file, or empty) against the plugin's schema: unknown keys,
/// types, allowed values and ranges, each error located in the file. Returns only the keys the
/// user wrote: the plugin applies its own declared defaults, so an unset key stays unset.
/// The plugin's declared defaults are checked too (a plugin bug, named as such).
pub fn plugin_table(
    file: Option<&FileConfig>,
    kind: PluginKind,
    name: &str,
    schema: &ConfigSchema,
) -> Result<toml::Table, ConfigError> {
    schema.check_defaults().map_err(|p| {
        ConfigError::plain(format!(
            "{} `{name}` declares an invalid default: config key `{}` {}; the plugin must be fixed",
            kind.as_str(),
            p.key,
            p.problem
        ))
    })?;
    let table = file.and_then(|f| f.tables(kind).get(name)).map(|(t, _)| t.clone()).unwrap_or_default();
    schema.check_table(&table).map_err(|p| {
        let msg = if schema.key(&p.key).is_none() {
            let known: Vec<&str> = schema.keys().iter().map(|k| k.name.as_str()).collect();
            let accepts = if known.is_empty() { "no keys".to_owned() } else { known.join(", ") };
            let moved = if p.key == "demangle" {
                "; demangling is one switch for every sink now: a top-level `demangle = false` \
                 (before any [table])"
            } else {
                ""
            };
            format!("unknown key `{}` for {} `{name}`; it accepts: {accepts}{moved}", p.key, kind.as_str())
        } else {
            format!("`{}` of {} `{name}` {}", p.key, kind.as_str(), p.problem)
        };
        match file {
            Some(f) => f.error(&format!("{}.{name}.{}", kind.as_str(), p.key), &msg),
            None => ConfigError::plain(msg),
        }
    })?;
    Ok(table)
}

/// Fills in the declared defaults of the keys `table` lacks: what hosts did for plugins built
/// with SDK 0.1, which read their table expecting them (newer plugins apply their own defaults,
/// so a key left out can stay unset).
pub fn fill_defaults(table: &mut toml::Table, schema: &ConfigSchema) {
    for k in schema.keys() {
        if let (false, Some(d)) = (table.contains_key(&k.name), &k.default) {
            table.insert(k.name.clone(), d.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xpuprof_sdk::{ConfigKey, ConfigType};

    fn parse(text: &str) -> Result<FileConfig, ConfigError> {
        FileConfig::parse(Path::new("x.toml"), text)
    }

    #[test]
    fn unknown_top_level_key_names_line_and_column() {
        let err = parse("sources = [\"sampler\"]\n  bogus = 1\n").unwrap_err();
        assert_eq!(err.location.as_deref(), Some("x.toml:2:3"));
        assert!(err.message.contains("unknown key `bogus`"), "{err}");
    }

    #[test]
    fn malformed_toml_is_located() {
        let err = parse("sources = [\"sampler\"\n").unwrap_err();
        assert!(err.location.as_deref().unwrap().starts_with("x.toml:"), "{err}");
        assert!(err.message.starts_with("invalid TOML"), "{err}");
    }

    #[test]
    fn plugin_table_checks_keys_types_and_ranges_and_fills_nothing() {
        let mut hz = ConfigKey::new("sample_hz", ConfigType::Integer, "99", "");
        hz.min = Some(0.into());
        let schema = ConfigSchema::new(vec![hz, ConfigKey::new("offcpu", ConfigType::Bool, "false", "")]);
        let check =
            |text: &str| plugin_table(Some(&parse(text).unwrap()), PluginKind::Source, "sampler", &schema);
        let err = check("[source.sampler]\nsample_hz = \"fast\"\n").unwrap_err();
        assert_eq!(err.location.as_deref(), Some("x.toml:2:1"));
        assert!(err.message.contains("must be an integer"), "{err}");

        let err = check("[source.sampler]\n\n  sample_hz = -5\n").unwrap_err();
        assert_eq!(err.location.as_deref(), Some("x.toml:3:3"));
        assert_eq!(err.message, "`sample_hz` of source `sampler` is -5, but must be at least 0");

        let t = check("[source.sampler]\nsample_hz = 49\n").unwrap();
        assert_eq!(t["sample_hz"].as_integer(), Some(49));
        assert!(!t.contains_key("offcpu"), "defaults are the plugin's to apply");

        let err = check("[source.sampler]\nsample_hz = 49\nnope = 1\n").unwrap_err();
        assert_eq!(err.location.as_deref(), Some("x.toml:3:1"));
    }

    #[test]
    fn an_invalid_declared_default_is_the_plugins_fault() {
        let mut hz = ConfigKey::new("sample_hz", ConfigType::Integer, "-1", "");
        hz.min = Some(0.into());
        let err = plugin_table(None, PluginKind::Source, "x", &ConfigSchema::new(vec![hz])).unwrap_err();
        assert!(
            err.message.contains("declares an invalid default") && err.message.contains("sample_hz"),
            "{err}"
        );
    }

    #[test]
    fn demangle_is_one_top_level_switch() {
        assert!(FileConfig::demangle(None));
        assert!(!FileConfig::demangle(Some(&parse("demangle = false\n").unwrap())));
        let err = parse("demangle = \"no\"\n").unwrap_err();
        assert_eq!(err.location.as_deref(), Some("x.toml:1:1"));
        let schema = ConfigSchema::new(vec![ConfigKey::new("width", ConfigType::Integer, "1", "")]);
        let err = plugin_table(
            Some(&parse("[sink.chrome]\ndemangle = false\n").unwrap()),
            PluginKind::Sink,
            "chrome",
            &schema,
        )
        .unwrap_err();
        assert!(err.message.contains("top-level `demangle = false`"), "{err}");
    }

    #[test]
    fn only_a_regular_file_of_bounded_size_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let big = dir.path().join("big.toml");
        std::fs::write(&big, format!("# {}\n", "x".repeat(MAX_CONFIG_BYTES as usize))).unwrap();
        let cases = [
            (Path::new("/dev/zero"), "not a regular file"),
            (fifo.as_path(), "not a regular file"),
            (dir.path(), "it is a directory"),
            (big.as_path(), "larger than 1 MiB"),
        ];
        for (path, why) in cases {
            let err = FileConfig::load(path).unwrap_err();
            let want = format!("failed to read config file {}: ", path.display());
            assert!(err.message.starts_with(&want) && err.message.contains(why), "{err}");
            assert!(err.message.contains("hint: give the path of a TOML file"), "{err}");
        }
        let ok = dir.path().join("ok.toml");
        std::fs::write(&ok, "output = \"out\"\n").unwrap();
        assert_eq!(FileConfig::load(&ok).unwrap().output.as_deref(), Some(Path::new("out")));
    }

    #[test]
    fn an_empty_output_is_a_located_config_error() {
        for text in ["output = \"\"\n", "output = \"a\\u0000b\"\n"] {
            let err = parse(&format!("sinks = [\"folded\"]\n{text}")).unwrap_err();
            assert_eq!(err.location.as_deref(), Some("x.toml:2:1"), "{text}");
            assert!(err.message.contains("but must name a directory"), "{err}");
        }
    }

    #[test]
    fn unknown_plugin_table_is_located() {
        let cfg = parse("\n[sink.nosuch]\nx = 1\n").unwrap();
        let err = cfg.check_known(PluginKind::Sink, &["folded".into()]).unwrap_err();
        assert_eq!(err.location.as_deref(), Some("x.toml:2:7"));
        assert!(err.message.contains("unknown sink plugin `nosuch`"), "{err}");
    }
}
