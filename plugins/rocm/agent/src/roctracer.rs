//! The roctracer path (ROCm before 6.2): ROCr loads this library through `HSA_TOOLS_LIB` and
//! calls [`OnLoad`]. When the runtime registers with `librocprofiler-register` instead (ROCm 6.2
//! and later, where the SDK path runs), the agent stays out of roctracer's way. Otherwise it
//! binds to `libroctracer64` (mapped, or found beside the ROCm runtime), takes HIP API
//! callbacks on launch-class calls (launch sites keyed by roctracer's correlation id), HIP
//! activity records (kernels, copies, barriers; forwarded raw with the kernel names they point
//! to) and roctx callbacks.

use std::ffi::CStr;
use std::os::raw::{c_char, c_void};
use std::sync::OnceLock;

use roctracer_sys::*;
use xpuprof_agent_kit::channel::Chunk;
use xpuprof_agent_kit::wire::names::Entries;
use xpuprof_agent_kit::{stack, trampoline, wire};
use xpuprof_rocm_wire::{self as rocm_wire, marker_op, Api, Marker};

use crate::config::{ApiChoice, StackMode};
use crate::{agent, launch_class, loader, start, Agent, Tracer};

/// roctracer as this process uses it.
pub struct Rt {
    lib: Roctracer,
    /// The library's file.
    pub path: String,
    pool: OnceLock<usize>,
    /// HIP activity (operation, kind) pairs whose names were sent.
    named: std::sync::Mutex<Vec<(u32, u32)>>,
}

impl std::fmt::Debug for Rt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rt").field("path", &self.path).finish()
    }
}

fn check(lib: &Roctracer, what: &str, status: roctracer_status_t) -> Result<(), String> {
    if status == ROCTRACER_STATUS_SUCCESS as roctracer_status_t {
        return Ok(());
    }
    let text = match &lib.roctracer_error_string {
        // SAFETY: roctracer returns its last error as a static string.
        Ok(f) => unsafe { f() },
        Err(_) => std::ptr::null(),
    };
    // SAFETY: null or roctracer's static NUL-terminated string.
    Err(unsafe { crate::call_failed(what, status, text) })
}

impl Rt {
    fn load(path: &str) -> Result<Self, String> {
        // SAFETY: a roctracer library of the process's ROCm.
        let lib = unsafe { Roctracer::new(path) }.map_err(|e| format!("failed to load {path}: {e}"))?;
        let needed = [
            lib.roctracer_version_major.is_ok(),
            lib.roctracer_op_string.is_ok(),
            lib.roctracer_enable_op_callback.is_ok(),
            lib.roctracer_open_pool_expl.is_ok(),
            lib.roctracer_enable_domain_activity_expl.is_ok(),
            lib.roctracer_flush_activity_expl.is_ok(),
            lib.roctracer_get_timestamp.is_ok(),
        ];
        if needed.contains(&false) {
            return Err(format!("{path} is not a roctracer 4.x library"));
        }
        Ok(Self {
            lib,
            path: path.to_owned(),
            pool: OnceLock::new(),
            named: std::sync::Mutex::new(Vec::new()),
        })
    }

    fn version(&self) -> (u32, u32, u32) {
        // SAFETY: plain getters.
        unsafe {
            (
                self.lib.roctracer_version_major(),
                self.lib.roctracer_version_minor.as_ref().map(|f| f()).unwrap_or(0),
                0,
            )
        }
    }

    /// roctracer's clock now (ROCr's system clock, nanoseconds).
    pub(crate) fn timestamp(&self) -> Option<u64> {
        let mut t = 0;
        // SAFETY: a valid out-pointer.
        (unsafe { self.lib.roctracer_get_timestamp(&mut t) } == 0).then_some(t)
    }

    /// Delivers the pool's records now.
    pub(crate) fn flush(&self) {
        if let Some(p) = self.pool.get() {
            // SAFETY: the pool this agent opened.
            let _ = unsafe { self.lib.roctracer_flush_activity_expl(*p as *mut c_void) };
        }
    }

    fn op_name(&self, domain: u32, op: u32) -> Option<String> {
        // SAFETY: roctracer answers unknown operations with null or "unknown".
        let p = unsafe { self.lib.roctracer_op_string(domain, op, 0) };
        // SAFETY: null or a static NUL-terminated name.
        let n = unsafe { crate::c_text(p) };
        (!n.is_empty() && n != "unknown").then_some(n)
    }
}

