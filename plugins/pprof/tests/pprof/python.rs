//! What pprof users expect, read with `go tool pprof`: Python frames as functions with their
//! file and line (`-list` shows the source), names pprof keeps as they are, the executable as
//! the profile's file, only sample types that have data, allocations apart from operations.

use std::path::Path;

use xpuprof_archive::sample::{self, PID, T0, TID};
use xpuprof_plugin_pprof::FILE_NAME;
use xpuprof_sdk::model::*;

use crate::go;
use crate::sink::{decode, run};

const FILL: &str =
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, float*)";
const ABS: &str =
    "void at::native::vectorized_elementwise_kernel<4, at::native::AbsFunctor<float>>(int, float*)";
const CAT: &str =
    "void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 1, 128, 1>(float*)";

/// The committed source the Python frames name (absolute, so pprof finds it).
fn model_py() -> String {
    fixture("model.py")
}

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    path.to_str().unwrap().to_owned()
}

/// First lines of the Python functions of `model.py`: `<module>`, `Linear.forward`, `step`.
const STARTS: [u32; 4] = [7, 11, 11, 1];

fn op(kind: DeviceOpKind, name: u32, start: u64, dur: u64, stack: u32) -> Record {
    let launch = LaunchRef::default().tid(TID).stack(StackId(stack)).api(StrId(11)).time(start - 1_000);
    Record::DeviceOp(
        DeviceOp::default()
            .kind(kind)
            .pid(PID)
            .device(DeviceId(1))
            .stream(StreamId(1))
            .start(start)
            .end(start + dur)
            .name(StrId(name))
            .bytes(if kind == DeviceOpKind::Alloc { 1 << 20 } else { 0 })
            .launch(Some(launch)),
    )
}

/// The sample session plus kernels launched from Python code: `Linear.forward` (line 8, two
/// instantiations of one template, through the native `launch_linear` at line 5 of
/// `native.c`) and `step` (line 13, a kernel in an anonymous namespace and an allocation), both
/// under `<module>`.
fn records() -> Vec<Record> {
    let py = model_py();
    let mut r = sample::session();
    let strings = [
        format!("Linear.forward ({py}:8)"),
        format!("step ({py}:12)"),
        format!("step ({py}:13)"),
        format!("<module> ({py}:17)"),
        FILL.to_owned(),
        ABS.to_owned(),
        CAT.to_owned(),
        "launch_linear".to_owned(),
        fixture("native.c"),
    ];
    for (i, t) in strings.iter().enumerate() {
        r.push(Record::Str(StrDef::new(StrId(9_001 + i as u32), t)));
    }
    for i in 0..4 {
        let def = FrameDef::default().id(FrameId(101 + i)).kind(FrameKind::Synthetic).name(StrId(9_001 + i));
        r.push(Record::Frame(def.start_line(STARTS[i as usize])));
    }
    let native = FrameDef::default().id(FrameId(105)).kind(FrameKind::FileOffset).module(ModuleId(2));
    r.push(Record::Frame(native.address(0x5004).name(StrId(9_008)).file(StrId(9_009)).line(5)));
    // Innermost first: the native launch frames, the Python frames, the interpreter's main.
    let stack = |id: u32, native: u32, py: &[u32]| {
        let mut frames = vec![FrameId(4), FrameId(native)];
        frames.extend(py.iter().map(|&f| FrameId(f)));
        frames.push(FrameId(1));
        Record::Stack(StackDef::default().id(StackId(id)).frames(frames))
    };
    r.push(stack(101, 105, &[101, 102, 104]));
    r.push(stack(102, 3, &[103, 104]));
    let t = T0 + 600_000;
    r.push(op(DeviceOpKind::Kernel, 9_005, t, 100_000, 101));
    r.push(op(DeviceOpKind::Kernel, 9_006, t + 100_000, 50_000, 101));
    r.push(op(DeviceOpKind::Kernel, 9_007, t + 150_000, 30_000, 102));
    r.push(op(DeviceOpKind::Alloc, 0, t + 180_000, 0, 102));
    r
}

#[test]
fn python_frames_are_functions_with_file_and_line() {
    let dir = run(&records());
    let path = dir.path().join(FILE_NAME);
    let list = go::pprof(&["-list=^step$", "-sample_index=gpu_time"], &path);
    assert!(list.contains(&format!("ROUTINE ======================== step in {}", model_py())), "{list}");
    assert!(list.contains("return torch.cat([y, y])  # line 13"), "the source line: {list}");
    assert!(list.contains("30us"), "line 13's device time beside it: {list}");
    let top = go::pprof(&["-top", "-sample_index=gpu_time"], &path);
    for name in ["<module>", "Linear.forward", "step"] {
        assert!(top.lines().any(|l| l.ends_with(&format!(" {name}"))), "no function {name}: {top}");
    }
    let traces = go::pprof(&["-traces", "-sample_index=gpu_time"], &path);
    assert!(traces.contains("<module>"), "{traces}");
}

