//! The rocprofiler-sdk path: the tool entry point, the library's function table (resolved from
//! the `librocprofiler-sdk` the process mapped, never linked), the services turned on, and the
//! callbacks: HIP API enter/exit (launch sites), code objects (kernel symbols), roctx, HIP stream
//! bindings, and the buffer of asynchronous records (forwarded raw).

use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::OnceLock;

use rocprofiler_sdk_sys::*;
use xpuprof_agent_kit::channel::Chunk;
use xpuprof_agent_kit::{stack, trampoline, wire};
use xpuprof_rocm_wire::{self as rocm_wire, marker_op, Api, Kernel, Marker, StreamUse};

use crate::config::StackMode;
use crate::{agent, launch_class, loader, start, Agent, Tracer};

/// The SDK as this process mapped it.
pub struct Sdk {
    lib: RocprofilerSdk,
    /// The library's file.
    pub path: String,
    buffer: OnceLock<rocprofiler_buffer_id_t>,
}

impl std::fmt::Debug for Sdk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sdk").field("path", &self.path).finish()
    }
}

/// A failed SDK call: which function, and the SDK's own words for the status.
fn check(lib: &RocprofilerSdk, what: &str, status: rocprofiler_status_t) -> Result<(), String> {
    if status == ROCPROFILER_STATUS_SUCCESS as rocprofiler_status_t {
        return Ok(());
    }
    let text = match &lib.rocprofiler_get_status_string {
        // SAFETY: the SDK returns a static string for any status value.
        Ok(f) => unsafe { f(status) },
        Err(_) => std::ptr::null(),
    };
    // SAFETY: null or the SDK's static NUL-terminated string.
    Err(unsafe { crate::call_failed(what, status, text) })
}

impl Sdk {
    /// Binds to the SDK file `path` (already mapped: `dlopen` returns the same library).
    fn load(path: &str) -> Result<Self, String> {
        // SAFETY: `path` is the rocprofiler-sdk library this process already mapped; loading it
        // again runs no initialiser.
        let lib =
            unsafe { RocprofilerSdk::new(path) }.map_err(|e| format!("failed to bind to {path}: {e}"))?;
        let missing: Vec<&str> = [
            ("rocprofiler_get_version", lib.rocprofiler_get_version.is_ok()),
            ("rocprofiler_get_timestamp", lib.rocprofiler_get_timestamp.is_ok()),
            ("rocprofiler_create_context", lib.rocprofiler_create_context.is_ok()),
            ("rocprofiler_start_context", lib.rocprofiler_start_context.is_ok()),
            ("rocprofiler_create_buffer", lib.rocprofiler_create_buffer.is_ok()),
            ("rocprofiler_flush_buffer", lib.rocprofiler_flush_buffer.is_ok()),
            (
                "rocprofiler_configure_callback_tracing_service",
                lib.rocprofiler_configure_callback_tracing_service.is_ok(),
            ),
            (
                "rocprofiler_configure_buffer_tracing_service",
                lib.rocprofiler_configure_buffer_tracing_service.is_ok(),
            ),
            (
                "rocprofiler_query_callback_tracing_kind_operation_name",
                lib.rocprofiler_query_callback_tracing_kind_operation_name.is_ok(),
            ),
        ]
        .into_iter()
        .filter_map(|(n, ok)| (!ok).then_some(n))
        .collect();
        if !missing.is_empty() {
            return Err(format!(
                "{path} lacks {}: it is not a rocprofiler-sdk 1.x library",
                missing.join(", ")
            ));
        }
        Ok(Self { lib, path: path.to_owned(), buffer: OnceLock::new() })
    }

    fn version(&self) -> Result<(u32, u32, u32), String> {
        let (mut a, mut b, mut c) = (0, 0, 0);
        // SAFETY: three valid out-pointers.
        check(&self.lib, "rocprofiler_get_version", unsafe {
            self.lib.rocprofiler_get_version(&mut a, &mut b, &mut c)
        })?;
        Ok((a, b, c))
    }

