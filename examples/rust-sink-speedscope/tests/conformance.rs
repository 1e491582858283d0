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

#[test]
fn samples_it_is_given_weigh_their_stack_in_the_profile() {
    use xpuprof_sdk::model::*;
    let mut records = Vec::new();
    let mut put = |r: Record| xpuprof_sdk::codec::encode(&r, &mut records);
    put(Record::Str(StrDef::new(StrId(1), "main")));
    put(Record::Str(StrDef::new(StrId(2), "compute_kernel_host")));
    put(Record::Frame(FrameDef::default().id(FrameId(1)).name(StrId(1))));
    put(Record::Frame(FrameDef::default().id(FrameId(2)).name(StrId(2))));
    put(Record::Stack(StackDef::new(StackId(1), vec![FrameId(2), FrameId(1)])));
    put(Record::CpuSample(CpuSample::default().stack(StackId(1)).weight(3_000_000).tid(7)));
    let options = CheckOptions { file_name_rule: false, ..CheckOptions::default() };
    let run =
        xpuprof_plugin_test::run_sink_on(cdylib("xpuprof_example_speedscope"), &records, &options).unwrap();
    assert_eq!(run.input.len(), 6, "{:#?}", run.input);
    let profile = String::from_utf8_lossy(run.file("profile.speedscope.json").expect("the profile"));
    let (main, leaf) = (profile.find("\"main\"").unwrap(), profile.find("\"compute_kernel_host\"").unwrap());
    assert!(main < leaf, "frames are named from the root: {profile}");
    assert!(profile.contains("3000000"), "the sample's weight: {profile}");
}