/// Called by ROCr for every library named in `HSA_TOOLS_LIB`. Returns true (loaded) whatever
/// happens: a tracing failure never stops the program.
///
/// # Safety
/// Called by ROCr once, with its API table (unused).
#[no_mangle]
pub unsafe extern "C" fn OnLoad(
    _table: *mut c_void,
    _runtime_version: u64,
    _failed_tool_count: u64,
    _failed_tool_names: *const *const c_char,
) -> bool {
    let _ = std::panic::catch_unwind(|| {
        let Ok(config) = start::config() else { return };
        let register = loader::mapped("librocprofiler-register.so").is_some();
        let go = match config.opts.api {
            ApiChoice::Roctracer => true,
            ApiChoice::RocprofilerSdk => false,
            ApiChoice::Auto => !register,
        };
        if go && agent().is_none() {
            if let Err(e) = init(config) {
                crate::say(&format!("{e}; this process is not traced"));
            }
        }
    });
    true
}

fn load() -> Result<Rt, String> {
    if let Some(p) = loader::mapped("libroctracer64.so") {
        return Rt::load(&p);
    }
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut last = String::new();
    for c in loader::ROCTRACER.candidates(&maps) {
        match Rt::load(&c.display().to_string()) {
            Ok(r) => return Ok(r),
            Err(e) => last = e,
        }
    }
    let dirs: Vec<String> =
        loader::ROCTRACER.searched_dirs(&maps).iter().map(|d| d.display().to_string()).collect();
    Err(format!(
        "failed to find libroctracer64 (looked in: {}){}; hint: {}",
        dirs.join(", "),
        if last.is_empty() { String::new() } else { format!("; last error: {last}") },
        loader::ROCTRACER.hint
    ))
}

fn init(config: crate::config::Config) -> Result<(), String> {
    let rt = match load() {
        Ok(r) => r,
        Err(e) => {
            start::refuse(&config, &e);
            return Err(e);
        }
    };
    let (version, path) = (rt.version(), rt.path.clone());
    let a = start::start(config, Tracer::Roctracer(rt), Api::Roctracer, version, &path)?;
    if let Err(e) = enable(a) {
        start::fail_after_start(a, &e);
        return Err(e);
    }
    Ok(())
}

fn enable(a: &Agent) -> Result<(), String> {
    let Tracer::Roctracer(r) = &a.tracer else { return Err("not the roctracer path".into()) };
    let mut names = Entries::default();
    for op in 0..4096 {
        let Some(n) = r.op_name(ACTIVITY_DOMAIN_HIP_API, op) else { continue };
        if !launch_class::is_launch_api(&n) {
            continue;
        }
        names.api_name(u32::from(rocm_wire::DOMAIN_ROCTRACER_HIP), op, n.as_bytes());
        if a.config.common.stacks != StackMode::Off {
            // SAFETY: a static callback.
            let st = unsafe {
                r.lib.roctracer_enable_op_callback(
                    ACTIVITY_DOMAIN_HIP_API,
                    op,
                    Some(on_api),
                    std::ptr::null_mut(),
                )
            };
            check(&r.lib, &format!("roctracer_enable_op_callback({n})"), st)?;
        }
    }
    let mut m = Vec::new();
    names.put_api_names(&mut m);
    a.core.channel.push(Chunk::Bytes(m));
    if a.config.opts.markers {
        for op in [ROCTX_API_ID_roctxMarkA, ROCTX_API_ID_roctxRangePushA, ROCTX_API_ID_roctxRangePop] {
            // SAFETY: a static callback.
            let st = unsafe {
                r.lib.roctracer_enable_op_callback(
                    ACTIVITY_DOMAIN_ROCTX,
                    op,
                    Some(on_roctx),
                    std::ptr::null_mut(),
                )
            };
            check(&r.lib, "roctracer_enable_op_callback(roctx)", st)?;
        }
    }
    let props = roctracer_properties_t {
        buffer_size: a.config.common.buffer_bytes,
        buffer_callback_fun: Some(on_buffer),
        ..Default::default()
    };
    let mut pool: *mut c_void = std::ptr::null_mut();
    // SAFETY: valid properties and out-pointer.
    check(&r.lib, "roctracer_open_pool_expl", unsafe { r.lib.roctracer_open_pool_expl(&props, &mut pool) })?;
    let _ = r.pool.set(pool as usize);
    // SAFETY: the pool just opened.
    let st = unsafe { r.lib.roctracer_enable_domain_activity_expl(ACTIVITY_DOMAIN_HIP_OPS, pool) };
    check(&r.lib, "roctracer_enable_domain_activity_expl(HIP_OPS)", st)
}

/// HIP API enter/exit.
///
/// # Safety
/// Called by roctracer; `data` points to the call's `hip_api_data_t`.
unsafe extern "C" fn on_api(_domain: u32, cid: u32, data: *const c_void, _arg: *mut c_void) {
    let regs = stack::registers();
    let Some(a) = agent() else { return };
    if data.is_null() {
        return;
    }
    // SAFETY: per the contract; the head is the first two fields of hip_api_data_t.
    let d = unsafe { &*(data as *const hip_api_data_head_t) };
    if d.phase == ACTIVITY_API_PHASE_ENTER {
        let outer = a.core.launches.enter(
            &a.sites(),
            rocm_wire::DOMAIN_ROCTRACER_HIP,
            cid,
            d.correlation_id as u32,
            regs,
        );
        if let Some(start) = outer.filter(|_| a.config.common.stacks.trampoline()) {
            trampoline::call(&start, xpuprof_sdk::model::backend::ROCM, d.correlation_id);
        }
    } else {
        a.core.launches.exit(0);
    }
}

