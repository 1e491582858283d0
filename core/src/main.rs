//! The `xpuprof` command line: parses arguments into the core's plain option structs and maps
//! outcomes to exit codes. Everything else lives in `xpuprof_core`.

// A closed stderr must never abort a session: print through `say!`.
#![deny(clippy::print_stderr)]

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use xpuprof_core::config::FileConfig;
use xpuprof_core::host::{Registry, SearchPath};
use xpuprof_core::merge::{MergeOptions, MergeOutcome};
use xpuprof_core::newplugin::Lang;
use xpuprof_core::report::ReportOptions;
use xpuprof_core::session::RecordOptions;
use xpuprof_core::{check, diff, doctor, report, say, summary, term};
use xpuprof_sdk::PluginKind;

mod capture_cli;

/// Exit code for xpuprof's own failures.
const EXIT_INTERNAL: u8 = 125;
/// Exit code for usage and config errors.
const EXIT_USAGE: u8 = 2;

#[derive(Parser, Debug)]
#[command(
    name = "xpuprof",
    version,
    about = "GPU time under the exact CPU stacks that launched it, next to where the CPU spent its own time",
    after_help = "Examples:\n  xpuprof --sink folded,chrome -- python train.py\n  xpuprof report xpuprof-out --sink chrome\n  xpuprof plugins\n  xpuprof doctor"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    record: RecordArgs,
    #[command(flatten)]
    global: GlobalArgs,
}

#[derive(Args, Debug, Clone, Default)]
struct GlobalArgs {
    /// Also look for plugins in DIR (repeatable; before XPUPROF_PLUGIN_PATH and the config).
    #[arg(long = "plugin-dir", value_name = "DIR", global = true)]
    plugin_dirs: Vec<PathBuf>,
    /// Config file (default: ./xpuprof.toml when it exists).
    #[arg(short = 'c', long = "config", value_name = "FILE", global = true)]
    config: Option<PathBuf>,
    /// A plugin's config key, over the config file (repeatable): `source.NAME.KEY=VALUE` or
    /// `sink.NAME.KEY=VALUE`, checked like the file (e.g. --set sink.dump.limit=100).
    #[arg(long = "set", value_name = "KIND.PLUGIN.KEY=VALUE", global = true)]
    sets: Vec<String>,
    /// More output on stderr (-v info, -vv debug).
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count, global = true)]
    verbose: u8,
}

