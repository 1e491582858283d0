//! Prints the records decoded from an agent stream: `XPUPROF_CUPTI_DUMP_FILE=path cargo test -p
//! xpuprof-plugin-cupti --test dump -- --nocapture` (a debugging aid; does nothing without it).

use xpuprof_plugin_cupti::decode::Decoder;
use xpuprof_sdk::{codec, Emitter, Logger};

#[test]
fn print_stream() {
    let Ok(path) = std::env::var("XPUPROF_CUPTI_DUMP_FILE") else {
        eprintln!("skipped: set XPUPROF_CUPTI_DUMP_FILE to print a stream");
        return;
    };
    let bytes = std::fs::read(&path).unwrap();
    let mut d = Decoder::new(Logger::stderr());
    let mut e = Emitter::detached();
    let used = d.feed(1, &bytes, &mut e);
    d.finish_all(&mut e);
    for r in codec::decode_all(&e.take_buffer()).unwrap() {
        eprintln!("{r:?}");
    }
    eprintln!("consumed {used} of {} bytes; {:?}", bytes.len(), d.stats);
}
