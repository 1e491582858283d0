//! The kit's stack walk on a real stack through C code built without frame pointers
//! (`sdk/unwind/tests/fixtures/deep.c`, `-O2 -fomit-frame-pointer`, loaded with `dlopen`): the
//! launch stack shows the known 5-deep path and reaches the thread's root.

use std::cell::RefCell;
use std::ffi::{c_void, CStr};
use std::path::Path;

use xpuprof_agent_kit::stack;

type DeepEntry = unsafe extern "C" fn(extern "C" fn(u64) -> u64) -> u64;

thread_local! {
    static WALKED: RefCell<(Vec<u64>, Option<stack::Walk>)> = const { RefCell::new((Vec::new(), None)) };
}

extern "C" fn on_launch(x: u64) -> u64 {
    let mut out = [0u64; 128];
    let (w, _) = stack::walk(stack::registers(), stack::thread_bounds(), &[], &mut out);
    WALKED.with(|c| *c.borrow_mut() = (out[..w.len].to_vec(), Some(w)));
    x
}

fn name(addr: u64) -> String {
    // SAFETY: dladdr only reads the loader's tables and writes `info`.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::dladdr(addr as *const c_void, &mut info) } == 0 || info.dli_sname.is_null() {
        return format!("{addr:#x}");
    }
    // SAFETY: a NUL-terminated name valid while the object stays loaded.
    unsafe { CStr::from_ptr(info.dli_sname) }.to_string_lossy().into_owned()
}

#[test]
fn the_walk_goes_through_code_without_frame_pointers_to_the_root() {
    let dir = std::env::temp_dir().join(format!("xpuprof-kit-stack-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let lib = dir.join("libdeep.so");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../unwind/tests/fixtures/deep.c");
    let st = std::process::Command::new("cc")
        .args(["-O2", "-fomit-frame-pointer", "-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&src)
        .status()
        .expect("failed to run cc: a C compiler is needed to build the fixture");
    assert!(st.success(), "cc failed on {}", src.display());
    // SAFETY: the fixture has no initialisers; `deep_entry` has the declared signature.
    let lib = unsafe { libloading::Library::new(&lib) }.expect("load the fixture");
    // SAFETY: as above.
    let entry: libloading::Symbol<'_, DeepEntry> = unsafe { lib.get(b"deep_entry") }.unwrap();
    // SAFETY: `on_launch` has the callback signature the fixture expects.
    unsafe { entry(on_launch) };
    let (frames, walk) = WALKED.with(|c| c.borrow().clone());
    let names: Vec<String> =
        frames.iter().enumerate().map(|(i, &a)| name(if i == 0 { a } else { a - 1 })).collect();
    let path = ["deep_level5", "deep_level4", "deep_level3", "deep_level2", "deep_level1", "deep_entry"];
    assert!(
        names.windows(path.len()).any(|w| w.iter().zip(path).all(|(a, b)| a == b)),
        "the 5-deep path is not in the stack: {names:?}"
    );
    assert_eq!(walk.unwrap().end, xpuprof_unwind::End::Root, "{names:?}");
    std::mem::forget(lib);
}
