//! The example passes the conformance kit, as every plugin's own `cargo test` should.

use xpuprof_plugin_test::{assert_conforms_with, cdylib, CheckOptions};

#[test]
fn the_plugin_conforms() {
    // Built as libxpuprof_example_fakeacc.so inside xpuprof's workspace (see Cargo.toml), so the
    // file name rule does not apply here.
    let options = CheckOptions { file_name_rule: false, ..CheckOptions::default() };
    let report = assert_conforms_with(cdylib("xpuprof_example_fakeacc"), &options);
    assert_eq!(report.warnings().count(), 0, "{report}");
}

#[test]
fn the_records_it_emits_define_every_id_before_the_kernel_that_uses_it() {
    use xpuprof_sdk::model::Record;
    let options = CheckOptions { file_name_rule: false, ..CheckOptions::default() };
    let run = xpuprof_plugin_test::run_source(cdylib("xpuprof_example_fakeacc"), &options).unwrap();
    let records = xpuprof_sdk::codec::decode_all(&run.encoded).unwrap();
    assert_eq!(records.len(), run.lines.len(), "{:#?}", run.lines);
    let first = |want: fn(&Record) -> bool| records.iter().position(want);
    let device = first(|r| matches!(r, Record::Device(_))).expect("a device");
    let op = first(|r| matches!(r, Record::DeviceOp(_))).expect("a kernel");
    assert!(device < op, "the device is defined after the kernel that runs on it: {:#?}", run.lines);
    assert!(records.iter().any(|r| matches!(r, Record::LaunchSite(_))), "{:#?}", run.lines);
}
