//! The pipeline end to end: batches in, records and counters out.

use super::*;
use xpuprof_sdk::emit::{Emitter, StringInterner};

// The stack agreement check between two sources.

/// One source's batch: a launch site for correlation id 5 of the test backend with the given frames
/// (names, innermost first), the first one inside the agent's library.
fn site_batch(frames: &[&str]) -> Vec<u8> {
    let mut e = Emitter::detached();
    let mut s = StringInterner::default();
    let agent = s.intern(&mut e, "/opt/x/libxpuprof_gpu_agent.so");
    e.emit(&Record::Module(ModuleDef::default().id(ModuleId(1)).path(agent)));
    e.emit(&Record::Frame(
        FrameDef::default()
            .id(FrameId(1))
            .kind(FrameKind::FileOffset)
            .module(ModuleId(1))
            .address(0x10)
            .pid(1),
    ));
    let mut ids = vec![FrameId(1)];
    for (i, f) in frames.iter().enumerate() {
        let name = s.intern(&mut e, f);
        let id = FrameId(i as u32 + 2);
        e.emit(&Record::Frame(FrameDef::default().id(id).kind(FrameKind::Synthetic).pid(1).name(name)));
        ids.push(id);
    }
    e.emit(&Record::Stack(StackDef::default().id(StackId(1)).frames(ids)));
    e.emit(&Record::LaunchSite(
        LaunchSite::default()
            .pid(1)
            .tid(1)
            .time(1)
            .correlation(Correlation { backend: backend::TEST, id: 5 })
            .stack(StackId(1)),
    ));
    e.take_buffer()
}

#[test]
fn stacks_from_two_sources_are_compared_past_the_agent_frame() {
    let mut p = Pipeline::new(2, false);
    p.push(0, &site_batch(&["launch", "main"]), &mut |_, _| {});
    // The second source's stack has a different agent frame id but the same user frames.
    let mut b = site_batch(&["launch", "main"]);
    b.extend(site_batch(&["other", "main"]));
    p.push(1, &b, &mut |_, _| {});
    let a = p.stats().agreement;
    assert_eq!((a.compared, a.agreed), (2, 1));
    let (x, y) = a.first_disagreement.unwrap();
    let agent = "/opt/x/libxpuprof_gpu_agent.so+0x10";
    assert_eq!(x, [agent, "launch", "main"]);
    assert_eq!(y, [agent, "other", "main"]);
}

#[test]
fn stacks_with_python_frames_are_compared_on_their_native_frames() {
    // The agent's stack has Python frames where the sampled stack has the interpreter's.
    let mut p = Pipeline::new(2, false);
    p.push(0, &site_batch(&["launch", "PyObject_Call", "step (w.py:7)", "main (w.py:9)"]), &mut |_, _| {});
    p.push(
        1,
        &site_batch(&["launch", "PyObject_Call", "_PyEval_EvalFrameDefault", "Py_RunMain"]),
        &mut |_, _| {},
    );
    let a = p.stats().agreement;
    assert_eq!((a.compared, a.agreed, a.native_only), (1, 1, 1), "{:?}", a.first_disagreement);
}

// Malformed records.

