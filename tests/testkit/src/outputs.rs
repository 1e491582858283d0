//! Reading what a profiled run wrote: the output folder's files, the folded profile's lines, the
//! Chrome trace's events and `summary.json`, and the timeless part of a trace for golden files.

use std::path::PathBuf;

/// The outputs of one `xpuprof` run; the folder is removed when this is dropped.
#[derive(Debug)]
pub struct Outputs {
    /// xpuprof's stderr.
    pub stderr: String,
    /// The output folder.
    pub out: PathBuf,
}

impl Drop for Outputs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.out);
    }
}

impl Outputs {
    /// An output file's text (panics with xpuprof's stderr when it is missing).
    pub fn file(&self, name: &str) -> String {
        std::fs::read_to_string(self.out.join(name))
            .unwrap_or_else(|e| panic!("read {name}: {e}\n{}", self.stderr))
    }

    /// The folded profile's lines, sorted.
    pub fn folded(&self) -> Vec<String> {
        let mut l: Vec<String> = self.file("profile.folded").lines().map(str::to_owned).collect();
        l.sort();
        l
    }

    /// The Chrome trace's events.
    pub fn chrome(&self) -> Vec<serde_json::Value> {
        let v: serde_json::Value =
            serde_json::from_str(&self.file("trace.json")).expect("trace.json is JSON");
        let events = if v.is_array() { v } else { v["traceEvents"].clone() };
        events.as_array().expect("an event array").clone()
    }

    /// `summary.json`.
    pub fn summary(&self) -> serde_json::Value {
        serde_json::from_str(&self.file("summary.json")).expect("summary.json is JSON")
    }
}

/// The kernels of `summary.json` as `(name, launches, total ns rounded to 0.1 µs)`, pretty
/// printed (for golden files).
pub fn summary_kernels(summary: &serde_json::Value) -> String {
    let kernels: Vec<(String, u64, u64)> = summary["kernels"]
        .as_array()
        .expect("kernels")
        .iter()
        .map(|k| {
            let total = (k["time"]["total_ns"].as_u64().unwrap_or(0) + 50) / 100 * 100;
            (k["name"].as_str().unwrap_or("").to_owned(), k["launches"].as_u64().unwrap_or(0), total)
        })
        .collect();
    format!("{kernels:#?}\n")
}

/// Device operations of a Chrome trace as sorted `cat name dur=µs bytes=` lines (the timeless
/// part of the trace, for golden files), durations rounded to 0.1 µs: the session clock may be
/// slewed against a device clock by a few hundred ppm.
pub fn device_lines(events: &[serde_json::Value]) -> String {
    let mut l: Vec<String> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] != "api")
        .map(|e| {
            let dur = e["dur"].as_f64().unwrap_or(-1.0);
            format!("{} {} dur={dur:.1} bytes={}", e["cat"], e["name"], e["args"]["bytes"])
        })
        .collect();
    l.sort();
    l.join("\n") + "\n"
}
