//! Writes [`xpuprof_archive::sample::session`] (what the host hands sinks after a short CUDA
//! run: definitions, launches joined to their device work, kernels with launch configuration,
//! graph work, copies, samples, annotations, counters, a loss) as a batch-stream file:
//! `(length: u32le, batch: length bytes)*`, 16 records a batch.
//!
//! ```text
//! cargo run -p xpuprof-archive --example sample_batches -- <out-file>
//! ```
//! `tests/fixtures/model/make.sh` uses it to freeze the codec's bytes as a fixture.

fn main() {
    let Some(out) = std::env::args().nth(1) else {
        eprintln!("usage: sample_batches <out-file>");
        std::process::exit(2);
    };
    let mut file = Vec::new();
    let mut batch = Vec::new();
    for chunk in xpuprof_archive::sample::session().chunks(16) {
        batch.clear();
        for r in chunk {
            xpuprof_sdk::codec::encode(r, &mut batch);
        }
        file.extend_from_slice(&(batch.len() as u32).to_le_bytes());
        file.extend_from_slice(&batch);
    }
    if let Err(e) = std::fs::write(&out, &file) {
        eprintln!("failed to write {out}: {e}");
        std::process::exit(1);
    }
    eprintln!("wrote {} bytes to {out}", file.len());
}
