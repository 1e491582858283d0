//! Decoder tests on real agent streams captured on the H100 test machine (CUDA 13.0, CUPTI
//! 13.0) by `scripts/gpu/run-all.sh capture` from the programs in `plugins/cupti/tests/workloads/`; see
//! `plugins/cupti/tests/fixtures/README.md`. What they check is what a user sees in the profile: every
//! kernel is there with its launch configuration, joined by its exact correlation id to a launch
//! site whose stack holds the function that launched it; graph kernels share the graph launch's
//! id; copies go the right way.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use xpuprof_plugin_cupti::Decoder;
use xpuprof_sdk::model::*;
use xpuprof_sdk::{codec, Emitter, Logger};
use xpuprof_toolbox::agent_host::StreamDecoder;

fn dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// A decoded fixture with lookups.
struct Session {
    records: Vec<Record>,
    strs: HashMap<StrId, String>,
    frames: HashMap<FrameId, FrameDef>,
    stacks: HashMap<StackId, Vec<FrameId>>,
    modules: HashMap<ModuleId, String>,
    syms: Vec<(u64, u64, String)>,
    expect: HashMap<String, String>,
}

fn load(name: &str) -> Session {
    let d = dir(name);
    let bytes = std::fs::read(d.join("stream.bin")).expect("fixture stream");
    let mut dec = Decoder::new(Logger::stderr());
    let mut out = Emitter::detached();
    // Feed in uneven pieces, as a socket would deliver them.
    let mut pending = Vec::new();
    for chunk in bytes.chunks(1000) {
        pending.extend_from_slice(chunk);
        let used = dec.feed(1, &pending, &mut out);
        pending.drain(..used);
    }
    assert!(pending.is_empty(), "{name}: stream ends inside a message");
    let (_, own) = dec.finish(&mut out);
    assert_eq!(own.unknown_versions, 0, "{name}: records of unknown versions");
    let records = codec::decode_all(&out.take_buffer()).expect("decodable records");
    let mut s = Session {
        records,
        strs: HashMap::new(),
        frames: HashMap::new(),
        stacks: HashMap::new(),
        modules: HashMap::new(),
        syms: Vec::new(),
        expect: HashMap::new(),
    };
    for r in &s.records {
        match r {
            Record::Str(x) => {
                s.strs.insert(x.id, x.text.clone());
            }
            Record::Frame(f) => {
                s.frames.insert(f.id, f.clone());
            }
            Record::Stack(st) => {
                s.stacks.insert(st.id, st.frames.clone());
            }
            Record::Module(m) => {
                s.modules.insert(m.id, s.strs[&m.path].clone());
            }
            _ => {}
        }
    }
    let stdout = std::fs::read_to_string(d.join("stdout.txt")).expect("stdout");
    let line = stdout.lines().find(|l| l.starts_with("EXPECT ")).expect("EXPECT line");
    for kv in line.split_whitespace().skip(1) {
        let (k, v) = kv.split_once('=').unwrap();
        s.expect.insert(k.to_owned(), v.to_owned());
    }
    // A fixture made from another one's stream (`program=`) uses that program's symbols.
    let program = s.expect.get("program").cloned().unwrap_or_else(|| name.to_owned());
    let syms = std::fs::read_to_string(dir(&program).join(format!("{program}.syms"))).expect("symbols");
    for line in syms.lines() {
        let mut it = line.splitn(4, ' ');
        let (Some(a), Some(sz), Some(_), Some(n)) = (it.next(), it.next(), it.next(), it.next()) else {
            continue;
        };
        if let (Ok(a), Ok(sz)) = (u64::from_str_radix(a, 16), u64::from_str_radix(sz, 16)) {
            s.syms.push((a, sz, n.to_owned()));
        }
    }
    s
}

impl Session {
    fn kernels(&self) -> Vec<&DeviceOp> {
        self.ops(DeviceOpKind::Kernel)
    }