    /// The SDK's clock now (CLOCK_BOOTTIME nanoseconds).
    pub(crate) fn timestamp(&self) -> Option<u64> {
        let mut t = 0;
        // SAFETY: a valid out-pointer.
        (unsafe { self.lib.rocprofiler_get_timestamp(&mut t) } == 0).then_some(t)
    }

    /// Delivers the buffer's records now (the buffer callback runs before this returns).
    pub(crate) fn flush(&self) {
        if let Some(b) = self.buffer.get() {
            // SAFETY: a buffer this agent created.
            let _ = unsafe { self.lib.rocprofiler_flush_buffer(*b) };
        }
    }

    /// The HIP runtime API operations that get a launch site, and their names.
    fn launch_ops(&self) -> Vec<(i32, String)> {
        let mut ops = Vec::new();
        for op in 0..8192 {
            let (mut name, mut len): (*const c_char, u64) = (std::ptr::null(), 0);
            // SAFETY: valid out-pointers; the SDK answers an unknown operation with an error.
            let st = unsafe {
                self.lib.rocprofiler_query_callback_tracing_kind_operation_name(
                    ROCPROFILER_CALLBACK_TRACING_HIP_RUNTIME_API as i32,
                    op,
                    &mut name,
                    &mut len,
                )
            };
            if st != 0 || name.is_null() {
                break;
            }
            // SAFETY: the SDK returns a static NUL-terminated name.
            let n = unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned();
            if launch_class::is_launch_api(&n) {
                ops.push((op, n));
            }
        }
        ops
    }

    fn callback_service(&self, ctx: rocprofiler_context_id_t, kind: u32, ops: &[i32]) -> Result<(), String> {
        // SAFETY: `ops` outlives the call (the SDK copies it); the callback is a static function.
        let st = unsafe {
            self.lib.rocprofiler_configure_callback_tracing_service(
                ctx,
                kind as i32,
                ops.as_ptr(),
                ops.len(),
                Some(on_callback),
                std::ptr::null_mut(),
            )
        };
        check(&self.lib, &format!("rocprofiler_configure_callback_tracing_service (kind {kind})"), st)
    }

    fn buffer_service(
        &self,
        ctx: rocprofiler_context_id_t,
        kind: u32,
        buf: rocprofiler_buffer_id_t,
    ) -> Result<(), String> {
        // SAFETY: no operation filter (all operations of the kind).
        let st = unsafe {
            self.lib.rocprofiler_configure_buffer_tracing_service(ctx, kind as i32, std::ptr::null(), 0, buf)
        };
        check(&self.lib, &format!("rocprofiler_configure_buffer_tracing_service (kind {kind})"), st)
    }

    fn agents(&self) -> Vec<rocm_wire::Agent> {
        let Ok(query) = &self.lib.rocprofiler_query_available_agents else { return Vec::new() };
        let mut out: Vec<rocm_wire::Agent> = Vec::new();
        // SAFETY: `out` outlives the synchronous query; our struct is a prefix of the SDK's.
        unsafe {
            query(
                ROCPROFILER_AGENT_INFO_VERSION_0 as i32,
                Some(on_agents),
                std::mem::size_of::<rocprofiler_agent_v0_t>(),
                &mut out as *mut Vec<rocm_wire::Agent> as *mut c_void,
            )
        };
        out
    }
}

/// Called by the SDK with the agents: copies what the host needs.
///
/// # Safety
/// `agents` holds `n` pointers to `rocprofiler_agent_v0_t`; `data` is the `Vec` of [`Sdk::agents`].
unsafe extern "C" fn on_agents(
    _version: i32,
    agents: *mut *const c_void,
    n: usize,
    data: *mut c_void,
) -> i32 {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: per this function's contract.
        let out = unsafe { &mut *(data as *mut Vec<rocm_wire::Agent>) };
        for i in 0..n {
            // SAFETY: `i < n` pointers the SDK owns for the duration of the call.
            let p = unsafe { *agents.add(i) } as *const rocprofiler_agent_v0_t;
            if p.is_null() {
                continue;
            }
            // SAFETY: a valid agent struct whose prefix is ours.
            let a = unsafe { &*p };
            out.push(rocm_wire::Agent {
                handle: a.id.handle,
                kind: a.type_ as u32,
                node: a.node_id,
                index: a.logical_node_type_id,
                cus: a.cu_count,
                memory: a.local_mem_size,
                arch: text(a.name),
                product: text(a.product_name),
            });
        }
    }));
    0
}