#[test]
fn native_frames_have_their_source_file_and_line_python_functions_their_first_line() {
    let dir = run(&records());
    let path = dir.path().join(FILE_NAME);
    let list = go::pprof(&["-list=^launch_linear$", "-sample_index=gpu_time"], &path);
    assert!(
        list.contains(&format!("ROUTINE ======================== launch_linear in {}", fixture("native.c")))
    );
    assert!(list.contains("enqueue(stream); /* line 5: the launch */"), "the source line: {list}");
    assert!(list.contains("150us"), "line 5's device time beside it: {list}");
    let p = decode(&path);
    let function = |name: &str| {
        p.function
            .iter()
            .find(|f| p.string_table[f.name as usize] == name)
            .unwrap_or_else(|| panic!("no {name}"))
    };
    for (name, start) in [("Linear.forward", 7), ("step", 11), ("<module>", 1)] {
        assert_eq!(function(name).start_line, start, "{name}");
    }
    let native = function("launch_linear");
    assert_eq!(
        (p.string_table[native.filename as usize].as_str(), native.start_line),
        (fixture("native.c").as_str(), 0)
    );
}

#[test]
fn names_stay_names() {
    let dir = run(&records());
    let top = go::pprof(&["-top", "-sample_index=gpu_time"], &dir.path().join(FILE_NAME));
    let kernels: Vec<&str> =
        top.lines().filter(|l| l.contains("[GPU_Kernel]at::native::vectorized_elementwise_kernel")).collect();
    assert_eq!(kernels.len(), 2, "the two instantiations apart, with ids: {top}");
    assert!(kernels.iter().all(|l| l.contains(" #")), "{top}");
    assert!(top.contains("[GPU_Kernel]at::native::{anonymous}::CatArrayBatchedCopy"), "{top}");
    assert!(!top.contains("::::"), "{top}");
}

#[test]
fn the_executable_is_the_profiles_file_with_real_ranges() {
    let dir = run(&records());
    let path = dir.path().join(FILE_NAME);
    let top = go::pprof(&["-top"], &path);
    assert!(top.starts_with("File: python3.12\n"), "{top}");
    let p = decode(&path);
    let main = &p.mapping[0];
    assert_eq!(p.string_table[main.filename as usize], "/usr/bin/python3.12");
    assert!(p.mapping.iter().all(|m| m.memory_start < m.memory_limit && m.file_offset == m.memory_start));
    for l in p.location.iter().filter(|l| l.mapping_id != 0) {
        let m = p.mapping.iter().find(|m| m.id == l.mapping_id).unwrap();
        assert!((m.memory_start..m.memory_limit).contains(&l.address), "{l:?} outside {m:?}");
    }
}

