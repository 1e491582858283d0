//! The C plugin header (`sdk/include/xpuprof/`) against the host: it compiles as C99 and C++17
//! with every warning an error, its struct layouts are the host's, and its batch reader and
//! writer reproduce, byte for byte, a batch the Rust SDK encoded with every record kind and
//! every field set. The C programs are in `tests/c-abi/`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use xpuprof_sdk::codec;
use xpuprof_sdk::model::*;

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The header's include directory.
pub fn include_dir() -> PathBuf {
    repo().join("sdk/include")
}

/// Compiles `sources` with `compiler` and `flags` into `out` against the header; panics with
/// the compiler's messages when it fails.
pub fn compile(compiler: &str, flags: &[&str], sources: &[PathBuf], out: &Path) {
    let o = Command::new(compiler)
        .args(flags)
        .arg("-I")
        .arg(include_dir())
        .args(sources)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap_or_else(|e| {
            panic!("failed to run {compiler} (install gcc and g++: scripts/install-deps.sh): {e}")
        });
    assert!(
        o.status.success(),
        "{compiler} {flags:?} {sources:?} failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn c_test(name: &str) -> PathBuf {
    repo().join("tests/c-abi").join(name)
}

const STRICT_C: &[&str] = &["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"];

#[test]
fn the_header_compiles_as_c99_and_as_cpp17_without_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let c = dir.path().join("c99");
    compile("cc", STRICT_C, &[c_test("compile.c")], &c);
    assert!(Command::new(&c).status().unwrap().success());
    let cpp = dir.path().join("cpp17");
    compile("c++", &["-x", "c++", "-std=c++17", "-Wall", "-Wextra", "-Werror"], &[c_test("compile.c")], &cpp);
    assert!(Command::new(&cpp).status().unwrap().success());
}

#[test]
fn the_header_layouts_are_the_hosts() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("struct_offsets");
    compile("cc", STRICT_C, &[c_test("struct_offsets.c")], &exe);
    let o = Command::new(&exe).output().unwrap();
    let text = String::from_utf8(o.stdout).unwrap();
    let c: Vec<(String, usize)> = text
        .lines()
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').unwrap();
            (k.to_owned(), v.parse().unwrap())
        })
        .collect();
    let rust: Vec<(String, usize)> =
        xpuprof_core::host::cabi::ffi::layout().into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    assert_eq!(c, rust, "C (left) and the host (right) disagree on a layout");
}

fn corr(id: u64) -> Option<Correlation> {
    Some(Correlation::new(0x142, id))
}