    fn ops(&self, kind: DeviceOpKind) -> Vec<&DeviceOp> {
        self.records
            .iter()
            .filter_map(|r| if let Record::DeviceOp(o) = r { Some(o) } else { None })
            .filter(|o| o.kind == kind)
            .collect()
    }

    /// Launch sites by correlation id; each id must have exactly one.
    fn sites(&self) -> HashMap<u64, &LaunchSite> {
        let mut m = HashMap::new();
        for r in &self.records {
            if let Record::LaunchSite(s) = r {
                assert!(
                    m.insert(s.correlation.id, s).is_none(),
                    "two launch sites for id {}",
                    s.correlation.id
                );
            }
        }
        m
    }

    /// Function names of a stack's frames in the program's own module.
    fn functions(&self, stack: StackId) -> Vec<String> {
        let prog = self.expect_prog();
        self.stacks[&stack]
            .iter()
            .filter_map(|f| {
                let f = &self.frames[f];
                let path = self.modules.get(&f.module)?;
                if !path.ends_with(&format!("/{prog}")) {
                    return None;
                }
                let (_, _, n) =
                    self.syms.iter().find(|(a, sz, _)| f.address >= *a && f.address < a + sz.max(&1))?;
                Some(n.clone())
            })
            .collect()
    }

    fn expect_prog(&self) -> String {
        let cmd = self
            .records
            .iter()
            .find_map(|r| if let Record::Process(p) = r { Some(p.command) } else { None })
            .unwrap();
        let exe = self.strs[&cmd].split_whitespace().next().unwrap().to_owned();
        exe.rsplit('/').next().unwrap().to_owned()
    }

    fn name(&self, id: StrId) -> &str {
        self.strs.get(&id).map(String::as_str).unwrap_or("")
    }
}

/// Every kernel is recorded, has a launch site with the same correlation id, and that site's
/// stack contains one of the launching functions.
fn check_kernels_joined(name: &str) -> Session {
    let s = load(name);
    let kernels = s.kernels();
    assert_eq!(kernels.len(), s.expect["kernels"].parse::<usize>().unwrap(), "{name}: kernel count");
    let sites = s.sites();
    let launchers: Vec<&str> = s.expect["launchers"].split(',').collect();
    for k in &kernels {
        let corr = k.correlation.expect("kernel has a correlation id");
        assert_eq!(corr.backend, backend::CUDA);
        let site =
            sites.get(&corr.id).unwrap_or_else(|| panic!("{name}: kernel {} has no launch site", corr.id));
        let fns = s.functions(site.stack);
        assert!(
            fns.iter().any(|f| launchers.iter().any(|l| f.contains(l))),
            "{name}: launch stack of {} lacks {launchers:?}: {fns:?}",
            s.name(k.name)
        );
        let info = k.kernel.expect("launch configuration");
        assert!(info.grid[0] >= 1 && info.block[0] >= 1 && info.registers > 0, "{name}: {info:?}");
        assert!(k.end > k.start && k.device != DeviceId::NONE && k.stream != StreamId::NONE);
    }
    s
}

