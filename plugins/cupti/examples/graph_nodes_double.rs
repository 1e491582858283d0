//! Makes the `graph_nodes_double` fixture: the real `graph_launch` agent stream (captured on the
//! H100 before the agent reported graph nodes) plus the graph-node messages the agent's
//! resource callbacks would have sent, written by this test double. It stands in for a real
//! capture until `scripts/gpu/run-all.sh capture` records `graph_stacks` with the new agent.
//!
//! ```sh
//! cargo run -p xpuprof-plugin-cupti --example graph_nodes_double -- \
//!     plugins/cupti/tests/fixtures/graph_launch/stream.bin plugins/cupti/tests/fixtures/graph_nodes_double/stream.bin
//! ```
//!
//! What it adds, right after the hello (the agent sends node messages during the creating call,
//! before that call's launch entry): each kernel's node created by the capture-time launch of
//! that kernel in `build_graph` (the launch sites whose API is a kernel launch, before the first
//! graph launch, in order: `graph_k1`, `graph_k2`, `graph_k3`); `graph_k3`'s node copied once
//! into a parent graph as a child-graph node; and each node of the executable graph (the ids the
//! kernel records carry) copied from those, as instantiation does.

use std::collections::BTreeMap;
use std::process::ExitCode;

use xpuprof_plugin_cupti::cuda_wire;
use xpuprof_plugin_cupti::wire;
use xpuprof_plugin_cupti::Decoder;
use xpuprof_sdk::model::*;
use xpuprof_sdk::{codec, Emitter, Logger};
use xpuprof_toolbox::agent_host::StreamDecoder;

/// Ids of the nodes the double creates (the real exec-node ids are far below).
const CREATED_BASE: u64 = 1 << 40;
const CHILD_COPY_BASE: u64 = 2 << 40;

fn records(bytes: &[u8]) -> Vec<Record> {
    let mut d = Decoder::new(Logger::stderr());
    let mut e = Emitter::detached();
    d.feed(1, bytes, &mut e);
    d.finish(&mut e);
    codec::decode_all(&e.take_buffer()).expect("the decoder writes valid batches")
}

/// (kernel name → exec node id, capture-time kernel launches in order).
fn nodes_and_captures(recs: &[Record]) -> (BTreeMap<String, (u32, u64)>, Vec<u64>) {
    let mut strs = BTreeMap::new();
    let mut nodes = BTreeMap::new();
    let mut launches = Vec::new();
    let mut first_graph_launch = u64::MAX;
    for r in recs {
        match r {
            Record::Str(s) => {
                strs.insert(s.id, s.text.clone());
            }
            Record::LaunchSite(s) => {
                let api = strs.get(&s.api).map(String::as_str).unwrap_or("");
                if api.contains("GraphLaunch") {
                    first_graph_launch = first_graph_launch.min(s.correlation.id);
                } else if api.contains("LaunchKernel") {
                    launches.push(s.correlation.id);
                }
            }
            Record::DeviceOp(op) => {
                if let (Some(g), Some(name)) = (op.graph, strs.get(&op.name)) {
                    nodes.insert(name.clone(), (g.graph as u32, g.node));
                }
            }
            _ => {}
        }
    }
    launches.retain(|&c| c < first_graph_launch);
    (nodes, launches)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output] = args.as_slice() else {
        eprintln!("usage: graph_nodes_double <graph_launch stream.bin> <output stream.bin>");
        return ExitCode::from(2);
    };
    let bytes = match std::fs::read(input) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("graph_nodes_double: failed to read {input}: {e}");
            return ExitCode::from(1);
        }
    };
    let (nodes, captures) = nodes_and_captures(&records(&bytes));
    if nodes.len() != captures.len() || nodes.is_empty() {
        eprintln!(
            "graph_nodes_double: {input} is not the graph_launch stream ({} graph kernels, {} capture launches)",
            nodes.len(),
            captures.len()
        );
        return ExitCode::from(1);
    }
    let mut added = Vec::new();
    for (i, ((_name, (graph, exec_node)), call)) in nodes.iter().zip(&captures).enumerate() {
        let created = CREATED_BASE + i as u64;
        cuda_wire::put_graph_node(&mut added, cuda_wire::NODE_CREATED, *graph, created, *call);
        let mut from = created;
        if i + 1 == nodes.len() {
            // The last kernel went through a child graph first.
            from = CHILD_COPY_BASE + i as u64;
            cuda_wire::put_graph_node(&mut added, cuda_wire::NODE_CLONED, *graph + 1, from, created);
        }
        cuda_wire::put_graph_node(&mut added, cuda_wire::NODE_CLONED, *graph, *exec_node, from);
    }
    let (msgs, _) = wire::split_messages(&bytes);
    let hello_len = msgs.first().map_or(0, |m| wire::HEADER_BYTES + m.payload.len());
    let mut out = bytes[..hello_len].to_vec();
    out.extend_from_slice(&added);
    out.extend_from_slice(&bytes[hello_len..]);
    if let Err(e) = std::fs::write(output, &out) {
        eprintln!("graph_nodes_double: failed to write {output}: {e}");
        return ExitCode::from(1);
    }
    eprintln!(
        "wrote {output}: {} node messages added for {nodes:?}, capture calls {captures:?}",
        added.len() / 32
    );
    ExitCode::SUCCESS
}