fn text(p: *const c_char) -> String {
    // SAFETY: the SDK's strings are null or NUL-terminated and live as long as the SDK.
    unsafe { crate::c_text(p) }
}

/// The configure result handed to the SDK (it keeps the pointer).
struct ConfigureResult(rocprofiler_tool_configure_result_t);
// SAFETY: the struct holds function pointers and a null tool_data; it is never written after
// creation.
unsafe impl Sync for ConfigureResult {}
// SAFETY: as above.
unsafe impl Send for ConfigureResult {}

static RESULT: OnceLock<ConfigureResult> = OnceLock::new();

/// The tool entry point rocprofiler-sdk looks up in every tool library: accepts to be
/// configured when the host plugin prepared this process, declines (null) otherwise.
///
/// # Safety
/// Called by rocprofiler-sdk with a valid `client_id` (or null).
#[no_mangle]
pub unsafe extern "C" fn rocprofiler_configure(
    _version: u32,
    _runtime_version: *const c_char,
    priority: u32,
    client_id: *mut rocprofiler_client_id_t,
) -> *mut rocprofiler_tool_configure_result_t {
    let ok = std::panic::catch_unwind(|| {
        // A second copy of this tool (the library found twice) stays out.
        if priority > 0 && RESULT.get().is_some() {
            return false;
        }
        match start::config() {
            Ok(c) => c.opts.api != crate::config::ApiChoice::Roctracer,
            Err(e) => {
                crate::say(&e);
                false
            }
        }
    })
    .unwrap_or(false);
    if !ok {
        return std::ptr::null_mut();
    }
    if !client_id.is_null() {
        // SAFETY: the SDK passes a valid client id whose name the tool may set.
        unsafe { (*client_id).name = c"xpuprof".as_ptr() };
    }
    let r = RESULT.get_or_init(|| {
        ConfigureResult(rocprofiler_tool_configure_result_t {
            size: std::mem::size_of::<rocprofiler_tool_configure_result_t>(),
            initialize: Some(tool_init),
            finalize: Some(tool_fini),
            tool_data: std::ptr::null_mut(),
        })
    });
    &r.0 as *const rocprofiler_tool_configure_result_t as *mut rocprofiler_tool_configure_result_t
}

/// The SDK initializes the tool: start the agent and turn on the services.
unsafe extern "C" fn tool_init(_fini: rocprofiler_client_finalize_t, _data: *mut c_void) -> c_int {
    match std::panic::catch_unwind(init) {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            crate::say(&format!("{e}; this process is not traced"));
            -1
        }
        Err(_) => -1,
    }
}

/// The SDK finalizes the tool (at exit): flush and say goodbye.
unsafe extern "C" fn tool_fini(_data: *mut c_void) {
    if let Some(a) = agent() {
        crate::finish::finish(a);
    }
}

fn init() -> Result<(), String> {
    let config = start::config()?;
    let Some(path) = loader::mapped("librocprofiler-sdk.so") else {
        let e =
            "rocprofiler_configure was called but no librocprofiler-sdk is mapped in this process".to_owned();
        start::refuse(&config, &e);
        return Err(e);
    };
    let sdk = match Sdk::load(&path).and_then(|s| s.version().map(|v| (s, v))) {
        Ok(x) => x,
        Err(e) => {
            start::refuse(&config, &e);
            return Err(e);
        }
    };
    let (sdk, version) = sdk;
    if version.0 < 1 {
        let e = format!(
            "{path} is rocprofiler-sdk {}.{}.{}: xpuprof reads the 1.x record layouts (ROCm 7.0 or newer); \
             on ROCm 6.x set [source.rocm] api = \"roctracer\"",
            version.0, version.1, version.2
        );
        start::refuse(&config, &e);
        return Err(e);
    }
    let a = start::start(config, Tracer::Sdk(sdk), Api::RocprofilerSdk, version, &path)?;
    if let Err(e) = enable(a) {
        start::fail_after_start(a, &e);
        return Err(e);
    }
    Ok(())
}