#[test]
fn basic_kernels_copies_memset_and_nvtx() {
    let s = check_kernels_joined("basic");
    let copies = s.ops(DeviceOpKind::Memcpy);
    let dirs: HashSet<CopyKind> = copies.iter().map(|c| c.copy).collect();
    assert_eq!(copies.len(), 2);
    assert_eq!(dirs, HashSet::from([CopyKind::HostToDevice, CopyKind::DeviceToHost]));
    assert!(copies.iter().all(|c| c.bytes == 4 << 20));
    let sets = s.ops(DeviceOpKind::Memset);
    assert_eq!(sets.len(), 1);
    assert_eq!(sets[0].bytes, 4096);
    // Copies and the memset are joined to their call sites too, under main.
    let sites = s.sites();
    for op in copies.iter().chain(sets.iter()) {
        let site = sites[&op.correlation.unwrap().id];
        assert!(s.functions(site.stack).iter().any(|f| f == "main"), "{op:?}");
    }
    assert_eq!(s.ops(DeviceOpKind::Alloc).len(), 1);
    assert_eq!(s.ops(DeviceOpKind::Free).len(), 1);
    let names: Vec<&str> = s.kernels().iter().map(|k| s.name(k.name)).collect();
    assert!(
        names.iter().any(|n| n.contains("scale_kernel")) && names.iter().any(|n| n.contains("add_kernel")),
        "{names:?}"
    );
    let marker = s
        .records
        .iter()
        .find_map(|r| if let Record::Marker(m) = r { Some(m) } else { None })
        .expect("NVTX marker");
    assert_eq!(s.name(marker.name), "basic: start");
    let ranges: Vec<&str> = s
        .records
        .iter()
        .filter_map(|r| if let Record::Range(a) = r { Some(s.name(a.name)) } else { None })
        .filter(|n| n.starts_with("basic:"))
        .collect();
    assert_eq!(ranges, ["basic: copy in", "basic: compute"]);
    let dev = s
        .records
        .iter()
        .find_map(|r| if let Record::Device(d) = r { Some(d) } else { None })
        .expect("device");
    assert!(
        s.name(dev.name).contains("H100") && dev.compute_units == 132 && dev.memory_bytes > 80_000_000_000
    );
    // api = "all" in this capture: API calls carry names and correlation ids.
    let apis: HashSet<&str> = s
        .records
        .iter()
        .filter_map(|r| if let Record::ApiCall(c) = r { Some(s.name(c.name)) } else { None })
        .collect();
    assert!(apis.contains("cudaLaunchKernel") && apis.contains("cudaMemcpy"), "{apis:?}");
}

#[test]
fn multi_stream_kernels_on_two_streams() {
    let s = check_kernels_joined("multi_stream");
    let streams: HashSet<StreamId> = s.kernels().iter().map(|k| k.stream).collect();
    assert_eq!(streams.len(), 2);
    assert_eq!(s.ops(DeviceOpKind::Memset).len(), 2);
}

#[test]
fn multi_thread_launches_from_two_threads() {
    let s = check_kernels_joined("multi_thread");
    let sites = s.sites();
    let tids: HashSet<u32> = s.kernels().iter().map(|k| sites[&k.correlation.unwrap().id].tid).collect();
    assert_eq!(tids.len(), 2, "kernels launched from two threads");
}

#[test]
fn driver_api_launches_are_covered() {
    let s = check_kernels_joined("driver_launch");
    let sites = s.sites();
    for k in s.kernels() {
        assert_eq!(s.name(sites[&k.correlation.unwrap().id].api), "cuLaunchKernel");
    }
}

#[test]
fn graph_nodes_share_the_graph_launch() {
    let s = check_kernels_joined("graph_launch");
    let sites = s.sites();
    let mut per_launch: HashMap<u64, Vec<&DeviceOp>> = HashMap::new();
    for k in s.kernels() {
        assert!(k.graph.is_some(), "graph kernel without graph ids");
        per_launch.entry(k.correlation.unwrap().id).or_default().push(k);
    }
    let nodes = s.expect["graph_nodes"].parse::<usize>().unwrap();
    for (id, ks) in &per_launch {
        assert_eq!(ks.len(), nodes, "one graph launch runs every node under its id");
        let nodes: HashSet<u64> = ks.iter().map(|k| k.graph.unwrap().node).collect();
        assert_eq!(nodes.len(), ks.len(), "distinct node ids");
        // Launch sites come from the driver-API callback (every runtime call runs through it
        // under the same correlation id); the stack holds cudaGraphLaunch above it.
        assert_eq!(s.name(sites[id].api), "cuGraphLaunch");
    }
}

