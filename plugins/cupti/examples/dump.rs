//! Prints the records decoded from a recorded agent stream, one per line (a debugging tool):
//!
//! ```sh
//! cargo run -p xpuprof-plugin-cupti --example dump -- plugins/cupti/tests/fixtures/graph_launch/stream.bin
//! ```

use std::io::Write;
use std::process::ExitCode;

use xpuprof_plugin_cupti::Decoder;
use xpuprof_sdk::{codec, Emitter, Logger};
use xpuprof_toolbox::agent_host::StreamDecoder;

fn main() -> ExitCode {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!("usage: dump <agent stream file> (written by the agent with XPUPROF_CUPTI_DUMP)");
        return ExitCode::from(2);
    };
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("dump: failed to read {}: {e}", path.to_string_lossy());
            return ExitCode::from(1);
        }
    };
    let mut d = Decoder::new(Logger::stderr());
    let mut e = Emitter::detached();
    let used = d.feed(1, &bytes, &mut e);
    let (counts, own) = d.finish(&mut e);
    let records = match codec::decode_all(&e.take_buffer()) {
        Ok(r) => r,
        Err(err) => {
            eprintln!("dump: the decoder produced a malformed batch: {err}");
            return ExitCode::from(1);
        }
    };
    let mut out = std::io::stdout().lock();
    for r in records {
        if writeln!(out, "{r:?}").is_err() {
            break; // `dump … | head` closed stdout
        }
    }
    eprintln!("consumed {used} of {} bytes; {counts:?}; {own:?}", bytes.len());
    ExitCode::SUCCESS
}