fn enable(a: &Agent) -> Result<(), String> {
    let Tracer::Sdk(s) = &a.tracer else { return Err("not the rocprofiler-sdk path".into()) };
    let mut ctx = rocprofiler_context_id_t::default();
    // SAFETY: a valid out-pointer.
    check(&s.lib, "rocprofiler_create_context", unsafe { s.lib.rocprofiler_create_context(&mut ctx) })?;
    let ops = s.launch_ops();
    let mut names = wire::names::Entries::default();
    for (op, n) in &ops {
        names.api_name(u32::from(rocm_wire::DOMAIN_SDK_HIP), *op as u32, n.as_bytes());
    }
    let mut m = Vec::new();
    names.put_api_names(&mut m);
    a.core.channel.push(Chunk::Bytes(m));
    if a.config.common.stacks != StackMode::Off && !ops.is_empty() {
        let ids: Vec<i32> = ops.iter().map(|(op, _)| *op).collect();
        s.callback_service(ctx, ROCPROFILER_CALLBACK_TRACING_HIP_RUNTIME_API, &ids)?;
    }
    s.callback_service(
        ctx,
        ROCPROFILER_CALLBACK_TRACING_CODE_OBJECT,
        &[ROCPROFILER_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER as i32],
    )?;
    if a.config.opts.markers {
        let ids = [
            ROCPROFILER_MARKER_CORE_API_ID_roctxMarkA as i32,
            ROCPROFILER_MARKER_CORE_API_ID_roctxRangePushA as i32,
            ROCPROFILER_MARKER_CORE_API_ID_roctxRangePop as i32,
        ];
        s.callback_service(ctx, ROCPROFILER_CALLBACK_TRACING_MARKER_CORE_API, &ids)?;
    }
    // HIP stream bindings arrived with SDK 1.0; without them work shows on its HSA queue.
    let _ = s.callback_service(
        ctx,
        ROCPROFILER_CALLBACK_TRACING_HIP_STREAM,
        &[ROCPROFILER_HIP_STREAM_SET as i32],
    );
    let mut buf = rocprofiler_buffer_id_t::default();
    let size = a.config.common.buffer_bytes;
    // SAFETY: a static callback and a valid out-pointer; DISCARD: the application never waits.
    let st = unsafe {
        s.lib.rocprofiler_create_buffer(
            ctx,
            size,
            size / 8 * 7,
            ROCPROFILER_BUFFER_POLICY_DISCARD as i32,
            Some(on_buffer),
            std::ptr::null_mut(),
            &mut buf,
        )
    };
    check(&s.lib, "rocprofiler_create_buffer", st)?;
    let _ = s.buffer.set(buf);
    let c = &a.config.opts;
    for (on, kind) in [
        (c.kernels, ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH),
        (c.copies, ROCPROFILER_BUFFER_TRACING_MEMORY_COPY),
        (c.memory, ROCPROFILER_BUFFER_TRACING_MEMORY_ALLOCATION),
        (c.scratch, ROCPROFILER_BUFFER_TRACING_SCRATCH_MEMORY),
        (true, ROCPROFILER_BUFFER_TRACING_CORRELATION_ID_RETIREMENT),
    ] {
        if on {
            s.buffer_service(ctx, kind, buf)?;
        }
    }
    let agents = s.agents();
    let mut m = Vec::new();
    rocm_wire::put_agents(&mut m, &agents);
    a.core.channel.push(Chunk::Bytes(m));
    // SAFETY: a context this agent created and configured.
    check(&s.lib, "rocprofiler_start_context", unsafe { s.lib.rocprofiler_start_context(ctx) })
}

