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
