//! Integration tests of the folded sink: golden files from the sample session, options, and
//! properties every folded file must have.

use std::path::PathBuf;

use xpuprof_archive::sample;
use xpuprof_plugin_folded::{FoldedBuilder, FoldedOptions, FoldedSink, KernelNames, View};
use xpuprof_sdk::{Logger, Sink};

use xpuprof_testkit::golden;

fn render(opts: FoldedOptions, view: View) -> String {
    let mut b = FoldedBuilder::new(opts);
    for r in sample::session() {
        b.add(&r);
    }
    let mut out = Vec::new();
    b.write(view, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn run_sink(split: bool) -> (tempfile::TempDir, Vec<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let mut sink = FoldedSink::new(FoldedOptions::default(), split, dir.path().to_owned(), Logger::stderr());
    let records = sample::session();
    for batch in records.chunks(7) {
        sink.consume(batch).unwrap();
    }
    let files = sink.finish().unwrap();
    (dir, files)
}

#[test]
fn split_off_writes_the_combined_file_only() {
    let (_dir, files) = run_sink(false);
    assert_eq!(files.len(), 1);
    assert!(files[0].ends_with("profile.folded"));
    golden::check("profile.folded", &std::fs::read_to_string(&files[0]).unwrap());
}

#[test]
fn split_views_beside_the_combined_file_by_default() {
    assert!(
        xpuprof_plugin_folded::FoldedSinkConfig::default().split,
        "profile.gpu.folded and profile.cpu.folded are written by default"
    );
    let (_dir, files) = run_sink(true);
    let names: Vec<_> = files.iter().map(|f| f.file_name().unwrap().to_str().unwrap().to_owned()).collect();
    assert_eq!(names, ["profile.folded", "profile.cpu.folded", "profile.gpu.folded"]);
    let cpu = std::fs::read_to_string(&files[1]).unwrap();
    let gpu = std::fs::read_to_string(&files[2]).unwrap();
    assert!(!cpu.contains("[GPU_"), "{cpu}");
    assert!(gpu.lines().all(|l| l.contains("[GPU_")), "{gpu}");
    golden::check("profile.cpu.folded", &cpu);
    golden::check("profile.gpu.folded", &gpu);
}

#[test]
fn options_change_gpu_frames_and_process_frame() {
    let opts = FoldedOptions {
        kernel_names: KernelNames::Short,
        gpu_device: true,
        gpu_stream: true,
        process_frame: true,
        ..FoldedOptions::default()
    };
    golden::check("profile.options.folded", &render(opts, View::All));
}

#[test]
fn kernel_frames_show_the_hosts_display_name_else_the_raw_one() {
    let full = FoldedOptions { kernel_names: KernelNames::Full, ..FoldedOptions::default() };
    let text = render(full.clone(), View::Gpu);
    assert!(text.contains("[GPU_Kernel]add_kernel(float*, float*, int) "), "{text}");
    // The host gives no display text when the session says `demangle = false`.
    let mut b = FoldedBuilder::new(full);
    for mut r in sample::session() {
        if let xpuprof_sdk::model::Record::Str(d) = &mut r {
            d.display.clear();
        }
        b.add(&r);
    }
    let mut out = Vec::new();
    b.write(View::Gpu, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("[GPU_Kernel]_Z10add_kernelPfS_i "), "{text}");
}

#[test]
fn kernels_sharing_a_short_name_keep_apart_with_their_ids() {
    use xpuprof_sdk::model::*;
    let names = ["void k<float>(float*)", "void k<double>(double*)", "void once<1>()"];
    let mut b = FoldedBuilder::new(FoldedOptions::default());
    for (i, n) in names.iter().enumerate() {
        let id = StrId(i as u32 + 1);
        b.add(&Record::Str(StrDef::default().id(id).text((*n).to_owned())));
        let op = DeviceOp::default().kind(DeviceOpKind::Kernel).name(id).start(0).end(1000 * (i as u64 + 1));
        b.add(&Record::DeviceOp(op));
    }
    let mut out = Vec::new();
    b.write(View::Gpu, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let id = xpuprof_toolbox::kernel_name::id;
    assert!(text.contains(&format!("[GPU_Kernel]k {} 1\n", id(names[0]))), "{text}");
    assert!(text.contains(&format!("[GPU_Kernel]k {} 2\n", id(names[1]))), "{text}");
    assert!(text.contains("[GPU_Kernel]once 3\n"), "a unique short name has no id: {text}");
}

#[test]
fn every_line_is_well_formed_and_sorted() {
    let text = render(FoldedOptions::default(), View::All);
    let mut prev = "";
    for line in text.lines() {
        let (stack, weight) = line.rsplit_once(' ').unwrap();
        assert!(weight.parse::<u64>().unwrap() >= 1, "{line}");
        assert!(!stack.split(';').any(str::is_empty), "empty frame in {line}");
        assert!(stack > prev, "not sorted or not merged: {line}");
        prev = stack;
    }
    assert!(!text.contains("0x") || text.contains("libtorch_cuda.so+0x1a2b"), "{text}");
}

#[test]
fn gpu_work_hangs_under_its_launch_stack() {
    let text = render(FoldedOptions::default(), View::All);
    // 120 µs kernel launched by cudaLaunchKernel from main;train_step;forward;...
    assert!(text.contains(
        "main;train_step;forward;at::native::launch_vectorized_kernel;c10::cuda::CUDAStream::launch;\
         cudaLaunchKernel;[GPU_Kernel]at::native::vectorized_elementwise_kernel 120\n"
    ));
    assert!(text.contains("cudaMemcpyAsync;[GPU_Memcpy]HtoD 30\n"), "{text}");
    assert!(text.contains("cudaMemsetAsync;[GPU_Memset] 2\n"), "{text}");
    assert!(text.contains("[unknown launch site];[GPU_Kernel]ampere_sgemm_128x64_nn 15\n"), "{text}");
    assert!(text.contains("[off-cpu];main;read:weird name 20\n"), "{text}");
}

#[test]
fn min_weight_drops_light_stacks() {
    let text = render(FoldedOptions { min_weight: 50, ..FoldedOptions::default() }, View::All);
    assert!(text.lines().all(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap() >= 50), "{text}");
    assert!(text.contains("ampere_sgemm_128x64_nn 200\n"), "{text}");
}

use xpuprof_testkit::host;

#[test]
fn scripted_session_through_the_host_matches_golden() {
    let Some(bin) = host::xpuprof(&["scripted", "folded"]) else { return };
    let out = tempfile::tempdir().unwrap();
    host::record(&bin, "folded", out.path());
    golden::check("scripted.folded", &std::fs::read_to_string(out.path().join("profile.folded")).unwrap());
}

#[test]
fn one_launch_site_is_one_tower_whichever_path_captured_its_stack() {
    use xpuprof_sdk::model::*;
    // An agent's walk from inside the call (runtime and driver frames under the API function)
    // and an eBPF uprobe's stack from the caller side, for launches from the same place.
    let names = ["main", "launch", "cudaLaunchKernel", "libcuda.so.1+0x20", "k"];
    let mut b = FoldedBuilder::new(FoldedOptions::default());
    for (i, n) in names.iter().enumerate() {
        b.add(&Record::Str(StrDef::default().id(StrId(i as u32 + 1)).text((*n).to_owned())));
        let frame = FrameDef::default()
            .id(FrameId(i as u32 + 1))
            .kind(FrameKind::Synthetic)
            .name(StrId(i as u32 + 1));
        b.add(&Record::Frame(frame));
    }
    let inside =
        StackDef::default().id(StackId(1)).frames(vec![FrameId(4), FrameId(3), FrameId(2), FrameId(1)]);
    let caller = StackDef::default().id(StackId(2)).frames(vec![FrameId(2), FrameId(1)]);
    b.add(&Record::Stack(inside));
    b.add(&Record::Stack(caller));
    for (stack, us) in [(1, 2), (2, 1)] {
        let launch = LaunchRef::default().stack(StackId(stack)).api(StrId(3));
        let op = DeviceOp::default().kind(DeviceOpKind::Kernel).name(StrId(5)).start(0).end(us * 1000);
        b.add(&Record::DeviceOp(op.launch(Some(launch))));
    }
    let mut out = Vec::new();
    b.write(View::Gpu, &mut out).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), "main;launch;cudaLaunchKernel;[GPU_Kernel]k 3\n");
}

/// The records of the committed Python capture (eBPF CPU samples of a decoder layer called
/// through a stand-in of `nn.Module`'s plumbing; `plugins/flamegraph/tests/fixtures/python`).
fn python_capture() -> Vec<xpuprof_sdk::model::Record> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../flamegraph/tests/fixtures/python/archive")
        .join(xpuprof_archive::FILE_NAME);
    let mut reader = xpuprof_archive::open(&path).unwrap();
    let mut records = Vec::new();
    reader.replay_records(&mut |batch| records.append(batch)).unwrap();
    records
}