/// Every callback service: HIP API enter/exit, code objects, roctx, HIP streams.
///
/// # Safety
/// Called by the SDK; `record.payload` points to the kind's data for the call's duration.
unsafe extern "C" fn on_callback(
    record: rocprofiler_callback_tracing_record_t,
    _user: *mut rocprofiler_user_data_t,
    _data: *mut c_void,
) {
    // First: the registers of this frame, where the launch stack walk starts.
    let regs = stack::registers();
    let Some(a) = agent() else { return };
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match record.kind as u32 {
        ROCPROFILER_CALLBACK_TRACING_HIP_RUNTIME_API => {
            let corr = record.correlation_id.internal;
            if record.phase == ROCPROFILER_CALLBACK_PHASE_ENTER as i32 {
                let outer = a.core.launches.enter(
                    &a.sites(),
                    rocm_wire::DOMAIN_SDK_HIP,
                    record.operation as u32,
                    corr as u32,
                    regs,
                );
                if let Some(start) = outer.filter(|_| a.config.common.stacks.trampoline()) {
                    trampoline::call(&start, xpuprof_sdk::model::backend::ROCM, corr);
                }
            } else {
                // SAFETY: the HIP API payload, valid during the callback.
                a.core.launches.exit(unsafe { hip_result(record.payload) } as u32);
            }
        }
        ROCPROFILER_CALLBACK_TRACING_CODE_OBJECT => {
            // SAFETY: the code-object payload of this operation, valid during the callback.
            unsafe { code_object(a, &record) }
        }
        ROCPROFILER_CALLBACK_TRACING_MARKER_CORE_API => {
            // SAFETY: the roctx payload, valid during the callback.
            unsafe { marker(a, &record) }
        }
        ROCPROFILER_CALLBACK_TRACING_HIP_STREAM => {
            // SAFETY: the HIP stream payload, valid during the callback.
            unsafe { stream(a, &record) }
        }
        _ => {}
    }));
}

/// The HIP API call's result: `retval` is the payload's last member, `size` bytes in.
///
/// # Safety
/// `payload` is null or a HIP API payload.
unsafe fn hip_result(payload: *mut c_void) -> i32 {
    if payload.is_null() {
        return 0;
    }
    // SAFETY: the payload starts with its size.
    let size =
        unsafe { (*(payload as *const rocprofiler_callback_tracing_hip_api_data_head_t)).size } as usize;
    let retval = std::mem::size_of::<rocprofiler_hip_api_retval_t>();
    if size < 8 + retval {
        return 0;
    }
    // SAFETY: `size` covers the retval union at its end; hipError_t is its first member.
    unsafe { (payload as *const u8).add(size - retval).cast::<i32>().read_unaligned() }
}

/// # Safety
/// `r.payload` is the code-object payload of `r.operation`.
unsafe fn code_object(a: &Agent, r: &rocprofiler_callback_tracing_record_t) {
    if r.operation != ROCPROFILER_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER as i32
        || r.phase != ROCPROFILER_CALLBACK_PHASE_ENTER as i32
        || r.payload.is_null()
    {
        return;
    }
    // SAFETY: per the contract.
    let k = unsafe {
        &*(r.payload as *const rocprofiler_callback_tracing_code_object_kernel_symbol_register_data_t)
    };
    let kernel = Kernel {
        kernel_id: k.kernel_id,
        lds: k.group_segment_size,
        scratch: k.private_segment_size,
        sgprs: k.sgpr_count,
        vgprs: k.arch_vgpr_count + k.accum_vgpr_count,
        name: text(k.kernel_name),
    };
    let mut m = Vec::new();
    rocm_wire::put_kernels(&mut m, &[kernel]);
    a.core.channel.push(Chunk::Bytes(m));
}