#[test]
fn sample_types_have_data_and_allocations_are_not_operations() {
    let dir = run(&records());
    let p = decode(&dir.path().join(FILE_NAME));
    let types: Vec<&str> = p.sample_type.iter().map(|t| p.string_table[t.r#type as usize].as_str()).collect();
    assert_eq!(
        types,
        ["gpu_time", "gpu_ops", "gpu_alloc_objects", "gpu_alloc_space", "cpu_time", "off_cpu_time"],
        "no profiler_overhead: the run has none"
    );
    for (i, t) in types.iter().enumerate() {
        assert!(p.sample.iter().any(|s| s.value[i] != 0), "{t} is empty");
    }
    let total = |i: usize| p.sample.iter().map(|s| s.value[i]).sum::<i64>();
    assert_eq!(total(1), 9 + 3, "the session's 9 operations and 3 kernels, not the allocation");
    assert_eq!((total(2), total(3)), (1, 1 << 20));
}

#[test]
fn without_frames_in_an_executable_the_command_names_the_profile() {
    // The interpreter's frames in its shared library (an embedded Python): no executable module.
    let records: Vec<Record> = records()
        .into_iter()
        .map(|r| match r {
            Record::Str(d) if d.text == "/usr/bin/python3.12" => {
                Record::Str(StrDef::new(d.id, "/usr/lib/libpython3.12.so.1.0"))
            }
            r => r,
        })
        .collect();
    let dir = run(&records);
    let path = dir.path().join(FILE_NAME);
    let top = go::pprof(&["-top"], &path);
    assert!(top.starts_with("File: python3\n"), "the command's executable: {top}");
    let p = decode(&path);
    assert!(p.location.iter().all(|l| l.mapping_id != p.mapping[0].id), "a mapping without locations");
}

#[test]
fn xpuprofs_own_code_is_under_one_xpuprof_frame() {
    let mut r = records();
    let agent = "/opt/xpuprof/lib/libxpuprof_cupti_agent.so";
    let capture =
        "xpuprof_python::autograd::<impl xpuprof_python::own::Interpreter>::capture_backward_caller";
    for (i, t) in [agent, capture, "process_vm_readv"].iter().enumerate() {
        r.push(Record::Str(StrDef::new(StrId(9_100 + i as u32), *t)));
    }
    r.push(Record::Module(ModuleDef::default().id(ModuleId(9)).path(StrId(9_100))));
    let frame = |id, module, name| {
        FrameDef::default()
            .id(FrameId(id))
            .kind(FrameKind::FileOffset)
            .module(ModuleId(module))
            .address(0x40)
            .name(StrId(name))
    };
    r.push(Record::Frame(frame(110, 9, 9_101)));
    r.push(Record::Frame(frame(111, 2, 9_102)));
    // Innermost first: libc's call, the agent's function, the user's Python frames.
    let frames = vec![FrameId(111), FrameId(110), FrameId(101), FrameId(104), FrameId(1)];
    r.push(Record::Stack(StackDef::default().id(StackId(110)).frames(frames)));
    let sample = CpuSample::default().pid(PID).tid(TID).time(T0 + 700_000).weight(10_000_000);
    r.push(Record::CpuSample(sample.stack(StackId(110))));
    let dir = run(&r);
    let p = decode(&dir.path().join(FILE_NAME));
    let name = |loc: u64| {
        let l = p.location.iter().find(|l| l.id == loc).unwrap();
        let f = p.function.iter().find(|f| f.id == l.line[0].function_id).unwrap();
        p.string_table[f.name as usize].clone()
    };
    let stacks: Vec<Vec<String>> =
        p.sample.iter().map(|s| s.location_id.iter().map(|&l| name(l)).collect()).collect();
    let own = stacks.iter().find(|s| s.iter().any(|n| n == "process_vm_readv")).expect("the agent's sample");
    let at = own.iter().position(|n| n == "[xpuprof]").expect("an [xpuprof] frame");
    assert!(own[at - 1].contains("capture_backward_caller"), "{own:?}");
    assert_eq!(own[at + 1], "Linear.forward", "the user's frames above it: {own:?}");
    assert_eq!(stacks.iter().flatten().filter(|n| *n == "[xpuprof]").count(), 1, "{stacks:?}");
}

/// Children the command started (a compiler a JIT runs, say) never name the profile, whatever
/// order their samples are aggregated in: the command's process was defined first.
#[test]
fn the_commands_executable_names_the_profile_before_its_childrens() {
    let mut r = records();
    for (i, t) in ["/usr/local/cuda/bin/ptxas -arch=sm_90", "/usr/local/cuda/bin/ptxas", "ptxas_main"]
        .iter()
        .enumerate()
    {
        r.push(Record::Str(StrDef::new(StrId(9_200 + i as u32), *t)));
    }
    for child in 0..8u32 {
        let pid = 5_000 + child;
        r.push(Record::Process(ProcessDef::default().pid(pid).ppid(PID).command(StrId(9_200))));
        let module = ModuleId(20 + child);
        r.push(Record::Module(ModuleDef::default().id(module).path(StrId(9_201))));
        let frame = FrameDef::default().id(FrameId(200 + child)).kind(FrameKind::FileOffset).module(module);
        r.push(Record::Frame(frame.address(0x1000).name(StrId(9_202))));
        r.push(Record::Stack(
            StackDef::default().id(StackId(200 + child)).frames(vec![FrameId(200 + child)]),
        ));
        let s =
            CpuSample::default().pid(pid).tid(pid).time(T0 + 1).weight(1_000_000).stack(StackId(200 + child));
        r.insert(
            r.iter().position(|x| matches!(x, Record::CpuSample(_))).unwrap_or(r.len()),
            Record::CpuSample(s),
        );
    }
    let dir = run(&r);
    let top = go::pprof(&["-top"], &dir.path().join(FILE_NAME));
    assert!(top.starts_with("File: python3.12\n"), "{top}");
}