/// roctx calls.
///
/// # Safety
/// Called by roctracer; `data` points to the call's roctx data (message first).
#[allow(non_upper_case_globals)] // AMD's roctx operation names
unsafe extern "C" fn on_roctx(_domain: u32, cid: u32, data: *const c_void, _arg: *mut c_void) {
    let Some(a) = agent() else { return };
    let op = match cid {
        ROCTX_API_ID_roctxMarkA => marker_op::MARK,
        ROCTX_API_ID_roctxRangePushA => marker_op::PUSH,
        ROCTX_API_ID_roctxRangePop => marker_op::POP,
        _ => return,
    };
    let text = if op == marker_op::POP || data.is_null() {
        String::new()
    } else {
        // SAFETY: mark and push carry their message first.
        let p = unsafe { (*(data as *const roctx_api_data_head_t)).message };
        // SAFETY: null or the application's NUL-terminated message, valid during the call.
        unsafe { crate::c_text(p) }
    };
    let m = Marker { tid: crate::gettid(), op, time: xpuprof_sdk::clock::now_ns(), text };
    let mut body = Vec::new();
    rocm_wire::put_marker(&mut body, &m);
    let mut out = Vec::new();
    rocm_wire::finish_markers(&mut out, 1, &body);
    a.core.channel.push(Chunk::Bytes(out));
}

/// A full or flushed pool: launch sites first, a clock pair, the kernel names the records point
/// to, then the records raw.
///
/// # Safety
/// Called by roctracer with `[begin, end)` holding whole activity records.
unsafe extern "C" fn on_buffer(begin: *const c_char, end: *const c_char, _arg: *mut c_void) {
    let Some(a) = agent() else { return };
    if begin.is_null() || end < begin {
        return;
    }
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        a.core.drain_launches();
        a.send_clock_pair();
        let size = std::mem::size_of::<activity_record_t>();
        // SAFETY: the pool's bytes, valid during the callback.
        let bytes =
            unsafe { std::slice::from_raw_parts(begin as *const u8, end.offset_from(begin) as usize) };
        let recs: Vec<&[u8]> = bytes.chunks_exact(size).collect();
        let mut strings = Entries::default();
        let mut m = Vec::new();
        let Tracer::Roctracer(rt) = &a.tracer else { return };
        for chunk in &recs {
            // SAFETY: a whole record.
            let r = unsafe { &*(chunk.as_ptr() as *const activity_record_t) };
            if r.domain != ACTIVITY_DOMAIN_HIP_OPS {
                continue;
            }
            name_activity(rt, r.op, r.kind, &mut m);
            if r.op != HIP_OP_ID_DISPATCH {
                continue;
            }
            // SAFETY: HIP dispatch records carry the kernel name.
            let p = unsafe { r.__bindgen_anon_3.kernel_name };
            if p.is_null() {
                continue;
            }
            // SAFETY: roctracer keeps kernel names alive for the process's life.
            let name = unsafe { CStr::from_ptr(p) }.to_bytes();
            strings.string(p as u64, name);
        }
        strings.put_strings(&mut m);
        if !recs.is_empty() {
            wire::records::put(&mut m, &recs);
        }
        if !m.is_empty() {
            a.core.channel.push(Chunk::Bytes(m));
        }
    }));
}

/// Sends the name of HIP activity `(op, kind)` the first time a record has it (a copy's name
/// says its direction): `MSG_API_NAMES` in domain [`rocm_wire::DOMAIN_ROCTRACER_OPS`] + `op`,
/// id `kind`.
fn name_activity(rt: &Rt, op: u32, kind: u32, out: &mut Vec<u8>) {
    let Ok(mut named) = rt.named.lock() else { return };
    if named.contains(&(op, kind)) {
        return;
    }
    named.push((op, kind));
    // SAFETY: roctracer names any (domain, op, kind).
    let p = unsafe { rt.lib.roctracer_op_string(ACTIVITY_DOMAIN_HIP_OPS, op, kind) };
    if p.is_null() {
        return;
    }
    // SAFETY: a static NUL-terminated name.
    let n = unsafe { CStr::from_ptr(p) }.to_bytes();
    let domain = u32::from(rocm_wire::DOMAIN_ROCTRACER_OPS) + op;
    let mut names = Entries::default();
    names.api_name(domain, kind, n);
    names.put_api_names(out);
}
