//! The sink input path: a sink of this build is lent the host's decoded records; one that cannot
//! be (another SDK or compiler) gets the same batches encoded, and writes the same output.

use xpuprof_core::host::{Instance, Registry, SearchPath};
use xpuprof_core::pipeline::batch::RecordBatch;
use xpuprof_core::session::{create_args, session_table};
use xpuprof_sdk::PluginKind;

use super::common::*;
use super::correlation::scripted_records;

/// Runs sink `name` over the scripted session's pipeline output in `dir`; `lend` picks the path.
fn run_sink(name: &str, dir: &std::path::Path, lend: bool) -> Vec<(String, Vec<u8>)> {
    let reg = Registry::discover(&SearchPath::new(&[require_plugin(name)], None, &[]));
    let p = reg.find(PluginKind::Sink, name).expect("sink loads");
    let session = session_table(dir, &[], &[], &[name.to_owned()], 0, 0);
    let mut inst = Instance::create(p, &create_args(toml::Table::new(), &session), 0, None).unwrap();
    assert!(inst.borrows_records(), "a sink of this build is lent the records");
    if !lend {
        inst.send_encoded();
        assert!(!inst.borrows_records());
    }
    let (records, _) = scripted_records();
    for chunk in records.chunks(7) {
        inst.consume_batch(&RecordBatch::new(chunk.to_vec())).unwrap();
    }
    inst.consume_batch(&RecordBatch::new(Vec::new())).unwrap();
    let mut files: Vec<(String, Vec<u8>)> = inst
        .finish()
        .unwrap()
        .into_iter()
        .map(|f| {
            let rel = std::path::Path::new(&f).strip_prefix(dir).unwrap().display().to_string();
            (rel, std::fs::read(&f).unwrap())
        })
        .collect();
    files.sort();
    files
}

#[test]
fn lent_and_encoded_batches_give_identical_outputs() {
    for sink in ["folded", "chrome"] {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let lent = run_sink(sink, a.path(), true);
        let encoded = run_sink(sink, b.path(), false);
        assert!(!lent.is_empty() && lent.iter().all(|(_, bytes)| !bytes.is_empty()), "{sink}");
        assert_eq!(lent, encoded, "{sink}: the two input paths must not differ");
    }
}
