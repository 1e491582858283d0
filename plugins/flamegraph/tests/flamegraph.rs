//! The flamegraph sink: golden SVG from the sample session, GPU colours, empty sessions.

use std::path::Path;

use xpuprof_archive::sample;
use xpuprof_plugin_flamegraph::fold::{FoldedOptions, View};
use xpuprof_plugin_flamegraph::{FlamegraphSink, RenderOptions};
use xpuprof_sdk::{Logger, Sink};

use xpuprof_testkit::golden;

fn run_view(records: &[xpuprof_sdk::model::Record], view: View) -> String {
    let dir = tempfile::tempdir().unwrap();
    let ro = RenderOptions {
        title: "xpuprof test".into(),
        subtitle: Some("python3 train.py".into()),
        width: 1200,
    };
    let mut sink =
        FlamegraphSink::new(FoldedOptions::default(), view, ro, dir.path().to_owned(), Logger::stderr());
    for b in records.chunks(9) {
        sink.consume(b).unwrap();
    }
    let files = sink.finish().unwrap();
    assert_eq!(files, [dir.path().join("flamegraph.svg")]);
    std::fs::read_to_string(&files[0]).unwrap()
}

fn run(records: &[xpuprof_sdk::model::Record]) -> String {
    run_view(records, View::All)
}

#[test]
fn gpu_view_shows_only_gpu_work() {
    let svg = run_view(&sample::session(), View::Gpu);
    assert!(svg.contains("[GPU_Kernel]ampere_sgemm_128x64_nn"));
    assert!(!svg.contains("[off-cpu]"), "CPU samples in the GPU view");
}

#[test]
fn sample_session_matches_golden() {
    let svg = run(&sample::session());
    assert!(svg.starts_with("<?xml") && svg.trim_end().ends_with("</svg>"));
    golden::check("flamegraph.svg", &svg);
}

#[test]
fn gpu_frames_are_green_and_interactive() {
    let svg = run(&sample::session());
    assert!(svg.contains("<script"), "interactive SVG has its script");
    // Each frame is a <g><title>NAME (N µs, P%)</title><rect ... fill="rgb(...)"/>...
    let frame = svg.split("<g>").find(|g| g.contains("<title>[GPU_Kernel]ampere_sgemm_128x64_nn")).unwrap();
    let fill = frame.split("fill=\"rgb(").nth(1).unwrap().split(')').next().unwrap();
    let rgb: Vec<u8> = fill.split(',').map(|c| c.trim().parse().unwrap()).collect();
    assert!(rgb[1] > rgb[0] && rgb[1] > rgb[2], "GPU kernel colour {rgb:?} is not green");
    assert!(svg.contains("[GPU_Memcpy]HtoD"));
}

#[test]
fn empty_session_still_writes_an_svg() {
    let svg = run(&[]);
    assert!(svg.contains("no samples") && !svg.contains("ERROR"), "{svg}");
    assert!(svg.trim_end().ends_with("</svg>"), "{svg}");
}

/// Used by `tests/screenshot.sh`: writes the sample session's SVG to `$XPUPROF_SCREENSHOT_DIR`.
#[test]
#[ignore = "run by tests/screenshot.sh"]
fn write_sample_svg_for_screenshot() {
    let dir = std::env::var("XPUPROF_SCREENSHOT_DIR").expect("XPUPROF_SCREENSHOT_DIR");
    std::fs::write(Path::new(&dir).join("flamegraph.svg"), run(&sample::session())).unwrap();
}

use xpuprof_testkit::host;

#[test]
fn scripted_session_through_the_host_matches_golden() {
    let Some(bin) = host::xpuprof(&["scripted", "flamegraph"]) else { return };
    let out = tempfile::tempdir().unwrap();
    host::record(&bin, "flamegraph", out.path());
    golden::check("scripted.svg", &std::fs::read_to_string(out.path().join("flamegraph.svg")).unwrap());
}
