//! The sink's files: golden SVGs from the sample session (GPU view and CPU view), GPU
//! colours, tooltips with full kernel names, empty sessions.

use xpuprof_archive::sample;
use xpuprof_plugin_flamegraph::fold::FoldedOptions;
use xpuprof_plugin_flamegraph::{graphs, FlamegraphSink, GraphView};
use xpuprof_sdk::{Logger, Sink};

use xpuprof_testkit::golden;

/// The files the sink writes for `view`, by name, with their text.
fn run_view(records: &[xpuprof_sdk::model::Record], view: GraphView) -> Vec<(String, String)> {
    let dir = tempfile::tempdir().unwrap();
    let g = graphs(view, None, Some("python3 train.py".into()), 1200);
    let mut sink = FlamegraphSink::new(FoldedOptions::default(), g, dir.path().to_owned(), Logger::stderr());
    for b in records.chunks(9) {
        sink.consume(b).unwrap();
    }
    let files = sink.finish().unwrap();
    files
        .iter()
        .map(|f| (f.file_name().unwrap().to_str().unwrap().to_owned(), std::fs::read_to_string(f).unwrap()))
        .collect()
}

/// The default files: (flamegraph.svg, flamegraph.cpu.svg).
fn run(records: &[xpuprof_sdk::model::Record]) -> (String, String) {
    let mut files = run_view(records, GraphView::Split);
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["flamegraph.svg", "flamegraph.cpu.svg"]);
    let cpu = files.pop().unwrap().1;
    (files.pop().unwrap().1, cpu)
}

#[test]
fn default_flamegraph_is_the_gpu_view_and_the_cpu_view_is_beside_it() {
    let (gpu, cpu) = run(&sample::session());
    assert!(gpu.contains("GPU time under the CPU stacks that launched it"), "title");
    assert!(gpu.contains(">[GPU_Kernel]ampere_sgemm_128x64_nn</text>"));
    assert!(!gpu.contains("[off-cpu]"), "CPU samples in the GPU view");
    assert!(cpu.contains("[off-cpu]") && !cpu.contains("[GPU_"), "GPU work in the CPU view");
    golden::check("flamegraph.svg", &gpu);
    golden::check("flamegraph.cpu.svg", &cpu);
}

#[test]
fn single_views_write_one_flamegraph_svg() {
    for (view, has_gpu, has_cpu) in
        [(GraphView::All, true, true), (GraphView::Gpu, true, false), (GraphView::Cpu, false, true)]
    {
        let files = run_view(&sample::session(), view);
        assert_eq!(files.len(), 1, "{view:?}");
        assert_eq!(files[0].0, "flamegraph.svg");
        assert_eq!(files[0].1.contains(" — kernel "), has_gpu, "{view:?}");
        assert_eq!(files[0].1.contains("<title>[off-cpu]"), has_cpu, "{view:?}");
    }
}

/// The `<g>` of the frame whose tooltip holds `title`.
fn frame<'a>(svg: &'a str, title: &str) -> &'a str {
    svg.split("<g>")
        .find(|g| g.split("</title>").next().is_some_and(|t| t.contains(title)))
        .unwrap_or_else(|| panic!("no {title}"))
}

#[test]
fn gpu_frames_are_green_and_interactive() {
    let (svg, _) = run(&sample::session());
    assert!(svg.contains("<script"), "interactive SVG has its script");
    // Each frame is a <g><title>NAME (N µs, P%)</title><rect ... fill="rgb(...)"/>...
    let g = frame(&svg, "kernel ampere_sgemm_128x64_nn");
    let fill = g.split("fill=\"rgb(").nth(1).unwrap().split(')').next().unwrap();
    let rgb: Vec<u8> = fill.split(',').map(|c| c.trim().parse().unwrap()).collect();
    assert!(rgb[1] > rgb[0] && rgb[1] > rgb[2], "GPU kernel colour {rgb:?} is not green");
    let copy = frame(&svg, "copy HtoD");
    assert!(copy.contains("fill=\"rgb(70,130,220)\""), "copies are blue: {copy}");
}

#[test]
fn kernel_frames_show_short_names_and_tooltips_the_full_name_and_device() {
    let (svg, _) = run(&sample::session());
    // The frame's text is the short name; its title (tooltip, details, search) the same text,
    // then the full name.
    let g = frame(&svg, "<title>[GPU_Kernel]at::native::vectorized_elementwise_kernel — kernel void at::native::vectorized_elementwise_kernel&lt;4, at::native::FillFunctor&lt;float&gt;&gt;(int, float*) on GPU 0");
    assert!(g.contains(">[GPU_Kernel]at::native::vectorized_ele..</text>"), "{g}");
    assert!(g.contains("(NVIDIA H100 80GB HBM3) (120 µs, 23.86%)</title>"), "device, time and share: {g}");
}

#[test]
fn empty_session_still_writes_svgs_that_say_why() {
    let (gpu, cpu) = run(&[]);
    assert!(gpu.contains("no GPU work was recorded") && !gpu.contains("ERROR"), "{gpu}");
    assert!(cpu.contains("no CPU samples were recorded"), "{cpu}");
    assert!(gpu.trim_end().ends_with("</svg>"), "{gpu}");
}

use xpuprof_testkit::host;

#[test]
fn scripted_session_through_the_host_matches_golden() {
    let Some(bin) = host::xpuprof(&["scripted", "flamegraph"]) else { return };
    let out = tempfile::tempdir().unwrap();
    host::record(&bin, "flamegraph", out.path());
    golden::check("scripted.svg", &std::fs::read_to_string(out.path().join("flamegraph.svg")).unwrap());
    golden::check(
        "scripted.cpu.svg",
        &std::fs::read_to_string(out.path().join("flamegraph.cpu.svg")).unwrap(),
    );
}

#[test]
fn every_label_starts_its_tooltip_so_the_search_finds_what_labels_say() {
    let (gpu, cpu) = run(&sample::session());
    for svg in [gpu, cpu] {
        for g in svg.split("<g><title>").skip(1) {
            let title = g.split("</title>").next().unwrap();
            let label = g.split("<text").nth(1).and_then(|t| t.split_once('>')).unwrap().1;
            let label = label.split("</text>").next().unwrap();
            let shown = label.strip_suffix("..").unwrap_or(label);
            assert!(title.starts_with(shown), "label `{label}` does not start its tooltip `{title}`");
        }
    }
}

#[test]
fn rank_roots_draw_each_rank_of_a_job_as_its_own_tower() {
    let dir = tempfile::tempdir().unwrap();
    let g = graphs(GraphView::Split, None, None, 1200);
    let opts = FoldedOptions { rank_roots: true, ..FoldedOptions::default() };
    let mut sink = FlamegraphSink::new(opts, g, dir.path().to_owned(), Logger::stderr());
    sink.consume(&sample::ranked_job()).unwrap();
    let files = sink.finish().unwrap();
    let gpu = std::fs::read_to_string(&files[0]).unwrap();
    // Rank 1's kernels take twice as long as rank 0's (the job's definition in the sample module).
    for title in ["[rank 0] (40 µs, 33.33%)", "[rank 1] (80 µs, 66.67%)"] {
        assert!(gpu.contains(&format!("<title>{title}")), "no root frame {title}");
    }
    let plain = run_view(&sample::ranked_job(), GraphView::Gpu);
    assert!(!plain[0].1.contains("[rank "), "no rank roots by default");
}
