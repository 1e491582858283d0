//! # `dump` sink
//!
//! Writes `<out>/records.jsonl`: every record the sinks get, in the order they get it,
//! definitions included, one JSON object per line (`{"record":"ApiCall","pid":42,...}`; see
//! `xpuprof_toolbox::json_lines`). For a plugin author, what a source emitted after the host
//! renumbered its ids and correlated its launches (the OpenTelemetry Collector's `debug`
//! exporter, Fluent Bit's `stdout`): `xpuprof --source mine --sink dump -- ./app`, then read it
//! with `jq` or `grep`. `xpuprof decode-agent-dump` prints an agent's dump file in the same
//! form.

mod config;
mod sink;

pub use config::DumpConfig;
pub use sink::DumpSink;

xpuprof_sdk::export_plugin!(sink: DumpSink);
