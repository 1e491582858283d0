//! The command line of capture windows, `attach` and `trigger`: clap arguments turned into the
//! core's plain option structs (`CaptureOptions`, `AttachOptions`).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use xpuprof_core::attach::AttachOptions;
use xpuprof_core::host::Registry;
use xpuprof_core::session::{self, RecordOptions, SessionError, SessionOutcome};
use xpuprof_core::window::{self, CaptureOptions, CaptureRange, RangeEnd};
use xpuprof_core::{attach, doctor, say, summary, trigger};

use super::{check_list, load_config, search_path, sinks_and_output, usage, GlobalArgs};

/// `xpuprof record`'s window flags.
#[derive(Args, Debug, Clone, Default)]
pub struct WindowArgs {
    /// Record only from DUR after the start (e.g. 30s, 500ms, 2m).
    #[arg(long, value_name = "DUR", value_parser = window::parse_duration)]
    pub delay: Option<Duration>,
    /// Record for DUR (after --delay), then stay dormant until the program exits.
    #[arg(long, value_name = "DUR", value_parser = window::parse_duration)]
    pub duration: Option<Duration>,
    /// Start dormant; `xpuprof trigger` or SIGUSR2 to xpuprof opens a window.
    #[arg(long)]
    pub start_paused: bool,
    /// Record between the program's own markers: KIND or KIND:MESSAGE[@DOMAIN] (kinds: README).
    #[arg(long, value_name = "RANGE", value_parser = |s: &str| s.parse::<CaptureRange>())]
    pub capture_range: Option<CaptureRange>,
    /// After the first marker window: stop (default) or repeat.
    #[arg(long, value_name = "stop|repeat", value_parser = |s: &str| s.parse::<RangeEnd>(), requires = "capture_range")]
    pub capture_range_end: Option<RangeEnd>,
    /// Continuous mode: a --duration window every INTERVAL, each in its own directory under -o.
    #[arg(long, value_name = "INTERVAL", value_parser = window::parse_duration, requires = "duration")]
    pub every: Option<Duration>,
    /// Continuous mode: keep only the newest N window directories.
    #[arg(long, value_name = "N", requires = "every", value_parser = clap::value_parser!(u32).range(1..))]
    pub keep: Option<u32>,
}

impl WindowArgs {
    /// The checked window options.
    pub fn options(&self) -> anyhow::Result<CaptureOptions> {
        if let (Some(every), Some(d)) = (self.every, self.duration) {
            if d > every {
                return Err(usage(format!(
                    "--duration ({d:?}) is longer than --every ({every:?}): windows would overlap"
                )));
            }
            if self.start_paused || self.capture_range.is_some() {
                return Err(usage("--every opens windows by time: it cannot be combined with --start-paused or --capture-range"));
            }
        }
        if self.capture_range.is_some() && (self.delay.is_some() || self.start_paused) {
            return Err(usage(
                "--capture-range opens windows at the program's markers: it cannot be combined with --delay or \
                 --start-paused",
            ));
        }
        Ok(CaptureOptions {
            delay: self.delay,
            duration: self.duration,
            start_paused: self.start_paused,
            range: self.capture_range.clone(),
            range_end: self.capture_range_end.unwrap_or_default(),
            every: self.every,
            keep: self.keep.map(|k| k as usize),
        })
    }
}

/// Runs a recording: continuous (`--every`) or one session.
pub fn record(opts: &RecordOptions) -> Result<SessionOutcome, SessionError> {
    // From the start: a window request that comes while plugins load must not end xpuprof
    // (SIGUSR2's default action).
    trigger::install();
    if opts.capture.every.is_some() {
        xpuprof_core::continuous::record(opts)
    } else {
        session::record(opts)
    }
}

