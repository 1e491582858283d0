//! `--set KIND.PLUGIN.KEY=VALUE`: a plugin's config key on the command line
//! (`--set source.mysource.mode=agent`, `--set sink.dump.limit=1000`), over the config file's
//! `[KIND.PLUGIN]` table. The value is TOML (`1000`, `true`, `["a", "b"]`, `"text"`); anything
//! that does not read as one TOML value is taken as a string, so `off` needs no quotes. It is
//! then checked exactly like the file's tables, against the plugin's declared schema (type,
//! allowed values, range), and an error names the `--set` it came from.

use xpuprof_sdk::PluginKind;

use crate::config::{ConfigError, FileConfig};

/// One `--set`.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    /// Source or sink.
    pub kind: PluginKind,
    /// The plugin's name.
    pub plugin: String,
    /// The config key.
    pub key: String,
    /// The value, typed as TOML reads it.
    pub value: toml::Value,
}

/// Reads `KIND.PLUGIN.KEY=VALUE`.
pub fn parse(arg: &str) -> Result<Override, ConfigError> {
    let bad = |why: &str| {
        ConfigError {
        location: Some(format!("--set {arg}")),
        message: format!(
            "{why}; expected KIND.PLUGIN.KEY=VALUE, e.g. --set source.mysource.mode=agent or --set sink.dump.limit=100"
        ),
    }
    };
    let (path, text) = arg.split_once('=').ok_or_else(|| bad("no `=`"))?;
    let mut parts = path.trim().splitn(3, '.');
    let (kind, plugin, key) = match (parts.next(), parts.next(), parts.next()) {
        (Some(k), Some(p), Some(key)) if !p.is_empty() && !key.is_empty() => (k, p, key),
        _ => return Err(bad("the key is not KIND.PLUGIN.KEY")),
    };
    let kind = match kind {
        "source" => PluginKind::Source,
        "sink" => PluginKind::Sink,
        other => return Err(bad(&format!("`{other}` is neither `source` nor `sink`"))),
    };
    Ok(Override { kind, plugin: plugin.to_owned(), key: key.to_owned(), value: value(text) })
}

/// `text` as one TOML value, else as a string.
fn value(text: &str) -> toml::Value {
    match toml::from_str::<toml::Table>(&format!("v = {text}")) {
        Ok(mut t) if t.len() == 1 => t.remove("v").unwrap_or_else(|| toml::Value::String(text.to_owned())),
        _ => toml::Value::String(text.to_owned()),
    }
}

/// Applies every `--set` in `args` over `file` (a config without a file when there is none);
/// `None` when there is neither.
pub fn apply(file: Option<FileConfig>, args: &[String]) -> Result<Option<FileConfig>, ConfigError> {
    if args.is_empty() {
        return Ok(file);
    }
    let mut cfg = file.unwrap_or_default();
    for a in args {
        let o = parse(a)?;
        cfg.set_plugin_key(o.kind, &o.plugin, &o.key, o.value);
    }
    Ok(Some(cfg))
}

#[cfg(test)]
mod tests {
    use super::*;
    use xpuprof_sdk::{ConfigKey, ConfigSchema, ConfigType};

    #[test]
    fn values_are_typed_as_toml_reads_them_and_bare_words_are_strings() {
        let o = parse("source.mysource.mode=agent").unwrap();
        assert_eq!((o.kind, o.plugin.as_str(), o.key.as_str()), (PluginKind::Source, "mysource", "mode"));
        assert_eq!(o.value, toml::Value::String("agent".into()));
        assert_eq!(parse("sink.dump.limit=100").unwrap().value, toml::Value::Integer(100));
        assert_eq!(parse("sink.x.on=true").unwrap().value, toml::Value::Boolean(true));
        assert_eq!(parse("sink.x.s=\"a b\"").unwrap().value, toml::Value::String("a b".into()));
        assert_eq!(parse("sink.x.s=1\nother = 2").unwrap().value, toml::Value::String("1\nother = 2".into()));
        for bad in ["source.mysource", "mysource.mode=agent", "source..k=1", "source.x.k"] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.starts_with(&format!("--set {bad}: ")) && e.contains("KIND.PLUGIN.KEY=VALUE"), "{e}");
        }
    }

    #[test]
    fn a_set_is_checked_like_the_file_and_its_error_names_the_set() {
        let mut hz = ConfigKey::new("sample_hz", ConfigType::Integer, "99", "");
        (hz.min, hz.max) = (Some(1.into()), Some(1000.into()));
        let schema = ConfigSchema::new(vec![hz]);
        let table = |args: &[&str]| {
            let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            let cfg = apply(None, &args)?;
            crate::config::plugin_table(cfg.as_ref(), PluginKind::Source, "sampler", &schema)
        };
        assert_eq!(table(&["source.sampler.sample_hz=99"]).unwrap()["sample_hz"].as_integer(), Some(99));
        let e = table(&["source.sampler.sample_hz=5000"]).unwrap_err().to_string();
        assert!(e.starts_with("--set source.sampler.sample_hz: `sample_hz` of source `sampler`"), "{e}");
        let e = table(&["source.sampler.sample_hz=fast"]).unwrap_err().to_string();
        assert!(e.starts_with("--set source.sampler.sample_hz: "), "{e}");
        let e = table(&["source.sampler.hz=1"]).unwrap_err().to_string();
        assert!(e.starts_with("--set source.sampler.hz: unknown key `hz`"), "{e}");
        let cfg = apply(None, &["source.nope.k=1".into()]).unwrap().unwrap();
        let e = cfg.check_known(PluginKind::Source, &["sampler".into()]).unwrap_err().to_string();
        assert!(e.starts_with("--set source.nope: unknown source plugin `nope`"), "{e}");
    }

    #[test]
    fn a_set_wins_over_the_file() {
        let file =
            FileConfig::parse(std::path::Path::new("x.toml"), "[sink.dump]\nlimit = 5\nfile = \"a\"\n");
        let cfg = apply(Some(file.unwrap()), &["sink.dump.limit=7".into()]).unwrap().unwrap();
        let schema = ConfigSchema::new(vec![
            ConfigKey::new("limit", ConfigType::Integer, "0", ""),
            ConfigKey::new("file", ConfigType::String, "\"records.jsonl\"", ""),
        ]);
        let t = crate::config::plugin_table(Some(&cfg), PluginKind::Sink, "dump", &schema).unwrap();
        assert_eq!((t["limit"].as_integer(), t["file"].as_str()), (Some(7), Some("a")));
    }
}
