//! Device PC samples in the profile: the `gpu_pc_samples/count` sample type, each sample's
//! leaf the stall reason, then the source line, then the kernel and its launch.

use xpuprof_sdk::model::*;

use crate::sink::{decode, run};

fn records() -> Vec<Record> {
    let mut r: Vec<Record> = [(1, "gemm"), (2, "/src/k.cu"), (3, "long_scoreboard"), (4, "cuLaunchKernel")]
        .into_iter()
        .map(|(id, t)| Record::Str(StrDef::default().id(StrId(id)).text(t.into())))
        .collect();
    let launch = LaunchRef::default().tid(7).api(StrId(4));
    r.push(Record::DeviceOp(
        DeviceOp::default()
            .pid(7)
            .kind(DeviceOpKind::Kernel)
            .name(StrId(1))
            .start(10)
            .end(110)
            .launch(Some(launch)),
    ));
    let s = DeviceSample::default().pid(7).kernel(StrId(1)).stall(StrId(3)).start(5).end(200);
    r.push(Record::DeviceSample(s.clone().file(StrId(2)).line(12).count(40)));
    r.push(Record::DeviceSample(s.count(2)));
    r
}

#[test]
fn samples_under_their_kernel_with_line_and_stall() {
    let dir = run(&records());
    let p = decode(&dir.path().join(xpuprof_plugin_pprof::FILE_NAME));
    let s = |i: i64| p.string_table[i as usize].as_str();
    let types: Vec<&str> = p.sample_type.iter().map(|t| s(t.r#type)).collect();
    let pc = types.iter().position(|t| *t == "gpu_pc_samples").expect("gpu_pc_samples listed");
    assert_eq!(s(p.sample_type[pc].unit), "count");
    let name = |loc: u64| {
        let l = p.location.iter().find(|l| l.id == loc).unwrap();
        let f = p.function.iter().find(|f| f.id == l.line[0].function_id).unwrap();
        s(f.name).to_owned()
    };
    let mut got: Vec<(Vec<String>, i64)> = p
        .sample
        .iter()
        .filter(|x| x.value[pc] != 0)
        .map(|x| (x.location_id.iter().take(4).map(|&l| name(l)).collect(), x.value[pc]))
        .collect();
    got.sort();
    assert_eq!(
        got,
        [
            (
                vec![
                    "[stall]long_scoreboard".into(),
                    "[no source line]".into(),
                    "[GPU_Kernel]gemm".into(),
                    "cuLaunchKernel".into()
                ],
                2
            ),
            (
                vec![
                    "[stall]long_scoreboard".into(),
                    "k.cu:12".into(),
                    "[GPU_Kernel]gemm".into(),
                    "cuLaunchKernel".into()
                ],
                40
            ),
        ]
    );
}

#[test]
fn samples_carry_their_instruction_and_inlined_call_site() {
    let mut r = records();
    for (id, t) in [(5, "LDG.E R2, desc[UR4][R2.64]"), (6, "/src/model.py")] {
        r.push(Record::Str(StrDef::default().id(StrId(id)).text(t.into())));
    }
    r.push(Record::DeviceSample(
        DeviceSample::default()
            .pid(7)
            .kernel(StrId(1))
            .stall(StrId(3))
            .file(StrId(2))
            .line(14)
            .call_file(StrId(6))
            .call_line(41)
            .pc_offset(0x1b0)
            .instruction(StrId(5))
            .start(5)
            .end(200)
            .count(9),
    ));
    let dir = run(&r);
    let p = decode(&dir.path().join(xpuprof_plugin_pprof::FILE_NAME));
    let s = |i: i64| p.string_table[i as usize].as_str();
    let name = |loc: u64| {
        let l = p.location.iter().find(|l| l.id == loc).unwrap();
        let f = p.function.iter().find(|f| f.id == l.line[0].function_id).unwrap();
        s(f.name).to_owned()
    };
    let sample = p
        .sample
        .iter()
        .find(|x| x.label.iter().any(|l| s(l.key) == "instruction"))
        .expect("a sample labelled with its instruction");
    let label = |k: &str| sample.label.iter().find(|l| s(l.key) == k).map(|l| s(l.str).to_owned());
    assert_eq!(label("instruction").as_deref(), Some("LDG.E R2, desc[UR4][R2.64]"));
    assert_eq!(label("pc").as_deref(), Some("0x01b0"));
    let frames: Vec<String> = sample.location_id.iter().take(4).map(|&l| name(l)).collect();
    assert_eq!(frames, ["[stall]long_scoreboard", "k.cu:14", "model.py:41", "[GPU_Kernel]gemm"]);
}