/// `xpuprof attach`'s arguments.
#[derive(Args, Debug, Clone)]
pub struct AttachArgs {
    /// The running process.
    pub pid: u32,
    /// Its existing and future descendants too (every rank under torchrun/mpirun).
    #[arg(long)]
    pub tree: bool,
    /// Record for DUR, then detach (default: until Ctrl+C or the process exits).
    #[arg(long, value_name = "DUR", value_parser = window::parse_duration)]
    pub duration: Option<Duration>,
    /// Start recording DUR after attaching.
    #[arg(long, value_name = "DUR", value_parser = window::parse_duration)]
    pub delay: Option<Duration>,
    /// Continuous mode: a --duration window every INTERVAL, each in its own directory under -o,
    /// dormant between them, until Ctrl+C or the process exits.
    #[arg(long, value_name = "INTERVAL", value_parser = window::parse_duration, requires = "duration")]
    pub every: Option<Duration>,
    /// Continuous mode: keep only the newest N window directories.
    #[arg(long, value_name = "N", requires = "every", value_parser = clap::value_parser!(u32).range(1..))]
    pub keep: Option<u32>,
    /// Source plugins, comma separated (default: the config's, else the machine's default sources).
    #[arg(long = "source", value_delimiter = ',', value_name = "A,B")]
    pub sources: Option<Vec<String>>,
    /// Sink plugins, comma separated (default: the config's, else folded and summary).
    #[arg(long = "sink", value_delimiter = ',', value_name = "C,D")]
    pub sinks: Option<Vec<String>>,
    /// Output directory (default: the config's, else xpuprof-out).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: Option<PathBuf>,
}

/// Runs `xpuprof attach`.
pub fn attach(args: AttachArgs, global: &GlobalArgs) -> anyhow::Result<u8> {
    check_list("source", &args.sources).map_err(usage)?;
    check_list("sink", &args.sinks).map_err(usage)?;
    let cfg = load_config(global).map_err(usage)?;
    let search = search_path(global, cfg.as_ref());
    let sources = args
        .sources
        .or_else(|| cfg.as_ref().and_then(|c| c.sources.clone()))
        .unwrap_or_else(|| doctor::default_sources(&Registry::discover(&search)));
    if let (Some(every), Some(d)) = (args.every, args.duration) {
        if d > every {
            return Err(usage(format!(
                "--duration ({d:?}) is longer than --every ({every:?}): windows would overlap"
            )));
        }
    }
    let (sinks, output_dir) = sinks_and_output(args.sinks, args.output, cfg.as_ref());
    let opts = AttachOptions {
        pid: args.pid,
        tree: args.tree,
        sources,
        sinks,
        output_dir,
        config: cfg,
        search,
        verbosity: global.verbose,
        capture: CaptureOptions {
            delay: args.delay,
            duration: args.duration,
            every: args.every,
            keep: args.keep.map(|k| k as usize),
            ..Default::default()
        },
    };
    trigger::install();
    let outcome = if opts.capture.every.is_some() {
        xpuprof_core::continuous::attach(&opts)
    } else {
        attach::attach(&opts)
    };
    match outcome {
        Ok(outcome) => {
            summary::print_attached(&outcome, opts.pid);
            Ok(outcome.exit_code().clamp(0, 255) as u8)
        }
        Err(e) => {
            say!("xpuprof: {e}");
            Ok(e.exit_code() as u8)
        }
    }
}

/// `xpuprof trigger`'s arguments.
#[derive(Args, Debug, Clone)]
pub struct TriggerArgs {
    /// The session: xpuprof's pid or its output directory (default: the only one running).
    pub session: Option<String>,
    /// Length of the window (default: the session's --duration, else 10s).
    #[arg(long, value_name = "DUR", value_parser = window::parse_duration)]
    pub duration: Option<Duration>,
}

/// Runs `xpuprof trigger`.
pub fn trigger(args: TriggerArgs) -> anyhow::Result<u8> {
    let pid = trigger::find(args.session.as_deref()).map_err(usage)?;
    match trigger::send(pid, args.duration) {
        Ok(()) => {
            say!("xpuprof: asked session {pid} to open a capture window");
            Ok(0)
        }
        Err(e) => {
            say!("xpuprof: {e}");
            Ok(1)
        }
    }
}