#[derive(Args, Debug, Clone, Default)]
struct RecordArgs {
    /// Source plugins, comma separated (default: the config's, else the default sources this
    /// machine supports, as `xpuprof doctor` lists them).
    #[arg(long = "source", value_delimiter = ',', value_name = "A,B")]
    sources: Option<Vec<String>>,
    /// Sink plugins, comma separated (default: the config's, else folded and summary).
    #[arg(long = "sink", value_delimiter = ',', value_name = "C,D")]
    sinks: Option<Vec<String>>,
    /// Output directory (default: the config's, else xpuprof-out).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    output: Option<PathBuf>,
    /// No status line while recording.
    #[arg(long)]
    quiet: bool,
    /// Under sudo, run the command as root (default: as the user who invoked sudo).
    #[arg(long)]
    keep_root: bool,
    #[command(flatten)]
    windows: capture_cli::WindowArgs,
    /// The command to profile, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Record a command (the default when no subcommand is given).
    Record(RecordArgs),
    /// Profile a running process that xpuprof did not start (`--tree`: with its children).
    Attach(capture_cli::AttachArgs),
    /// Open a capture window in a running session (`xpuprof record --start-paused ...`).
    Trigger(capture_cli::TriggerArgs),
    /// Replay an archive through sinks (`--merge`: several hosts' recordings as one job).
    Report {
        /// The archive directory or the output directory containing it.
        #[arg(required_unless_present = "merge")]
        archive: Option<PathBuf>,
        /// Merge these recordings (one per host or rank) into one session, clocks lined up.
        #[arg(long = "merge", value_name = "DIR", num_args = 1.., conflicts_with = "archive")]
        merge: Vec<PathBuf>,
        /// Sinks, comma separated (default: those of the recorded session).
        #[arg(long = "sink", value_delimiter = ',', value_name = "C,D")]
        sinks: Option<Vec<String>>,
        /// Output directory (default: <archive dir>/report; with --merge, xpuprof-merged).
        #[arg(short = 'o', long = "output", value_name = "DIR")]
        output: Option<PathBuf>,
    },
    /// List every plugin found, with its ABI and path, and why some cannot load.
    Plugins {
        /// Print an example config file documenting every key instead.
        #[arg(long)]
        config_example: bool,
    },
    /// Check what each source needs and whether this machine has it.
    Doctor,
    /// Check a plugin library against the plugin contract (whole lifecycle in a harness); exit 1
    /// when it breaks a rule. `-c FILE` gives its config table.
    CheckPlugin {
        /// The plugin library (`libxpuprof_plugin_<name>.so`).
        path: PathBuf,
        /// Seconds before a call that has not returned counts as blocked.
        #[arg(long, default_value_t = 10)]
        timeout: u64,
        /// Skip the file name rule `libxpuprof_plugin_<name>.so` (for a build renamed on purpose).
        #[arg(long)]
        any_name: bool,
        /// Run the check in this process (by default it runs in a child, so a crash is reported).
        #[arg(long, hide = true)]
        in_process: bool,
        /// Keep what the check produced in DIR: a source's records (records.jsonl, records.bin),
        /// a sink's input (input.jsonl) and output files (outputs/).
        #[arg(long, value_name = "DIR")]
        keep: Option<PathBuf>,
        /// Give a sink these records (a file of the SDK's record encoding, as `--keep` keeps a
        /// source's `records.bin`) instead of the canonical session.
        #[arg(long, value_name = "FILE")]
        input: Option<PathBuf>,
        /// The target a source records (default: sleep 0.2).
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Print an in-target agent's dump file (its wire stream, written to the folder that
    /// XPUPROF_<B>_DUMP or a C agent's `dump_env` names) as the dump sink's JSON lines.
    DecodeAgentDump {
        /// The dump file (`<prefix>-<pid>.bin`).
        file: PathBuf,
        /// Write the lines to FILE instead of stdout.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Create a plugin crate (Rust) or folder (C) that builds and passes `check-plugin` as is.
    ///
    /// It builds against the kit installed beside this xpuprof (PREFIX/share/xpuprof/sdk,
    /// PREFIX/share/xpuprof/plugin-test, PREFIX/include, PREFIX/lib/pkgconfig/xpuprof.pc for
    /// PREFIX/bin/xpuprof), else against the repository this xpuprof was built in.
    NewPlugin {
        /// Plugin name (letters, digits, `-`, `_`).
        name: String,
        /// `source` or `sink`.
        #[arg(long, value_parser = ["source", "sink"])]
        kind: String,
        /// `rust` or `c`.
        #[arg(long, value_parser = ["rust", "c"])]
        lang: String,
        /// Folder to create (default: ./NAME).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// The xpuprof-sdk sources (Rust; default: the installed kit's, see above).
        #[arg(long)]
        sdk: Option<PathBuf>,
        /// The xpuprof-plugin-test sources (Rust; default: next to the SDK's).
        #[arg(long)]
        plugin_test: Option<PathBuf>,
        /// The folder holding xpuprof/plugin.h (C; default: the installed kit's, see above).
        #[arg(long)]
        include: Option<PathBuf>,
        /// A Rust source in two halves, as xpuprof's GPU backends: an in-target agent on the
        /// agent kit and the host plugin decoding its stream (needs the repository's sdk/).
        #[arg(long)]
        agent: bool,
    },
    /// Compare two runs (summary.json, output dir or archive); exit 1 on regression.
    Diff {
        /// Baseline.
        base: PathBuf,
        /// Current run.
        current: PathBuf,
        /// Regression threshold, e.g. 5% (default: the config's [diff] threshold, else 5%).
        #[arg(long)]
        threshold: Option<String>,
        /// Metric that counts: total, mean, p50, p99 or count.
        #[arg(long)]
        metric: Option<String>,
        /// Output format: text, json or markdown.
        #[arg(long, default_value = "text")]
        format: String,
    },
}

fn init_logging(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("XPUPROF_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Its report of a failed write is an `eprintln!`, which panics on a closed stderr.
        .log_internal_errors(false)
        .with_ansi(term::stderr_is_terminal() && std::env::var_os("NO_COLOR").is_none())
        .without_time()
        .with_target(false)
        .init();
}

fn load_config(global: &GlobalArgs) -> anyhow::Result<Option<FileConfig>> {
    let path = match &global.config {
        Some(p) => Some(p.clone()),
        None if PathBuf::from("xpuprof.toml").is_file() => Some(PathBuf::from("xpuprof.toml")),
        None => None,
    };
    let file = path.map(|p| FileConfig::load(&p)).transpose()?;
    Ok(xpuprof_core::overrides::apply(file, &global.sets)?)
}

fn search_path(global: &GlobalArgs, cfg: Option<&FileConfig>) -> SearchPath {
    let env = std::env::var("XPUPROF_PLUGIN_PATH").ok();
    SearchPath::new(&global.plugin_dirs, env.as_deref(), cfg.map(|c| c.plugin_dirs.as_slice()).unwrap_or(&[]))
}

/// A capture's sinks and output directory: the flags', else the config file's, else folded and
/// summary into `xpuprof-out`.
fn sinks_and_output(
    sinks: Option<Vec<String>>,
    output: Option<PathBuf>,
    cfg: Option<&FileConfig>,
) -> (Vec<String>, PathBuf) {
    let sinks = sinks
        .or_else(|| cfg.and_then(|c| c.sinks.clone()))
        .unwrap_or_else(|| vec!["folded".into(), "summary".into()]);
    let output =
        output.or_else(|| cfg.and_then(|c| c.output.clone())).unwrap_or_else(|| PathBuf::from("xpuprof-out"));
    (sinks, output)
}

fn check_list(flag: &str, v: &Option<Vec<String>>) -> anyhow::Result<()> {
    if let Some(v) = v {
        if v.is_empty() || v.iter().any(|s| s.trim().is_empty()) {
            bail!("--{flag} needs a comma-separated list of plugin names, got an empty name");
        }
    }
    Ok(())
}

/// A usage or config error: `main` maps it to exit code 2.
#[derive(Debug)]
struct Usage(String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// Turns any error into a usage error (exit code 2).
fn usage(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow::Error::new(Usage(format!("{e:#}")))
}

fn record(args: RecordArgs, global: &GlobalArgs) -> anyhow::Result<u8> {
    check_list("source", &args.sources).map_err(usage)?;
    check_list("sink", &args.sinks).map_err(usage)?;
    if args.command.is_empty() {
        return Err(usage(
            "no command given: xpuprof [record] [--source ...] [--sink ...] -- <command> [args]",
        ));
    }
    let cfg = load_config(global).map_err(usage)?;
    let search = search_path(global, cfg.as_ref());
    let sources = match args.sources.or_else(|| cfg.as_ref().and_then(|c| c.sources.clone())) {
        Some(s) => s,
        None => {
            let d = doctor::default_sources(&Registry::discover(&search));
            if d.is_empty() {
                return Err(usage(
                    "no usable source found for this machine; name one with --source (see `xpuprof doctor`)",
                ));
            }
            d
        }
    };
    let (sinks, output_dir) = sinks_and_output(args.sinks, args.output, cfg.as_ref());
    let opts = RecordOptions {
        command: args.command,
        sources,
        sinks,
        output_dir,
        config: cfg,
        search,
        verbosity: global.verbose,
        status_line: !args.quiet,
        keep_root: args.keep_root,
        capture: args.windows.options()?,
    };
    match capture_cli::record(&opts) {
        Ok(outcome) => {
            summary::print(&outcome);
            Ok(outcome.exit_code().clamp(0, 255) as u8)
        }
        Err(e) => {
            say!("xpuprof: {e}");
            Ok(e.exit_code() as u8)
        }
    }
}

/// `check-plugin`'s switches.
struct CheckFlags {
    timeout: u64,
    any_name: bool,
    in_process: bool,
    keep: Option<PathBuf>,
    input: Option<PathBuf>,
}

fn check_plugin(
    path: PathBuf,
    flags: CheckFlags,
    command: Vec<String>,
    global: &GlobalArgs,
) -> anyhow::Result<u8> {
    let CheckFlags { timeout, any_name, in_process, keep, input } = flags;
    if !path.is_file() {
        return Err(usage(format!("{} is not a file: give the path of a plugin library", path.display())));
    }
    if !in_process {
        let exe = std::env::current_exe()?;
        let mut args: Vec<std::ffi::OsString> = vec!["check-plugin".into(), "--in-process".into()];
        if any_name {
            args.push("--any-name".into());
        }
        args.extend(["--timeout".into(), timeout.to_string().into(), path.clone().into()]);
        if let Some(c) = &global.config {
            args.extend(["-c".into(), c.clone().into()]);
        }
        for s in &global.sets {
            args.extend(["--set".into(), s.into()]);
        }
        if let Some(k) = &keep {
            args.extend(["--keep".into(), k.clone().into()]);
        }
        if let Some(i) = &input {
            args.extend(["--input".into(), i.clone().into()]);
        }
        if !command.is_empty() {
            args.push("--".into());
            args.extend(command.into_iter().map(Into::into));
        }
        let passed = check::isolate::run(&exe, &args, &mut |line| term::out(&format!("{line}\n")))?;
        return Ok(u8::from(!passed));
    }
    let mut opts = check::CheckOptions {
        config_file: global.config.clone(),
        timeout: std::time::Duration::from_secs(timeout.max(1)),
        file_name_rule: !any_name,
        sets: global.sets.clone(),
        keep,
        input,
        ..Default::default()
    };
    if !command.is_empty() {
        opts.command = command;
    }
    let report = check::check_plugin(&path, &opts, &mut |step| {
        term::out(&format!("{}{step}\n", check::isolate::STEP_MARK));
    });
    term::out(&report.to_string());
    Ok(u8::from(!report.passed()))
}

fn run(cli: Cli) -> anyhow::Result<u8> {
    let global = cli.global;
    match cli.command {
        None => record(cli.record, &global),
        Some(Command::Record(args)) => record(args, &global),
        Some(Command::Attach(args)) => capture_cli::attach(args, &global),
        Some(Command::Trigger(args)) => capture_cli::trigger(args),
        Some(Command::Report { archive, merge, sinks, output }) => {
            check_list("sink", &sinks).map_err(usage)?;
            let cfg = load_config(&global).map_err(usage)?;
            let search = search_path(&global, cfg.as_ref());
            let Some(archive) = archive else {
                let output_dir = output.unwrap_or_else(|| PathBuf::from("xpuprof-merged"));
                let sinks = sinks.unwrap_or_default();
                let opts = MergeOptions {
                    archives: merge,
                    sinks,
                    output_dir,
                    config: cfg,
                    search,
                    verbosity: global.verbose,
                };
                return Ok(merged(xpuprof_core::merge::merge(&opts)));
            };
            let base = if archive.file_name().is_some_and(|n| n == "archive") {
                archive.parent().map(PathBuf::from).unwrap_or_default()
            } else {
                archive.clone()
            };
            let opts = ReportOptions {
                output_dir: output.unwrap_or_else(|| base.join("report")),
                archive,
                sinks: sinks.unwrap_or_default(),
                config: cfg,
                search,
                verbosity: global.verbose,
            };
            match report::report(&opts) {
                Ok(o) => {
                    say!("xpuprof: replayed {} records", summary::human(o.records));
                    if let Some(c) = &o.corruption {
                        say!(
                            "xpuprof: the archive is damaged in {} place(s), first: {c}; {} record(s) \
                             could not be read and were skipped, everything else was replayed",
                            o.damaged_places,
                            summary::human(o.skipped)
                        );
                    }
                    for f in &o.files {
                        say!("  wrote {f}");
                    }
                    for f in &o.plugin_failures {
                        say!("  FAILED: {f}");
                    }
                    Ok(o.exit_code() as u8)
                }
                Err(e) => {
                    say!("xpuprof: {e}");
                    Ok(e.exit_code() as u8)
                }
            }
        }
        Some(Command::Plugins { config_example }) => {
            let cfg = load_config(&global).map_err(usage)?;
            let path = search_path(&global, cfg.as_ref());
            let reg = Registry::discover(&path);
            if config_example {
                term::out(&doctor::example_config(&reg));
            } else {
                term::out(&doctor::plugins_report(&reg));
                term::out(&doctor::search_report(&path, &reg, global.verbose > 0));
            }
            Ok(0)
        }
        Some(Command::Doctor) => {
            let cfg = load_config(&global).map_err(usage)?;
            let reg = Registry::discover(&search_path(&global, cfg.as_ref()));
            term::out(&doctor::doctor_report(&reg));
            Ok(0)
        }
        Some(Command::NewPlugin { name, kind, lang, dir, sdk, plugin_test, include, agent }) => {
            let mut kit = xpuprof_core::newplugin::Kit::here();
            if let Some(sdk) = sdk {
                kit.plugin_test = xpuprof_core::newplugin::plugin_test_near(&sdk);
                kit.sdk = sdk;
            }
            kit.plugin_test = plugin_test.unwrap_or(kit.plugin_test);
            kit.include = include.unwrap_or(kit.include);
            let req = xpuprof_core::newplugin::NewPlugin {
                dir: dir.unwrap_or_else(|| PathBuf::from(&name)),
                name,
                kind: if kind == "source" { PluginKind::Source } else { PluginKind::Sink },
                lang: if lang == "rust" { Lang::Rust } else { Lang::C },
                agent,
                kit,
            };
            let next = req.write().map_err(usage)?;
            term::out(&format!("created {}; next:\n{next}\n", req.dir.display()));
            Ok(0)
        }
        Some(Command::CheckPlugin { path, timeout, any_name, in_process, keep, input, command }) => {
            check_plugin(path, CheckFlags { timeout, any_name, in_process, keep, input }, command, &global)
        }
        Some(Command::DecodeAgentDump { file, output }) => {
            let c = xpuprof_core::agent_dump::run(&file, output.as_deref())?;
            say!("xpuprof: {} lines, {} process(es), {} refused", c.lines, c.kit.processes, c.kit.refused);
            Ok(u8::from(c.kit.refused > 0 || c.trailing_bytes > 0))
        }
        Some(Command::Diff { base, current, threshold, metric, format }) => {
            let cfg = load_config(&global).map_err(usage)?;
            let cfg_str = |k: &str| {
                cfg.as_ref().and_then(|c| c.diff.get(k)).and_then(|v| v.as_str()).map(str::to_owned)
            };
            let threshold = threshold.or_else(|| cfg_str("threshold")).unwrap_or_else(|| "5%".into());
            let threshold_pct =
                threshold.trim().trim_end_matches('%').parse::<f64>().map_err(|_| {
                    usage(format!("--threshold must be a percentage like 5%, got {threshold:?}"))
                })?;
            let opts = diff::DiffOptions {
                base,
                current,
                threshold_pct,
                metric: metric.or_else(|| cfg_str("metric")).unwrap_or_else(|| "total".into()),
                format,
            };
            let mut out = std::io::stdout().lock();
            match diff::run(&opts, &mut out) {
                Ok(regressed) => Ok(u8::from(regressed)),
                Err(e) => {
                    say!("xpuprof diff: {e}");
                    Ok(EXIT_USAGE)
                }
            }
        }
    }
}

/// What `xpuprof --version` says after the name: the version, the plugin ABI this binary
/// loads, and where it looks for plugins (the directories that exist marked as such), so an
/// installed xpuprof shows which plugin directory it uses.
fn long_version() -> String {
    let env = std::env::var("XPUPROF_PLUGIN_PATH").ok();
    let path = SearchPath::new(&[], env.as_deref(), &[]);
    let mut s = format!(
        "{}\nplugin ABI {} (SDK {})\nplugins are loaded from (first found wins; also --plugin-dir and the config's plugin_dirs):",
        env!("CARGO_PKG_VERSION"),
        xpuprof_sdk::abi::ABI_VERSION,
        xpuprof_sdk::abi::SDK_VERSION
    );
    for (dir, origin) in &path.dirs {
        let state = if dir.exists() { "" } else { ", missing" };
        s.push_str(&format!("\n  {} ({origin}{state})", dir.display()));
    }
    s
}

/// Prints what `report --merge` did; its exit code.
fn merged(result: Result<MergeOutcome, xpuprof_core::session::SessionError>) -> u8 {
    let o = match result {
        Ok(o) => o,
        Err(e) => {
            say!("xpuprof: {e}");
            return e.exit_code() as u8;
        }
    };
    say!(
        "xpuprof: merged {} records of {} recording(s)",
        summary::human(o.report.records),
        o.recordings.len()
    );
    for line in o.clock_lines() {
        say!("  {line}");
    }
    if o.pids_renumbered > 0 {
        say!(
            "  {} pid(s) taken on two hosts were renumbered (a rank's name keeps its real pid)",
            o.pids_renumbered
        );
    }
    for f in &o.report.files {
        say!("  wrote {f}");
    }
    for f in &o.report.plugin_failures {
        say!("  FAILED: {f}");
    }
    o.exit_code() as u8
}

fn main() -> ExitCode {
    std::panic::set_hook(Box::new(|info| {
        say!("xpuprof: internal error: {info}; please report this");
    }));
    let cli = match Cli::command()
        // Leaked once: clap keeps the text for the whole run.
        .long_version(&*Box::leak(long_version().into_boxed_str()))
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m))
    {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USAGE } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    init_logging(cli.global.verbose);
    match std::panic::catch_unwind(|| run(cli)) {
        Ok(Ok(code)) => ExitCode::from(code),
        Ok(Err(e)) => {
            say!("xpuprof: {e:#}");
            let is_usage = e.downcast_ref::<Usage>().is_some();
            ExitCode::from(if is_usage { EXIT_USAGE } else { EXIT_INTERNAL })
        }
        Err(_) => ExitCode::from(EXIT_INTERNAL),
    }
}