/// Every fixture whose program says where its graph nodes were built (`capture_launchers=`):
/// each replayed kernel names, through its submission link, the call that built its node, whose
/// launch site is marked as a recording and holds one of those functions, while its own launch
/// site (the graph launch) holds the replaying function.
#[test]
fn replayed_graph_kernels_name_the_call_that_built_their_node() {
    let mut checked = 0;
    for entry in std::fs::read_dir(dir("")).expect("fixture folder") {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        // A capture of one of the CUDA programs (a stream and the program's output); the JAX
        // capture (`jax_init`) has its own test (`xla.rs`).
        if !dir(&name).join("stream.bin").exists() || !dir(&name).join("stdout.txt").exists() {
            continue;
        }
        let s = load(&name);
        let Some(capture) = s.expect.get("capture_launchers") else { continue };
        let capture: Vec<&str> = capture.split(',').collect();
        let s = check_kernels_joined(&name);
        let sites = s.sites();
        let mut builders = HashSet::new();
        for k in s.kernels() {
            let sub = k.submission.unwrap_or_else(|| panic!("{name}: graph kernel without submission link"));
            assert_eq!(sub.execution, k.correlation.unwrap().id, "{name}: executed by its graph launch");
            assert_eq!(sub.list, k.graph.unwrap().graph, "{name}: the list is the graph");
            let record =
                sub.record.unwrap_or_else(|| panic!("{name}: {} has no building call", s.name(k.name)));
            let site = sites[&record.id];
            assert!(site.recording, "{name}: the building call's launch site is a recording");
            let fns = s.functions(site.stack);
            assert!(
                fns.iter().any(|f| capture.iter().any(|c| f.contains(c))),
                "{name}: the node of {} was built at {fns:?}, not in {capture:?}",
                s.name(k.name)
            );
            builders.insert(record.id);
        }
        let nodes = s.expect["graph_nodes"].parse::<usize>().unwrap();
        assert_eq!(builders.len(), nodes, "{name}: one building call per node");
        // A child-graph node's call is a recording too, without kernels of its own.
        let recordings = sites.values().filter(|x| x.recording).count();
        assert!(recordings >= nodes, "{name}: {recordings} recording calls for {nodes} nodes");
        // `recorded=kernel:function,...`: where each kernel's node was built, exactly.
        for pair in s.expect.get("recorded").map(|v| v.split(',').collect::<Vec<_>>()).unwrap_or_default() {
            let (kernel, function) = pair.split_once(':').unwrap();
            for k in s.kernels().into_iter().filter(|k| s.name(k.name).contains(kernel)) {
                let site = sites[&k.submission.unwrap().record.unwrap().id];
                let fns = s.functions(site.stack);
                assert!(
                    fns.iter().any(|f| f.contains(function)),
                    "{name}: {kernel} built at {fns:?}, not {function}"
                );
            }
        }
        checked += 1;
    }
    assert!(checked >= 1, "no fixture with graph nodes");
}

#[test]
fn an_agent_of_another_wire_protocol_is_refused() {
    let mut bytes = std::fs::read(dir("basic").join("stream.bin")).expect("fixture stream");
    let (first, _) = xpuprof_plugin_cupti::wire::split_messages(&bytes);
    assert_eq!(first[0].ty, xpuprof_plugin_cupti::wire::MSG_HELLO, "a stream starts with its hello");
    // The protocol field: header (8 bytes), then pid and runtime version.
    let other = xpuprof_plugin_cupti::wire::PROTOCOL + 1;
    bytes[16..20].copy_from_slice(&other.to_le_bytes());
    let mut dec = Decoder::new(Logger::stderr());
    let mut out = Emitter::detached();
    assert_eq!(dec.feed(1, &bytes, &mut out), bytes.len());
    let (c, _) = dec.finish(&mut out);
    let records = codec::decode_all(&out.take_buffer()).expect("decodes");
    assert_eq!(c.refused, 1);
    assert_eq!((c.processes, c.device_ops, c.launch_sites), (0, 0, 0));
    assert!(
        !records.iter().any(|r| matches!(r, Record::DeviceOp(_) | Record::LaunchSite(_))),
        "nothing of a refused stream reaches the session"
    );
}
