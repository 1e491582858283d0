//! The layout table against CPython's own headers: a C probe compiled against each installed
//! interpreter's headers prints the offsets, which must equal the table's.

use std::collections::HashMap;
use std::process::Command;

use xpuprof_python::cpython_offsets::{self, Frames, GilAt, Layout, Version};

use crate::interpreters::{self, eval, fixture};

fn probe(python: &std::path::PathBuf) -> HashMap<String, u64> {
    let include = eval(python, "import sysconfig; print(sysconfig.get_paths()['include'])");
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("offsets");
    let cc = Command::new("gcc")
        .arg(format!("-I{include}"))
        .arg(format!("-I{include}/internal"))
        .arg(fixture("offsets.c"))
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("gcc is installed (scripts/install-deps.sh)");
    assert!(cc.status.success(), "probe for {}: {}", python.display(), String::from_utf8_lossy(&cc.stderr));
    let out = Command::new(&exe).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.parse().unwrap()))
        .collect()
}

fn table(l: &Layout) -> HashMap<String, u64> {
    let mut t: HashMap<String, u64> = [
        ("runtime.interpreters_head", l.runtime_interpreters_head),
        ("interp.threads_head", l.interp_threads_head),
        ("interp.next", l.interp_next),
        ("tstate.next", l.tstate_next),
        ("tstate.thread_id", l.tstate_thread_id),
        ("tstate.frame", l.tstate_frame),
        ("code.filename", l.code_filename),
        ("code.name", l.code_name),
        ("code.linetable", l.code_linetable),
        ("code.firstlineno", l.code_firstlineno),
        ("bytes.size", cpython_offsets::VAR_SIZE),
        ("bytes.data", cpython_offsets::BYTES_DATA),
        ("unicode.ascii_size", l.unicode_ascii_size),
        ("unicode.compact_size", l.unicode_compact_size),
        ("unicode.length", cpython_offsets::UNICODE_LENGTH),
        ("unicode.state", cpython_offsets::UNICODE_STATE),
        ("object.type", cpython_offsets::OBJECT_TYPE),
        ("gil.last_holder", cpython_offsets::GIL_LAST_HOLDER),
        ("gil.locked", cpython_offsets::GIL_LOCKED),
        ("gil.switch_number", cpython_offsets::GIL_SWITCH_NUMBER),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let opt = [
        ("tstate.native_thread_id", l.tstate_native_thread_id),
        ("cframe.current_frame", l.cframe_current_frame),
        ("cframe.previous", l.cframe_previous),
        ("code.qualname", l.code_qualname),
        ("code.code_adaptive", l.code_instructions),
        ("code.version", l.code_version),
        ("tstate.datastack_chunk", l.tstate_datastack_chunk),
        ("chunk.previous", l.tstate_datastack_chunk.map(|_| cpython_offsets::CHUNK_PREVIOUS)),
        ("chunk.size", l.tstate_datastack_chunk.map(|_| cpython_offsets::CHUNK_SIZE)),
    ];
    t.extend(opt.into_iter().filter_map(|(k, v)| Some((k.to_owned(), v?))));
    let gil = match l.gil {
        GilAt::Runtime(at) => ("runtime.ceval_gil", at),
        GilAt::Interpreter(at) => ("interp.ceval_gil", at),
    };
    t.insert(gil.0.to_owned(), gil.1);
    match l.frames {
        Frames::Objects { back, code, lasti, .. } => {
            t.extend(
                [("frame.back", back), ("frame.code", code), ("frame.lasti", lasti)]
                    .map(|(k, v)| (k.to_owned(), v)),
            );
        }
        Frames::Interpreter { code, previous, instr, owner, is_entry } => {
            let f = [
                ("iframe.code", code),
                ("iframe.previous", previous),
                ("iframe.instr", instr),
                ("iframe.owner", owner),
            ];
            t.extend(f.map(|(k, v)| (k.to_owned(), v)));
            if let Some(e) = is_entry {
                t.insert("iframe.is_entry".into(), e);
            }
        }
    }
    t
}

#[test]
fn the_table_matches_cpython_headers_of_every_installed_interpreter() {
    let mut checked = Vec::new();
    for python in interpreters::all() {
        let v = Version::parse(&eval(&python, "import sys; print(sys.version)")).unwrap();
        let l = Layout::of(v).unwrap_or_else(|| panic!("no layout for {v}"));
        let mut want = table(l);
        let got = probe(&python);
        want.retain(|k, _| got.contains_key(k) || k.starts_with("bytes") || k.starts_with("unicode.l"));
        for (k, v) in &got {
            assert_eq!(want.get(k), Some(v), "{} ({v}): {k}", python.display());
        }
        checked.push(v.to_string());
    }
    eprintln!("layouts checked against the headers of: {checked:?}");
    assert!(checked.contains(&"3.11".to_owned()), "{checked:?}");
}