/// One record of every kind, every field set to something other than its default.
fn every_record() -> Vec<Record> {
    let big = 0x1234_5678_9abc;
    let kernel = KernelInfo::blocks([300, 2, 3], [256, 1, 1])
        .shared_memory(49152)
        .registers(128)
        .unit(SizeUnit::WorkItems)
        .vgprs(64)
        .sgprs(32)
        .scratch_bytes(1024);
    let launch = LaunchRef::default().tid(11).stack(StackId(4)).api(StrId(2)).time(big + 7);
    let submission = Submission::default().list(0xdead).record(corr(77)).execution(3);
    let op = DeviceOp::default()
        .kind(DeviceOpKind::Memcpy)
        .pid(10)
        .device(DeviceId(1))
        .stream(StreamId(2))
        .start(big)
        .end(big + 200_000)
        .clock(ClockDomain(3))
        .name(StrId(1))
        .bytes(1 << 33)
        .copy(CopyKind::PeerToPeer)
        .correlation(corr(5))
        .kernel(Some(kernel))
        .graph(Some(GraphInfo::new(9, 10)))
        .launch(Some(launch))
        .src_device(DeviceId(1))
        .dst_device(DeviceId(2))
        .submission(Some(submission))
        .recorded(Some(LaunchRef::default().tid(12).stack(StackId(5)).api(StrId(1)).time(big + 3)))
        .collective(CollectiveOp::AllReduce)
        .communicator(0xfeed_beef_0000_0001);
    let annotation = Annotation::default()
        .pid(10)
        .tid(11)
        .start(big)
        .end(big + 5)
        .name(StrId(1))
        .domain(StrId(2))
        .clock(ClockDomain(3));
    vec![
        Record::Str(
            StrDef::new(StrId(1), "acme::gemm<float> \"quoted\" ü".repeat(9)).display("gemm ü".into()),
        ),
        Record::Process(
            ProcessDef::default()
                .pid(10)
                .ppid(1)
                .command(StrId(1))
                .rank(Some(0))
                .local_rank(Some(0))
                .world_size(Some(2))
                .host(StrId(2))
                .name(StrId(1)),
        ),
        Record::Thread(ThreadDef::default().pid(10).tid(11).name(StrId(2))),
        Record::Device(
            DeviceDef::default()
                .id(DeviceId(1))
                .vendor(Vendor(0x42))
                .index(3)
                .name(StrId(1))
                .uuid([7; 16])
                .compute_units(132)
                .memory_bytes(80 << 30)
                .kind(DeviceKind::Accelerator)
                .native_id(big)
                .parent(DeviceId(5))
                .arch(StrId(2))
                .vendor_name(StrId(1)),
        ),
        Record::Stream(
            StreamDef::default()
                .id(StreamId(2))
                .device(DeviceId(1))
                .pid(10)
                .native_id(big)
                .name(StrId(1))
                .kind(QueueKind::SyclQueue)
                .parent(StreamId(1)),
        ),
        Record::Module(ModuleDef::default().id(ModuleId(1)).path(StrId(1)).build_id(vec![1, 2, 3, 0xff])),
        Record::Frame(
            FrameDef::default()
                .id(FrameId(1))
                .kind(FrameKind::Virtual)
                .module(ModuleId(1))
                .address(0x7fff_1234_5678)
                .pid(10)
                .name(StrId(1))
                .inlined(vec![StrId(1), StrId(2), StrId(300)])
                .file(StrId(2))
                .line(307)
                .start_line(290),
        ),
        Record::Stack(StackDef::new(StackId(4), (1..200).map(FrameId).collect())),
        Record::ClockDomain(
            ClockDomainDef::default()
                .domain(ClockDomain(3))
                .ticks_per_second(19_200_000)
                .valid_bits(48)
                .name(StrId(2)),
        ),
        Record::ApiCall(
            ApiCall::default()
                .pid(10)
                .tid(11)
                .start(big)
                .end(big + 3)
                .name(StrId(2))
                .correlation(corr(5))
                .result(-700)
                .external(Some(ExternalId { kind: 2, id: 99 }))
                .kind(ApiKind::Launch)
                .clock(ClockDomain(3)),
        ),
        Record::DeviceOp(op),
        Record::LaunchSite(
            LaunchSite::default()
                .pid(10)
                .tid(11)
                .time(big)
                .correlation(Correlation::new(0x142, 5))
                .api(StrId(2))
                .stack(StackId(4))
                .clock(ClockDomain(3))
                .recording(true),
        ),
        Record::CpuSample(
            CpuSample::default()
                .pid(10)
                .tid(11)
                .time(big)
                .kind(SampleKind::OffCpu)
                .weight(1_000_000)
                .stack(StackId(4))
                .clock(ClockDomain(3)),
        ),
        Record::Marker(annotation.clone().end(big)),
        Record::Range(annotation),
        Record::Counter(
            Counter::default()
                .pid(10)
                .device(DeviceId(1))
                .time(big)
                .name(StrId(1))
                .value(-2.5e9)
                .clock(ClockDomain(3)),
        ),
        Record::Loss(Loss::default().pid(10).time(big).cause(StrId(1)).count(12).clock(ClockDomain(3))),
        Record::ClockSync(ClockSync::default().domain(ClockDomain(3)).source_time(big).session_time(big + 1)),
        Record::Overhead(
            Overhead::default()
                .pid(10)
                .tid(11)
                .start(big)
                .end(big + 9)
                .kind(OverheadKind::BufferFlush)
                .name(StrId(1))
                .device(DeviceId(1))
                .clock(ClockDomain(3)),
        ),
        Record::Retired(
            Retirement::default()
                .pid(10)
                .correlation(Correlation { backend: backend::ROCM, id: big })
                .time(big + 2)
                .clock(ClockDomain(3)),
        ),
        Record::Window(
            CaptureWindow::default()
                .start(big + 3)
                .end(big + 900)
                .opener(WindowOpener::Nvtx)
                .pid(10)
                .clock(ClockDomain(3)),
        ),
        Record::DeviceSample(
            DeviceSample::default()
                .pid(10)
                .device(DeviceId(1))
                .start(big)
                .end(big + 100)
                .clock(ClockDomain(3))
                .kernel(StrId(1))
                .correlation(Some(Correlation { backend: backend::CUDA, id: big + 3 }))
                .code(u64::MAX - 7)
                .pc_offset(0x1f0)
                .stall(StrId(1))
                .count(big + 4)
                .file(StrId(1))
                .line(212)
                .instruction(StrId(1))
                .call_file(StrId(1))
                .call_line(45),
        ),
    ]
}

fn round_trip_through_c(exe: &Path, batch: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut child = Command::new(exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(batch).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "the C round trip failed: {}", String::from_utf8_lossy(&o.stderr));
    o.stdout
}

