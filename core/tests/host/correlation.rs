//! The scripted session through the real ABI and pipeline: the joins, the one-to-many graph
//! launch, the late launch stack, the unmatched count and the loss record.

use std::collections::HashMap;
use std::sync::mpsc;

use xpuprof_core::host::{Instance, Registry, SearchPath};
use xpuprof_core::pipeline::Pipeline;
use xpuprof_core::session::{create_args, session_table};
use xpuprof_sdk::model::*;
use xpuprof_sdk::PluginKind;

use super::common::*;

pub fn scripted_records() -> (Vec<Record>, xpuprof_core::pipeline::PipelineStats) {
    let reg = Registry::discover(&SearchPath::new(&[require_plugin("scripted")], None, &[]));
    let p = reg.find(PluginKind::Source, "scripted").expect("scripted plugin loads");
    let (tx, rx) = mpsc::sync_channel(64);
    let session = session_table(std::path::Path::new("."), &[], &[], &[], 0, 0);
    let mut table = toml::Table::new();
    table.insert("repeat".into(), toml::Value::Integer(1));
    let mut inst = Instance::create(p, &create_args(table, &session), 0, Some(tx)).unwrap();
    inst.start(1).unwrap();
    inst.stop().unwrap();
    drop(inst);
    let mut pipeline = Pipeline::new(1, false);
    let mut out = Vec::new();
    for b in rx.iter() {
        pipeline.push(0, &b.bytes, &mut |o, _| out.append(o));
    }
    pipeline.finish(&mut |o, _| out.append(o));
    (out, pipeline.stats())
}

fn strings(recs: &[Record]) -> HashMap<StrId, String> {
    recs.iter()
        .filter_map(|r| match r {
            Record::Str(s) => Some((s.id, s.text.clone())),
            _ => None,
        })
        .collect()
}

fn stack_names(recs: &[Record], stack: StackId) -> Vec<String> {
    let s = strings(recs);
    let frames: HashMap<FrameId, StrId> = recs
        .iter()
        .filter_map(|r| match r {
            Record::Frame(f) => Some((f.id, f.name)),
            _ => None,
        })
        .collect();
    let st = recs
        .iter()
        .find_map(|r| match r {
            Record::Stack(d) if d.id == stack => Some(d.frames.clone()),
            _ => None,
        })
        .expect("stack defined");
    st.iter().map(|f| s[&frames[f]].clone()).collect()
}

fn kernels<'a>(recs: &'a [Record], name: &str) -> Vec<&'a DeviceOp> {
    let s = strings(recs);
    recs.iter()
        .filter_map(|r| match r {
            Record::DeviceOp(op) if s.get(&op.name).map(String::as_str) == Some(name) => Some(op),
            _ => None,
        })
        .collect()
}

#[test]
fn kernel_joins_its_launch_stack() {
    let (recs, _) = scripted_records();
    let k = kernels(&recs, "void gemm_kernel<float, 128>(float const*, float*, int)");
    assert_eq!(k.len(), 1);
    let l = k[0].launch.expect("joined");
    assert_eq!(stack_names(&recs, l.stack), ["launch_gemm", "forward", "train_step", "main"]);
    assert_eq!(strings(&recs)[&l.api], "cudaLaunchKernel");
}

#[test]
fn graph_launch_joins_every_node_one_to_many() {
    let (recs, _) = scripted_records();
    let mut nodes: Vec<&DeviceOp> = kernels(&recs, "graph_node_a");
    nodes.extend(kernels(&recs, "graph_node_b"));
    assert_eq!(nodes.len(), 3);
    let corr: Vec<_> = nodes.iter().map(|n| n.correlation.unwrap().id).collect();
    assert!(corr.iter().all(|c| *c == corr[0]), "one launch id: {corr:?}");
    for n in &nodes {
        let l = n.launch.expect("every graph node joined");
        assert_eq!(stack_names(&recs, l.stack), ["run_graph", "train_step", "main"]);
        assert!(n.graph.is_some());
    }
}

#[test]
fn kernel_before_its_launch_stack_still_joins() {
    let (recs, _) = scripted_records();
    let k = kernels(&recs, "relu_kernel");
    assert_eq!(stack_names(&recs, k[0].launch.unwrap().stack)[0], "launch_relu");
}

#[test]
fn unmatched_work_is_counted_and_reported_as_a_loss() {
    let (recs, stats) = scripted_records();
    let lost = kernels(&recs, "lost_kernel");
    assert_eq!(lost.len(), 1);
    assert!(lost[0].launch.is_none());
    assert_eq!(stats.correlation.unmatched, 1);
    assert_eq!(stats.correlation.device_ops, 12);
    assert_eq!(stats.correlation.joined_with_stack, 10);
    let s = strings(&recs);
    let losses: Vec<(String, u64)> = recs
        .iter()
        .filter_map(|r| match r {
            Record::Loss(l) => Some((s[&l.cause].clone(), l.count)),
            _ => None,
        })
        .collect();
    assert!(losses.contains(&("scripted ring buffer full".into(), 3)), "{losses:?}");
    assert!(losses.contains(&("device work without a launch site".into(), 1)), "{losses:?}");
}

#[test]
fn definitions_precede_their_first_use_and_ids_are_session_wide() {
    let (recs, stats) = scripted_records();
    let mut defined_strs = std::collections::HashSet::new();
    let mut defined_stacks = std::collections::HashSet::new();
    for r in &recs {
        match r {
            Record::Str(s) => {
                defined_strs.insert(s.id);
            }
            Record::Stack(s) => {
                defined_stacks.insert(s.id);
            }
            Record::DeviceOp(op) => {
                assert!(defined_strs.contains(&op.name));
                if let Some(l) = op.launch.filter(|l| !l.stack.is_none()) {
                    assert!(defined_stacks.contains(&l.stack));
                }
            }
            _ => {}
        }
    }
    assert_eq!(stats.dangling, 0);
}