#[test]
fn a_python_capture_folds_to_the_users_level_and_all_shows_every_frame() {
    use xpuprof_plugin_folded::fold::Frames;
    let records = python_capture();
    let fold = |frames| {
        let mut b = FoldedBuilder::new(FoldedOptions { frames, ..FoldedOptions::default() });
        records.iter().for_each(|r| b.add(r));
        let mut out = Vec::new();
        b.write(View::Cpu, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    };
    let (user, all) = (fold(Frames::User), fold(Frames::All));
    for plumbing in ["_PyEval_EvalFrameDefault", "_call_impl", "Py_RunMain", "site-packages/"] {
        assert!(!user.contains(plumbing), "{plumbing} in the user view:\n{user}");
        assert!(all.contains(plumbing), "{plumbing} not in the all view");
    }
    assert!(
        user.contains(";ToyDecoderLayer.forward (toymodel/modeling_toy.py:29);ToyAttention.forward (toymodel/modeling_toy.py:20);matmul (toymodel/modeling_toy.py:"),
        "{user}"
    );
    golden::check("python.cpu.folded", &user);
    golden::check("python.all.cpu.folded", &all);
}

#[test]
fn the_view_and_its_rules_are_typed_config_keys() {
    use xpuprof_plugin_folded::fold::Frames;
    use xpuprof_sdk::config::{PluginConfig, Table, Value};
    assert_eq!(FoldedOptions::default().frames, Frames::User, "the user-level view is the default");
    let mut t = Table::new();
    t.insert("frames".into(), Value::String("all".into()));
    t.insert("thread_frame".into(), Value::Boolean(true));
    t.insert("fold_files".into(), Value::Array(vec![Value::String("mylib/dispatch.py".into())]));
    let o = FoldedOptions::from_config(&PluginConfig::from_table(t)).unwrap();
    assert_eq!(
        (o.frames, o.thread_frame, o.fold_files),
        (Frames::All, true, vec!["mylib/dispatch.py".to_owned()])
    );
    let mut bad = Table::new();
    bad.insert("frames".into(), Value::String("everything".into()));
    let e = FoldedOptions::from_config(&PluginConfig::from_table(bad)).unwrap_err();
    assert!(e.to_string().contains("frames"), "{e}");
    let keys: Vec<String> = FoldedOptions::config_keys().into_iter().map(|k| k.name.to_string()).collect();
    for k in ["frames", "fold_files", "name_width", "thread_frame"] {
        assert!(keys.iter().any(|n| n == k), "{k} not declared: {keys:?}");
    }
}

/// The sink's files for the two-rank job with `rank_roots` as the config says.
fn ranked_files(rank_roots: Option<bool>) -> Vec<String> {
    use xpuprof_sdk::config::{PluginConfig, Table, Value};
    let mut t = Table::new();
    if let Some(on) = rank_roots {
        t.insert("rank_roots".into(), Value::Boolean(on));
    }
    let opts = FoldedOptions::from_config(&PluginConfig::from_table(t)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut sink = FoldedSink::new(opts, true, dir.path().to_owned(), Logger::stderr());
    sink.consume(&sample::ranked_job()).unwrap();
    let files = sink.finish().unwrap();
    files.iter().map(|f| std::fs::read_to_string(f).unwrap()).collect()
}

#[test]
fn rank_roots_put_every_stack_of_a_rank_under_it() {
    let on = ranked_files(Some(true));
    assert_eq!(on.len(), 3, "combined, CPU and GPU files");
    for file in &on {
        assert!(!file.is_empty());
        for line in file.lines() {
            assert!(line.starts_with("[rank 0];") || line.starts_with("[rank 1];"), "{line}");
        }
        for rank in ["[rank 0];", "[rank 1];"] {
            assert!(file.lines().any(|l| l.starts_with(rank)), "{rank} missing:\n{file}");
        }
    }
    let gpu = on.iter().find(|f| f.contains("matmul_kernel")).unwrap();
    assert!(gpu.contains("[rank 1];train_step;launch;[GPU_Kernel]matmul_kernel 60\n"), "{gpu}");
    for off in [ranked_files(None), ranked_files(Some(false))] {
        assert!(off.iter().all(|f| !f.contains("[rank ")), "no rank roots by default: {off:?}");
    }
}

#[test]
fn pc_samples_get_their_own_file_weighted_by_samples() {
    use xpuprof_sdk::model::*;
    let dir = tempfile::tempdir().unwrap();
    let mut sink = FoldedSink::new(FoldedOptions::default(), true, dir.path().to_owned(), Logger::stderr());
    let mut records = sample::session();
    let kernel = records
        .iter()
        .find_map(|r| match r {
            Record::DeviceOp(op) if op.kind == DeviceOpKind::Kernel && op.launch.is_some() => Some(op.name),
            _ => None,
        })
        .expect("a launched kernel in the sample session");
    records.push(Record::Str(StrDef::default().id(StrId(9001)).text("/src/k.cu".into())));
    records.push(Record::Str(StrDef::default().id(StrId(9002)).text("long_scoreboard".into())));
    let pid = sample::PID;
    let s = DeviceSample::default().pid(pid).kernel(kernel).file(StrId(9001)).line(7).stall(StrId(9002));
    records.push(Record::DeviceSample(s.count(1234)));
    sink.consume(&records).unwrap();
    let files = sink.finish().unwrap();
    let names: Vec<_> = files.iter().map(|f| f.file_name().unwrap().to_str().unwrap().to_owned()).collect();
    assert_eq!(names.last().map(String::as_str), Some("profile.pc.folded"), "{names:?}");
    let pc = std::fs::read_to_string(files.last().unwrap()).unwrap();
    let total: u64 = pc.lines().map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap()).sum();
    assert_eq!(total, 1234, "weights are samples, all of them kept:\n{pc}");
    assert!(
        pc.lines().all(|l| l.contains(";[GPU_Kernel]") && l.contains(";k.cu:7;[stall]long_scoreboard ")),
        "{pc}"
    );
    let gpu = std::fs::read_to_string(dir.path().join("profile.gpu.folded")).unwrap();
    assert!(!gpu.contains("[stall]"), "device time and samples never share a file");
}

#[test]
fn no_pc_file_without_samples() {
    let (_dir, files) = run_sink(true);
    assert!(files.iter().all(|f| !f.ends_with("profile.pc.folded")));
}
