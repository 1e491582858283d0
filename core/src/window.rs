//! Capture windows: when the sources record while the target runs.
//!
//! A session records the whole run unless the user asks for windows: by time (`--delay`,
//! `--duration`), on request (`--start-paused`, then `xpuprof trigger` or SIGUSR2), or by the
//! program's own markers (`--capture-range`, opened and closed by the GPU agents themselves).
//! The [`Controller`] runs on the host's waiting thread and opens and closes the windows of the
//! time and request kinds through [`Sources::set_capture`]; outside a window every source that
//! can pause is dormant.

use std::time::{Duration, Instant};

use xpuprof_sdk::model::{CaptureWindow, WindowOpener};

use crate::host::sources::Sources;

/// Window choices of a session, from the command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CaptureOptions {
    /// The first window opens this long after the target started.
    pub delay: Option<Duration>,
    /// Each window lasts this long (else until the end of the run).
    pub duration: Option<Duration>,
    /// No window at the start: one opens on `xpuprof trigger` / SIGUSR2.
    pub start_paused: bool,
    /// The program's markers open and close the windows (`--capture-range`).
    pub range: Option<CaptureRange>,
    /// What the end of a marker window does.
    pub range_end: RangeEnd,
    /// Continuous mode: a window of `duration` every this long, each its own output directory.
    pub every: Option<Duration>,
    /// Continuous mode: keep the newest this many window directories.
    pub keep: Option<usize>,
}

/// The markers of `--capture-range`: `KIND` or `KIND:MESSAGE[@DOMAIN]`. The kinds belong to the
/// sources that implement them (the README lists them); the host checks the form and passes the
/// text on verbatim (`[session] capture_range`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureRange {
    /// The marker kind: lowercase letters, digits and `-`.
    pub kind: String,
    /// The range's message, for kinds that select annotation ranges by name.
    pub message: Option<String>,
    /// Its domain; `None`: any domain.
    pub domain: Option<String>,
}

/// `--capture-range-end`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RangeEnd {
    /// The first marker window is the only one.
    #[default]
    Stop,
    /// Every marker range opens a window.
    Repeat,
}

impl std::str::FromStr for CaptureRange {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (kind, spec) = match s.split_once(':') {
            Some((k, rest)) => (k, Some(rest)),
            None => (s, None),
        };
        let kind_ok = !kind.is_empty()
            && kind.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !kind_ok {
            return Err(format!(
                "invalid capture range `{s}`: write KIND or KIND:MESSAGE[@DOMAIN] (the README's \
                 'Attach and capture windows' lists the kinds)"
            ));
        }
        let Some(spec) = spec else {
            return Ok(Self { kind: kind.to_owned(), message: None, domain: None });
        };
        let (message, domain) = match spec.rsplit_once('@') {
            Some((m, d)) if !d.is_empty() => (m, Some(d.to_owned())),
            Some((m, _)) => (m, None),
            None => (spec, None),
        };
        if message.is_empty() {
            return Err(format!("capture range `{s}` names no message: write {kind}:MESSAGE[@DOMAIN]"));
        }
        Ok(Self { kind: kind.to_owned(), message: Some(message.to_owned()), domain })
    }
}

impl std::fmt::Display for CaptureRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.kind)?;
        if let Some(m) = &self.message {
            write!(f, ":{m}")?;
        }
        match &self.domain {
            Some(d) => write!(f, "@{d}"),
            None => Ok(()),
        }
    }
}

impl std::str::FromStr for RangeEnd {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "stop" => Ok(Self::Stop),
            "repeat" => Ok(Self::Repeat),
            _ => Err(format!("unknown capture range end `{s}`: use stop or repeat")),
        }
    }
}

/// Parses a duration such as `30s`, `500ms`, `2m`, `1h` or `1.5s` (a bare number is seconds).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let bad = || format!("invalid duration `{s}`: write a number and a unit, e.g. 500ms, 30s, 2m, 1h");
    let n: f64 = num.parse().map_err(|_| bad())?;
    let secs = match unit.trim() {
        "ms" => n / 1000.0,
        "" | "s" => n,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(bad()),
    };
    if !secs.is_finite() || secs <= 0.0 || secs > 1e9 {
        return Err(format!("invalid duration `{s}`: it must be above zero"));
    }
    Ok(Duration::from_secs_f64(secs))
}

impl CaptureOptions {
    /// Whether the session starts with no window open.
    pub fn starts_paused(&self) -> bool {
        self.start_paused || self.delay.is_some() || self.range.is_some() || self.every.is_some()
    }

    /// Whether the session records only inside windows.
    pub fn windowed(&self) -> bool {
        self.starts_paused() || self.duration.is_some()
    }

    /// Adds the window facts the sources read to the `[session]` table.
    pub fn fill_session(&self, table: &mut toml::Table) {
        table.insert("start_paused".into(), toml::Value::Boolean(self.starts_paused()));
        if let Some(r) = &self.range {
            table.insert("capture_range".into(), toml::Value::String(r.to_string()));
            let end = match self.range_end {
                RangeEnd::Stop => "stop",
                RangeEnd::Repeat => "repeat",
            };
            table.insert("capture_range_end".into(), toml::Value::String(end.into()));
        }
    }
}

