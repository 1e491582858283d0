//! Screenshots as tests: the flame graphs of a real GPU capture and of the CPU demo, made by the
//! real host, rendered by headless Chromium (Debian's `chromium`, installed by
//! `scripts/install-deps.sh`) and checked on the pixels a person would look at. The PNGs stay in
//! a temporary directory (`XPUPROF_SCREENSHOT_DIR` keeps them elsewhere, to look at by eye).
//!
//! What is checked: the flame graph of a real Python capture (`tests/fixtures/python`, CPU samples
//! of a decoder layer called through a stand-in of `nn.Module`'s call plumbing) is at the user's
//! level: no interpreter internals and no `_call_impl` among its frames, the model's Python
//! frames drawn in their colour across the graph; every frame's label is the start of its
//! tooltip (what the search matches). In the GPU view of a CUDA program every pixel column of the graph shows a
//! GPU frame (kernels green, copies blue, memsets purple, other device work such as
//! synchronisation teal), so GPU work fills the view instead
//! of being a sliver beside CPU samples; in the CPU view of the CPU demo the program's frames
//! fill the width and no GPU colour appears.

use std::path::{Path, PathBuf};
use std::process::Command;

use xpuprof_testkit::{host, skip};

/// Headless Chromium, or `None` (a failure in CI, a counted skip elsewhere).
fn chromium() -> Option<PathBuf> {
    for name in ["chromium", "chromium-browser"] {
        if let Ok(o) = Command::new("sh").arg("-c").arg(format!("command -v {name}")).output() {
            let path = String::from_utf8_lossy(&o.stdout).trim().to_owned();
            if o.status.success() && !path.is_empty() {
                return Some(PathBuf::from(path));
            }
        }
    }
    skip::missing("no chromium on PATH (scripts/install-deps.sh installs Debian's chromium)");
    None
}