#[test]
fn the_c_reader_and_writer_reproduce_every_record_kind_byte_for_byte() {
    let records = every_record();
    let tags: std::collections::BTreeSet<u8> = records.iter().map(Record::tag).collect();
    let known: std::collections::BTreeSet<u8> = Record::tags().iter().map(|(t, _)| *t).collect();
    assert_eq!(tags, known, "every record kind of the model is in the test batch");
    let mut batch = Vec::new();
    for r in &records {
        codec::encode(r, &mut batch);
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("roundtrip");
    compile("cc", STRICT_C, &[c_test("roundtrip.c")], &exe);
    let back = round_trip_through_c(&exe, &batch);
    assert_eq!(codec::decode_all(&back).unwrap(), records, "decoded from what C wrote");
    assert_eq!(back, batch, "C re-encodes the records byte for byte");
    // Defaults too: a record with nothing set.
    let mut empty = Vec::new();
    codec::encode(&Record::DeviceOp(DeviceOp::default()), &mut empty);
    assert_eq!(round_trip_through_c(&exe, &empty), empty);
}

/// The top-level `name: value` pairs of a struct's `Debug` text (`Name { a: 1, b: [2, 3] }`).
fn debug_fields(text: &str) -> Vec<(String, String)> {
    let Some(open) = text.find('{') else { return vec![] };
    let body = &text[open + 1..text.rfind('}').unwrap()];
    let (mut fields, mut depth, mut quoted, mut escaped, mut start) = (Vec::new(), 0, false, false, 0);
    let chars: Vec<char> = body.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '(' | '[' | '{' if !quoted => depth += 1,
            ')' | ']' | '}' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                fields.push(chars[start..i].iter().collect::<String>());
                start = i + 1;
            }
            _ => {}
        }
    }
    fields.push(chars[start..].iter().collect());
    fields
        .iter()
        .filter_map(|f| f.split_once(':').map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned())))
        .collect()
}

/// Guards the header against the model gaining a record kind: the test batch holds every kind the
/// schema declares, so the round trip above fails until `records.h` writes and reads the new one.
#[test]
fn the_test_batch_holds_every_record_kind_of_the_schema() {
    let have: Vec<u8> = every_record().iter().map(Record::tag).collect();
    for (tag, name) in Record::tags() {
        assert!(
            have.contains(tag),
            "record kind {name} (tag {tag}) is not in every_record(): add it to sdk/include/xpuprof/records.h \
             (struct, writer, reader) and to the test batch"
        );
    }
}

/// Guards the header against the model growing: a field added to a record kind is left at its
/// default in [`every_record`] until someone sets it there, which makes the round trip above
/// carry it, which fails until `records.h` writes and reads it.
#[test]
fn the_test_batch_sets_every_field_of_every_record_kind() {
    for r in every_record() {
        let text = format!("{r:?}");
        let inner = &text[text.find('(').unwrap() + 1..text.rfind(')').unwrap()];
        let default = match &r {
            Record::Str(_) => format!("{:?}", StrDef::default()),
            Record::Process(_) => format!("{:?}", ProcessDef::default()),
            Record::Thread(_) => format!("{:?}", ThreadDef::default()),
            Record::Device(_) => format!("{:?}", DeviceDef::default()),
            Record::Stream(_) => format!("{:?}", StreamDef::default()),
            Record::Module(_) => format!("{:?}", ModuleDef::default()),
            Record::Frame(_) => format!("{:?}", FrameDef::default()),
            Record::Stack(_) => format!("{:?}", StackDef::default()),
            Record::ClockDomain(_) => format!("{:?}", ClockDomainDef::default()),
            Record::ApiCall(_) => format!("{:?}", ApiCall::default()),
            Record::DeviceOp(_) => format!("{:?}", DeviceOp::default()),
            Record::LaunchSite(_) => format!("{:?}", LaunchSite::default()),
            Record::CpuSample(_) => format!("{:?}", CpuSample::default()),
            Record::Marker(_) | Record::Range(_) => format!("{:?}", Annotation::default()),
            Record::Counter(_) => format!("{:?}", Counter::default()),
            Record::Loss(_) => format!("{:?}", Loss::default()),
            Record::ClockSync(_) => format!("{:?}", ClockSync::default()),
            Record::Overhead(_) => format!("{:?}", Overhead::default()),
            Record::Retired(_) => format!("{:?}", Retirement::default()),
            Record::Window(_) => format!("{:?}", CaptureWindow::default()),
            Record::DeviceSample(_) => format!("{:?}", DeviceSample::default()),
            other => panic!("a record kind the C header does not know: {other:?}; add it to records.h"),
        };
        let (set, unset) = (debug_fields(inner), debug_fields(&default));
        assert_eq!(
            set.iter().map(|f| &f.0).collect::<Vec<_>>(),
            unset.iter().map(|f| &f.0).collect::<Vec<_>>()
        );
        for ((name, value), (_, default)) in set.iter().zip(&unset) {
            assert_ne!(
                value, default,
                "`{name}` of {inner} is at its default in the test batch: a field the model gained? add it to \
                 sdk/include/xpuprof/records.h (struct, writer, reader) and set it in every_record()"
            );
        }
    }
}