/// What opened a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opener {
    /// The session started (no `--delay`, not paused).
    Start,
    /// `--delay` elapsed.
    Delay,
    /// `xpuprof trigger` or SIGUSR2.
    Trigger,
    /// `xpuprof attach`.
    Attach,
    /// Continuous mode's clock (`--every`).
    Every,
}

impl Opener {
    /// The word outputs show.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Start => "start",
            Self::Delay => "delay",
            Self::Trigger => "trigger",
            Self::Attach => "attach",
            Self::Every => "every",
        }
    }
}

/// One window, session clock ns; `end` is 0 while it is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Opened at.
    pub start: u64,
    /// Closed at.
    pub end: u64,
    /// What opened it.
    pub opener: Opener,
}

impl Span {
    /// The window record of this span.
    pub fn record(&self) -> CaptureWindow {
        let opener = match self.opener {
            Opener::Start => WindowOpener::Start,
            Opener::Delay => WindowOpener::Delay,
            Opener::Trigger => WindowOpener::Trigger,
            Opener::Attach => WindowOpener::Attach,
            Opener::Every => WindowOpener::Every,
        };
        CaptureWindow::default().start(self.start).end(self.end.max(self.start)).opener(opener)
    }
}

/// The capture windows sources open and close themselves, at the program's markers
/// (`--capture-range`): a source emits a window record with `end` 0 when its window opens and
/// the complete record when it closes. The host follows them in the other sources.
#[derive(Debug, Default)]
pub struct MarkerWindows {
    /// Opened (`true`) and closed (`false`), oldest first, not yet applied.
    events: std::sync::Mutex<Vec<bool>>,
}

