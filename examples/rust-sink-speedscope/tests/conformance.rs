//! The example passes the conformance kit, as every plugin's own `cargo test` should.

use xpuprof_plugin_test::{assert_conforms_with, cdylib, CheckOptions};

#[test]
fn the_plugin_conforms() {
    // Built as libxpuprof_example_speedscope.so inside xpuprof's workspace (see Cargo.toml), so the
    // file name rule does not apply here.
    let options = CheckOptions { file_name_rule: false, ..CheckOptions::default() };
    let report = assert_conforms_with(cdylib("xpuprof_example_speedscope"), &options);
    assert_eq!(report.warnings().count(), 0, "{report}");
}

#[test]
fn the_profile_it_writes_is_a_speedscope_file() {
    let options = CheckOptions { file_name_rule: false, ..CheckOptions::default() };
    let run = xpuprof_plugin_test::run_sink(cdylib("xpuprof_example_speedscope"), &options).unwrap();
    let profile = run.file("profile.speedscope.json").expect("profile.speedscope.json is written");
    let profile = String::from_utf8_lossy(profile);
    assert!(profile.contains("speedscope.app/file-format-schema.json"), "{profile}");
    assert!(!run.input.is_empty());
}