#[test]
fn a_malformed_record_is_skipped_and_counted_and_the_rest_is_kept() {
    let sample = |time: u64| {
        Record::CpuSample(CpuSample::default().pid(1).tid(1).time(time).kind(SampleKind::OnCpu).weight(1))
    };
    let mut e = Emitter::detached();
    e.emit(&sample(1));
    let mut batch = e.take_buffer();
    // A framed record of a known kind whose payload is malformed (an overlong varint).
    batch
        .extend_from_slice(&[batch[0], 11, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
    e.emit(&sample(2));
    batch.extend(e.take_buffer());
    let mut p = Pipeline::new(1, false);
    let mut records = Vec::new();
    p.push(0, &batch, &mut |b, _| records.append(b));
    p.finish(&mut |b, _| records.append(b));
    let times: Vec<u64> = records
        .iter()
        .filter_map(|r| if let Record::CpuSample(s) = r { Some(s.time) } else { None })
        .collect();
    assert_eq!(times, [1, 2], "the samples around the bad record are kept");
    assert_eq!(p.stats().malformed_per_source, [1]);
    assert!(
        records.iter().any(|r| matches!(r, Record::Loss(l) if l.count == 1)),
        "the loss reaches the sinks"
    );
    assert_eq!(p.stats().losses.get("malformed records from a source, skipped"), Some(&1));
}

// Batches marked as holding definitions or not.

#[test]
fn a_batch_is_marked_event_only_when_no_definition_went_out_since_the_last() {
    let mut e = Emitter::detached();
    e.emit(&Record::Str(StrDef::default().id(StrId(1)).text("main".into())));
    e.emit(&Record::CpuSample(CpuSample::default().pid(1).tid(1).time(5)));
    let mut p = Pipeline::new(1, false);
    let mut marks = Vec::new();
    p.push(0, &e.take_buffer(), &mut |_, _| {});
    p.flush(&mut |b, definitions| marks.push((b.len(), definitions)));
    e.emit(&Record::CpuSample(CpuSample::default().pid(1).tid(1).time(6)));
    p.push(0, &e.take_buffer(), &mut |_, _| {});
    p.flush(&mut |b, definitions| marks.push((b.len(), definitions)));
    assert_eq!(marks, [(2, true), (1, false)]);
}

// Stacks cut at the root end.

#[test]
fn address_only_frames_at_the_root_end_are_cut() {
    let mut e = Emitter::detached();
    e.emit(&Record::Str(StrDef::default().id(StrId(1)).text("/lib/libx.so".into())));
    e.emit(&Record::Module(ModuleDef::default().id(ModuleId(1)).path(StrId(1))));
    let frame = |id: u32, module: u32, address: u64| {
        Record::Frame(
            FrameDef::default()
                .id(FrameId(id))
                .kind(FrameKind::FileOffset)
                .module(ModuleId(module))
                .address(address)
                .pid(1),
        )
    };
    e.emit(&frame(1, 1, 0x10));
    e.emit(&frame(2, 1, 0x20));
    e.emit(&frame(3, 0, 0xdead));
    e.emit(&Record::Stack(StackDef::default().id(StackId(1)).frames(vec![
        FrameId(1),
        FrameId(2),
        FrameId(3),
    ])));
    let mut p = Pipeline::new(1, false);
    let mut out = Vec::new();
    p.push(0, &e.take_buffer(), &mut |b, _| out.append(b));
    p.finish(&mut |b, _| out.append(b));
    let stack = out
        .into_iter()
        .find_map(|r| match r {
            Record::Stack(s) => Some(s),
            _ => None,
        })
        .unwrap();
    assert_eq!(stack.frames.len(), 2);
    assert_eq!(p.stats().frames_cut, 1);
}

// Clock domains.

#[test]
fn foreign_clock_domains_are_converted_and_unpaired_ones_reported() {
    let mut e = Emitter::detached();
    let (paired, unpaired) = (ClockDomain(5), ClockDomain(6));
    e.emit(&Record::ClockDomain(ClockDomainDef::default().domain(paired).ticks_per_second(1_000_000)));
    e.emit(&Record::ClockSync(ClockSync::new(paired, 10, 5_000_000)));
    e.emit(&Record::DeviceOp(DeviceOp::default().clock(paired).start(12).end(13)));
    e.emit(&Record::DeviceOp(DeviceOp::default().clock(unpaired).start(1).end(2)));
    e.emit(&Record::ApiCall(ApiCall::default().clock(unpaired).start(1).end(2)));
    let mut p = Pipeline::new(1, false);
    let mut recs = Vec::new();
    p.push(0, &e.take_buffer(), &mut |b, _| recs.append(b));
    p.finish(&mut |b, _| recs.append(b));
    let ops: Vec<_> = recs
        .iter()
        .filter_map(|r| match r {
            Record::DeviceOp(op) => Some((op.start, op.end, op.clock)),
            _ => None,
        })
        .collect();
    assert_eq!(ops, [(5_002_000, 5_003_000, ClockDomain::SESSION)], "µs ticks converted, unpaired dropped");
    assert!(!recs.iter().any(|r| matches!(r, Record::ClockDomain(_) | Record::ApiCall(_))));
    let cause = "records in a clock domain never paired with the session clock";
    assert_eq!(p.stats().losses.get(cause), Some(&2));
    assert!(recs.iter().any(|r| matches!(r, Record::Loss(l) if l.count == 2)));
}

// Fields only the host fills.

#[test]
fn launch_and_recorded_set_by_a_source_are_dropped_before_the_correlator_fills_them() {
    let mut e = Emitter::detached();
    let stray = Some(LaunchRef::new(1, StackId(7), StrId(8), 1));
    e.emit(&Record::DeviceOp(DeviceOp::default().pid(1).start(1).end(2).launch(stray).recorded(stray)));
    let mut p = Pipeline::new(1, false);
    let mut out = Vec::new();
    p.push(0, &e.take_buffer(), &mut |b, _| out.append(b));
    p.finish(&mut |b, _| out.append(b));
    let op = out.iter().find_map(|r| if let Record::DeviceOp(op) = r { Some(op) } else { None }).unwrap();
    assert_eq!((op.launch, op.recorded), (None, None));
    assert_eq!(p.stats().dangling, 0, "the stray ids were never looked up");
}