impl MarkerWindows {
    /// A watch that lives as long as the process (source threads may report late).
    pub fn leak() -> &'static Self {
        Box::leak(Box::default())
    }

    /// Notes the window records in an encoded batch (called on the emitting source's thread).
    pub fn scan(&self, batch: &[u8]) {
        let found: Vec<bool> = xpuprof_sdk::codec::Decoder::new(batch)
            .filter_map(Result::ok)
            .filter_map(|r| match r {
                xpuprof_sdk::model::Record::Window(w) => Some(w.end == 0),
                _ => None,
            })
            .collect();
        if !found.is_empty() {
            self.events.lock().unwrap_or_else(|e| e.into_inner()).extend(found);
        }
    }

    fn take(&self) -> Vec<bool> {
        std::mem::take(&mut *self.events.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Opens and closes the windows of a running session.
#[derive(Debug)]
pub struct Controller {
    duration: Option<Duration>,
    open_at: Option<Instant>,
    close_at: Option<Instant>,
    is_open: bool,
    next_opener: Opener,
    spans: Vec<Span>,
    told_cannot_pause: bool,
    /// The sources' own marker windows, followed in every source (their records are the
    /// sources'; the host writes none for them).
    markers: Option<&'static MarkerWindows>,
    /// A marker window was seen.
    marker_seen: bool,
}

/// How long a window opened by a trigger lasts when neither the trigger nor `--duration` says.
pub const DEFAULT_TRIGGER_WINDOW: Duration = Duration::from_secs(10);

impl Controller {
    /// A controller for a session whose target started at `started`; `opened` says what opens
    /// the window at the start (when the options do not start paused).
    pub fn new(opts: &CaptureOptions, started: Instant, opened: Opener) -> Self {
        let mut c = Self {
            duration: opts.duration,
            open_at: None,
            close_at: None,
            is_open: false,
            next_opener: Opener::Delay,
            spans: Vec::new(),
            told_cannot_pause: false,
            markers: None,
            marker_seen: false,
        };
        if let Some(d) = opts.delay {
            c.open_at = Some(started + d);
        } else if !opts.starts_paused() {
            // The sources started with the window open.
            c.is_open = true;
            c.close_at = opts.duration.map(|d| started + d);
            c.spans.push(Span { start: xpuprof_sdk::clock::now_ns(), end: 0, opener: opened });
        }
        c
    }

    /// Follows the windows that sources open at the program's markers.
    pub fn follow_markers(&mut self, markers: &'static MarkerWindows) {
        self.markers = Some(markers);
    }

    /// Whether a window is open.
    pub fn is_open(&self) -> bool {
        self.is_open
    }

    /// Whether nothing more will open: the last timed window closed and no trigger can come
    /// (`wait_for_triggers` false).
    pub fn finished(&self, wait_for_triggers: bool) -> bool {
        !self.is_open && self.open_at.is_none() && !self.spans.is_empty() && !wait_for_triggers
    }

    /// Opens a window now that closes after `len` (`None`: at `--duration`, else the
    /// trigger default), or extends the open one; a window open until the end stays so.
    pub fn trigger(&mut self, len: Option<Duration>, sources: &mut Sources, failures: &mut Vec<String>) {
        if self.is_open && self.close_at.is_none() {
            tracing::info!("window requested: one is open already, until the end of the run");
            return;
        }
        let len = len.or(self.duration).unwrap_or(DEFAULT_TRIGGER_WINDOW);
        self.close_at = Some(Instant::now() + len);
        if !self.is_open {
            self.next_opener = Opener::Trigger;
            self.set(true, sources, failures);
        }
    }

    /// Opens or closes what is due now.
    pub fn tick(&mut self, sources: &mut Sources, failures: &mut Vec<String>) {
        if let Some(m) = self.markers {
            for on in m.take() {
                self.marker_seen = true;
                // The marker source already switched itself; the others follow (idempotent).
                let cannot = sources.set_capture(on, failures);
                self.tell_cannot_pause(&cannot);
                tracing::info!("marker window {}", if on { "opened" } else { "closed" });
            }
        }
        let now = Instant::now();
        if !self.is_open && self.open_at.is_some_and(|t| now >= t) {
            self.open_at = None;
            self.close_at = self.duration.map(|d| now + d);
            self.set(true, sources, failures);
        } else if self.is_open && self.close_at.is_some_and(|t| now >= t) {
            self.close_at = None;
            self.set(false, sources, failures);
        }
    }

    /// Closes the open window (the session ends) and returns every window. Says so when no
    /// window ever opened: the outputs hold nothing but definitions.
    pub fn finish(mut self) -> Vec<Span> {
        if self.spans.is_empty() && !self.marker_seen {
            if self.markers.is_some() {
                tracing::warn!(
                    "no capture window opened: no source saw the program's --capture-range markers (it \
                     needs a source that implements that kind), so nothing was recorded"
                );
            } else {
                tracing::warn!(
                    "no capture window opened (the program ended before --delay, or no trigger came \
                     after --start-paused), so nothing was recorded"
                );
            }
        }
        if let Some(last) = self.spans.last_mut().filter(|s| s.end == 0) {
            last.end = xpuprof_sdk::clock::now_ns();
        }
        self.spans
    }

    fn set(&mut self, on: bool, sources: &mut Sources, failures: &mut Vec<String>) {
        let now = xpuprof_sdk::clock::now_ns();
        if on {
            // The window starts before the sources are told: nothing they record falls before it.
            self.spans.push(Span { start: now, end: 0, opener: self.next_opener });
        }
        let cannot = sources.set_capture(on, failures);
        if !on {
            if let Some(last) = self.spans.last_mut() {
                last.end = xpuprof_sdk::clock::now_ns();
            }
        }
        self.is_open = on;
        tracing::info!("capture window {}", if on { "opened" } else { "closed" });
        self.tell_cannot_pause(&cannot);
    }

    fn tell_cannot_pause(&mut self, cannot: &[(String, String)]) {
        if !self.told_cannot_pause {
            for (name, why) in cannot {
                tracing::warn!("source `{name}` records the whole run, not only the capture windows ({why})");
            }
            self.told_cannot_pause = !cannot.is_empty();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_the_units_users_write() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        for bad in ["", "s", "10x", "-1s", "0s", "1e400s"] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.contains("invalid duration"), "{bad}: {e}");
        }
    }

    #[test]
    fn capture_ranges_parse_and_print_back() {
        let r: CaptureRange = "ranges:step@train".parse().unwrap();
        let want = CaptureRange {
            kind: "ranges".into(),
            message: Some("step".into()),
            domain: Some("train".into()),
        };
        assert_eq!(r, want);
        assert_eq!(r.to_string(), "ranges:step@train");
        assert_eq!("ranges:a@b@c".parse::<CaptureRange>().unwrap().to_string(), "ranges:a@b@c");
        assert_eq!("profiler-api".parse::<CaptureRange>().unwrap().to_string(), "profiler-api");
        assert!("ranges:".parse::<CaptureRange>().unwrap_err().contains("names no message"));
        assert!("Bad Kind".parse::<CaptureRange>().unwrap_err().contains("KIND:MESSAGE[@DOMAIN]"));
        assert!("again".parse::<RangeEnd>().is_err());
    }

    #[test]
    fn marker_windows_are_seen_opening_and_closing_in_a_sources_batch() {
        use xpuprof_sdk::model::{CaptureWindow, Record, WindowOpener};
        let mut batch = Vec::new();
        let open = CaptureWindow::default().start(10).opener(WindowOpener::Trigger);
        for r in [Record::Window(open), Record::Window(open.end(20))] {
            xpuprof_sdk::codec::encode(&r, &mut batch);
        }
        let m = MarkerWindows::default();
        m.scan(&batch);
        m.scan(&[]);
        assert_eq!(m.take(), vec![true, false]);
        assert!(m.take().is_empty());
    }

    #[test]
    fn the_session_table_says_paused_and_the_range() {
        let opts = CaptureOptions {
            range: Some("profiler-api".parse().unwrap()),
            range_end: RangeEnd::Repeat,
            ..Default::default()
        };
        let mut t = toml::Table::new();
        opts.fill_session(&mut t);
        assert_eq!(t["start_paused"].as_bool(), Some(true));
        assert_eq!(t["capture_range"].as_str(), Some("profiler-api"));
        assert_eq!(t["capture_range_end"].as_str(), Some("repeat"));
        assert!(!CaptureOptions::default().windowed());
    }
}