/// # Safety
/// `r.payload` is a roctx payload.
#[allow(non_upper_case_globals)] // AMD's roctx operation names
unsafe fn marker(a: &Agent, r: &rocprofiler_callback_tracing_record_t) {
    if r.phase != ROCPROFILER_CALLBACK_PHASE_ENTER as i32 || r.payload.is_null() {
        return;
    }
    let op = match r.operation as u32 {
        ROCPROFILER_MARKER_CORE_API_ID_roctxMarkA => marker_op::MARK,
        ROCPROFILER_MARKER_CORE_API_ID_roctxRangePushA => marker_op::PUSH,
        ROCPROFILER_MARKER_CORE_API_ID_roctxRangePop => marker_op::POP,
        _ => return,
    };
    let text = if op == marker_op::POP {
        String::new()
    } else {
        // SAFETY: mark and push carry their message first.
        text(unsafe { (*(r.payload as *const rocprofiler_callback_tracing_marker_api_data_head_t)).message })
    };
    let m = Marker { tid: r.thread_id as u32, op, time: xpuprof_sdk::clock::now_ns(), text };
    let mut body = Vec::new();
    rocm_wire::put_marker(&mut body, &m);
    let mut out = Vec::new();
    rocm_wire::finish_markers(&mut out, 1, &body);
    a.core.channel.push(Chunk::Bytes(out));
}

/// # Safety
/// `r.payload` is a HIP stream payload.
unsafe fn stream(a: &Agent, r: &rocprofiler_callback_tracing_record_t) {
    if r.operation != ROCPROFILER_HIP_STREAM_SET as i32
        || r.phase != ROCPROFILER_CALLBACK_PHASE_ENTER as i32
        || r.payload.is_null()
    {
        return;
    }
    // SAFETY: per the contract.
    let s = unsafe { &*(r.payload as *const rocprofiler_callback_tracing_hip_stream_data_t) };
    let mut m = Vec::new();
    rocm_wire::put_streams(
        &mut m,
        &[StreamUse { correlation: r.correlation_id.internal, stream: s.stream_id.handle }],
    );
    a.core.channel.push(Chunk::Bytes(m));
}

/// Largest record the agent forwards (a corrupt size is skipped, not copied).
const MAX_RECORD: usize = 4096;

/// The buffer callback: launch sites first, then a clock pair, the drop count, and the records
/// copied raw into one record message.
///
/// # Safety
/// Called by the SDK with `n` record headers valid for the call's duration.
unsafe extern "C" fn on_buffer(
    _ctx: rocprofiler_context_id_t,
    _buf: rocprofiler_buffer_id_t,
    headers: *mut *mut rocprofiler_record_header_t,
    n: usize,
    _data: *mut c_void,
    drop_count: u64,
) {
    let Some(a) = agent() else { return };
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        a.core.drain_launches();
        a.send_clock_pair();
        if drop_count > 0 {
            a.core.send_dropped(drop_count);
        }
        let mut recs: Vec<&[u8]> = Vec::with_capacity(n);
        for i in 0..n {
            // SAFETY: `i < n` headers, each null or valid.
            let h = unsafe { *headers.add(i) };
            if h.is_null() {
                continue;
            }
            // SAFETY: a valid header.
            let (hash, p) = unsafe { ((*h).__bindgen_anon_1.hash, (*h).payload) };
            if hash as u32 != ROCPROFILER_BUFFER_CATEGORY_TRACING || p.is_null() {
                continue;
            }
            // SAFETY: every tracing record starts with its size.
            let size = unsafe { *(p as *const u64) } as usize;
            if !(16..=MAX_RECORD).contains(&size) {
                continue;
            }
            // SAFETY: the record is `size` bytes, valid for the call.
            recs.push(unsafe { std::slice::from_raw_parts(p as *const u8, size) });
        }
        if !recs.is_empty() {
            let mut m = Vec::new();
            wire::records::put(&mut m, &recs);
            a.core.channel.push(Chunk::Bytes(m));
        }
    }));
}