/// Renders `svg` at its own size into `png` with headless Chromium.
fn screenshot(chromium: &Path, svg: &Path, png: &Path) {
    let text = std::fs::read_to_string(svg).unwrap();
    let attr = |name: &str| -> u32 {
        let at =
            text.find(&format!(" {name}=\"")).unwrap_or_else(|| panic!("no {name} in {}", svg.display()));
        text[at + name.len() + 3..].split('"').next().unwrap().parse().unwrap()
    };
    let (w, h) = (attr("width"), attr("height"));
    let profile = tempfile::tempdir().unwrap();
    let o = Command::new(chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"])
        .args(["--disable-background-networking", "--disable-component-update", "--disable-sync"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(["--hide-scrollbars", &format!("--window-size={w},{h}")])
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", svg.display()))
        .output()
        .expect("run chromium");
    assert!(
        o.status.success() && png.is_file(),
        "chromium could not render {}:\n{}",
        svg.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// What the columns of the graph area show: the share of columns with a GPU-coloured pixel
/// and the share with a CPU-coloured (inferno's warm palette) pixel.
#[derive(Debug)]
struct Columns {
    gpu: f64,
    cpu: f64,
    python: f64,
}

fn is_gpu(r: u8, g: u8, b: u8) -> bool {
    let (r, g, b) = (i32::from(r), i32::from(g), i32::from(b));
    let green = g > r + 40 && g > b + 40;
    let blue = b > r + 80 && b > g + 40;
    let purple = b > g + 60 && r > g + 20;
    let teal = g > r + 60 && b > r + 60; // synchronisation and other device work
    green || blue || purple || teal
}

fn is_python(r: u8, g: u8, b: u8) -> bool {
    r >= 230 && g >= 210 && (100..=160).contains(&b)
}

fn is_cpu(r: u8, g: u8, b: u8) -> bool {
    // Inferno's "hot" palette: red 205-255, green 0-230, blue 0-55.
    r >= 200 && b <= 60 && i32::from(r) > i32::from(g) + 20
}

/// Reads `png` and measures the frames area (inside inferno's 10-pixel side margins, below the
/// title and above the details line).
fn columns(png: &Path) -> Columns {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let (w, h) = (info.width as usize, info.height as usize);
    let px = |x: usize, y: usize| {
        let i = (y * w + x) * channels;
        (buf[i], buf[i + 1], buf[i + 2])
    };
    let (mut gpu, mut cpu, mut python, mut all) = (0usize, 0usize, 0usize, 0usize);
    for x in 12..w.saturating_sub(12) {
        all += 1;
        let ys = 60..h.saturating_sub(30);
        gpu += usize::from(ys.clone().any(|y| {
            let (r, g, b) = px(x, y);
            is_gpu(r, g, b)
        }));
        cpu += usize::from(ys.clone().any(|y| {
            let (r, g, b) = px(x, y);
            is_cpu(r, g, b)
        }));
        python += usize::from(ys.clone().any(|y| {
            let (r, g, b) = px(x, y);
            is_python(r, g, b)
        }));
    }
    let share = |n: usize| n as f64 / all as f64;
    Columns { gpu: share(gpu), cpu: share(cpu), python: share(python) }
}

/// Where the PNGs go: `XPUPROF_SCREENSHOT_DIR`, else a temporary directory.
fn png_dir() -> (PathBuf, Option<tempfile::TempDir>) {
    match std::env::var_os("XPUPROF_SCREENSHOT_DIR") {
        Some(d) => (PathBuf::from(d), None),
        None => {
            let t = tempfile::tempdir().unwrap();
            (t.path().to_owned(), Some(t))
        }
    }
}

/// Runs `xpuprof --source SOURCE --sink flamegraph -o OUT -- COMMAND` with the build's plugins.
fn record(xpuprof: &Path, source: &str, out: &Path, command: &[&Path]) {
    let o = Command::new(xpuprof)
        .arg("--plugin-dir")
        .arg(host::target_dir())
        .args(["--source", source, "--sink", "flamegraph", "-o"])
        .arg(out)
        .arg("--")
        .args(command)
        .output()
        .expect("run xpuprof");
    assert!(o.status.success(), "xpuprof failed:\n{}", String::from_utf8_lossy(&o.stderr));
}

/// The frames of an SVG flame graph: `(tooltip without its counts, label)`.
fn frames(svg: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(svg).unwrap();
    text.split("<g><title>")
        .skip(1)
        .map(|g| {
            let title = g.split("</title>").next().unwrap();
            let name = title.rsplit_once(" (").map_or(title, |(n, _)| n).to_owned();
            let label = g.split("<text").nth(1).and_then(|t| t.split_once('>')).map_or("", |(_, t)| t);
            (name, label.split("</text>").next().unwrap().to_owned())
        })
        .collect()
}

/// No frame shows interpreter internals, `nn.Module` call plumbing or a C++ parameter list
/// (GPU frames aside, whose text is the kernel's short name).
fn assert_user_level(frames: &[(String, String)]) {
    for (title, label) in frames {
        // The frame's own text; its description after ` — ` names what was folded into it.
        let text = title.split(" — ").next().unwrap();
        for plumbing in
            ["_PyEval_EvalFrameDefault", "PyObject_Call", "_call_impl", "Py_RunMain", "site-packages/"]
        {
            assert!(!text.contains(plumbing) && !label.contains(plumbing), "`{plumbing}` shown: {title}");
        }
        let python = text.ends_with(')') && text.contains(".py:");
        assert!(python || text.starts_with('[') || !text.contains('('), "a parameter list shown: {text}");
    }
}

/// Every label is the start of its frame's tooltip (what the search matches), cut with `..`.
fn assert_labels_are_searchable(frames: &[(String, String)]) {
    for (title, label) in frames {
        let shown = label.strip_suffix("..").unwrap_or(label);
        assert!(title.starts_with(shown), "label `{label}` is not the start of its tooltip `{title}`");
    }
}

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path).canonicalize().unwrap()
}

#[test]
fn gpu_frames_fill_the_gpu_view_of_a_real_cuda_capture() {
    let Some(chromium) = chromium() else { return };
    let Some(xpuprof) = host::xpuprof(&["cupti", "flamegraph"]) else { return };
    let out = tempfile::tempdir().unwrap();
    // The committed H100 capture of plugins/cupti/tests/workloads/multi_stream.cu, replayed into the
    // CUPTI source's socket as its agent would send it.
    let replay = fixture("plugins/cupti/tests/fixtures/replay.py");
    let stream = fixture("plugins/cupti/tests/fixtures/multi_stream/stream.bin");
    record(&xpuprof, "cupti", out.path(), &[Path::new("python3"), &replay, &stream]);
    let (dir, _keep) = png_dir();
    let png = dir.join("gpu-fixture-flamegraph.png");
    screenshot(&chromium, &out.path().join("flamegraph.svg"), &png);
    let frames = frames(&out.path().join("flamegraph.svg"));
    assert_labels_are_searchable(&frames);
    assert_user_level(&frames);
    assert!(
        frames.iter().any(|(t, l)| t.starts_with("[GPU_Kernel]") && l.starts_with("[GPU")),
        "no kernel frame"
    );
    let c = columns(&png);
    assert!(
        c.gpu >= 0.95,
        "GPU frames show in only {:.0}% of the GPU view's columns ({})",
        c.gpu * 100.0,
        png.display()
    );
}

#[test]
fn the_cpu_demo_fills_the_cpu_view_and_leaves_the_gpu_view_empty() {
    let Some(chromium) = chromium() else { return };
    if !skip::require_root("the CPU demo is profiled with the eBPF source") {
        return;
    }
    let Some(xpuprof) = host::xpuprof(&["ebpf", "flamegraph"]) else { return };
    let out = tempfile::tempdir().unwrap();
    let demo = out.path().join("cpu_demo");
    let cc = Command::new("cc")
        .args(["-O1", "-g", "-fno-omit-frame-pointer", "-o"])
        .arg(&demo)
        .arg(fixture("plugins/ebpf/tests/workloads/burn.c"))
        .status()
        .expect("run cc");
    assert!(cc.success(), "cc failed on burn.c");
    record(&xpuprof, "ebpf", &out.path().join("out"), &[&demo]);
    let (dir, _keep) = png_dir();
    let (cpu_png, gpu_png) = (dir.join("cpu-demo-flamegraph.cpu.png"), dir.join("cpu-demo-flamegraph.png"));
    screenshot(&chromium, &out.path().join("out/flamegraph.cpu.svg"), &cpu_png);
    screenshot(&chromium, &out.path().join("out/flamegraph.svg"), &gpu_png);
    let cpu = columns(&cpu_png);
    assert!(
        cpu.cpu >= 0.95,
        "CPU frames show in only {:.0}% of the CPU view ({})",
        cpu.cpu * 100.0,
        cpu_png.display()
    );
    assert_eq!(cpu.gpu, 0.0, "GPU colours in the CPU view of a CPU program ({})", cpu_png.display());
    let gpu = columns(&gpu_png);
    assert_eq!((gpu.gpu, gpu.cpu), (0.0, 0.0), "the empty GPU view draws frames ({})", gpu_png.display());
}

#[test]
fn a_real_python_capture_is_drawn_at_the_users_level() {
    let Some(chromium) = chromium() else { return };
    let Some(xpuprof) = host::xpuprof(&["archive", "flamegraph"]) else { return };
    let out = tempfile::tempdir().unwrap();
    // Recorded by tests/fixtures/python/record.sh (eBPF CPU samples of workload.py).
    let archive = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/python/archive");
    let o = Command::new(&xpuprof)
        .arg("report")
        .arg(&archive)
        .arg("--plugin-dir")
        .arg(host::target_dir())
        .args(["--sink", "flamegraph", "-o"])
        .arg(out.path())
        .output()
        .expect("run xpuprof report");
    assert!(o.status.success(), "xpuprof report failed:\n{}", String::from_utf8_lossy(&o.stderr));
    let svg = out.path().join("flamegraph.cpu.svg");
    let frames = frames(&svg);
    assert_user_level(&frames);
    for user in
        ["ToyDecoderLayer.forward (toymodel/modeling_toy.py:29)", "matmul (toymodel/modeling_toy.py:9)"]
    {
        let shown = frames.iter().find(|(t, _)| t.starts_with(user));
        let (title, label) = shown.unwrap_or_else(|| panic!("no frame {user} in {}", svg.display()));
        assert!(
            label.starts_with("ToyDecoderLayer") || label.starts_with("matmul"),
            "{title}: label `{label}`"
        );
        assert!(
            title.contains("interpreter frames folded ("),
            "the tooltip counts the folded frames: {title}"
        );
    }
    assert_labels_are_searchable(&frames);
    let (dir, _keep) = png_dir();
    let png = dir.join("python-fixture-flamegraph.cpu.png");
    screenshot(&chromium, &svg, &png);
    let c = columns(&png);
    assert!(
        c.python >= 0.8,
        "Python frames show in only {:.0}% of the columns ({})",
        c.python * 100.0,
        png.display()
    );
    assert_eq!(c.gpu, 0.0, "GPU colours in a CPU graph ({})", png.display());
}
