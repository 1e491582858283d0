//! The PC sampling calls of CUPTI (`cupti_pcsampling.h`), each status turned into a `Result`
//! through [`Lib::check`], and the sample buffers CUPTI fills ([`PcBuffer`]).

use std::os::raw::c_char;

use cupti_sys::CUptiResult;

use crate::sys::{c_str, ffi, CuptiError, Lib};

type Attr = ffi::CUpti_PCSamplingConfigurationInfo;
type AttrType = ffi::CUpti_PCSamplingConfigurationAttributeType::Type;

/// Calls `$name` of the loaded table with the given parameter struct and checks its result.
macro_rules! pc_call {
    ($lib:expr, $name:ident, $($arg:expr),+) => {{
        match &$lib.api.$name {
            // SAFETY: the arguments are a fully initialised parameter struct of this call with
            // its `size` set, or a context and an out-pointer (each wrapper below builds them),
            // and the function pointer comes from libcupti.
            Ok(f) => $lib.check(stringify!($name), unsafe { f($($arg),+) }),
            Err(_) => Err(CuptiError {
                call: stringify!($name),
                code: CUptiResult::CUPTI_ERROR_NOT_SUPPORTED,
                text: format!("{} is missing from {}", stringify!($name), $lib.path),
            }),
        }
    }};
}

/// `cuptiPCSamplingEnable(ctx)`.
pub fn enable(lib: &Lib, ctx: ffi::CUcontext) -> Result<(), CuptiError> {
    let mut p = ffi::CUpti_PCSamplingEnableParams {
        size: std::mem::size_of::<ffi::CUpti_PCSamplingEnableParams>(),
        ctx,
        ..Default::default()
    };
    pc_call!(lib, cuptiPCSamplingEnable, &mut p)
}

/// `cuptiPCSamplingDisable(ctx)`: CUPTI writes what it still holds into the configured buffer.
pub fn disable(lib: &Lib, ctx: ffi::CUcontext) -> Result<(), CuptiError> {
    let mut p = ffi::CUpti_PCSamplingDisableParams {
        size: std::mem::size_of::<ffi::CUpti_PCSamplingDisableParams>(),
        ctx,
        ..Default::default()
    };
    pc_call!(lib, cuptiPCSamplingDisable, &mut p)
}

/// The device's stall reasons: `(index, name)` from `cuptiPCSamplingGetNumStallReasons` and
/// `cuptiPCSamplingGetStallReasons`.
pub fn stall_reasons(lib: &Lib, ctx: ffi::CUcontext) -> Result<Vec<(u32, String)>, CuptiError> {
    let mut n = 0usize;
    let mut p = ffi::CUpti_PCSamplingGetNumStallReasonsParams {
        size: std::mem::size_of::<ffi::CUpti_PCSamplingGetNumStallReasonsParams>(),
        ctx,
        numStallReasons: &mut n,
        ..Default::default()
    };
    pc_call!(lib, cuptiPCSamplingGetNumStallReasons, &mut p)?;
    let size = ffi::CUPTI_STALL_REASON_STRING_SIZE as usize;
    let mut names: Vec<Vec<c_char>> = (0..n).map(|_| vec![0; size]).collect();
    let mut ptrs: Vec<*mut c_char> = names.iter_mut().map(|v| v.as_mut_ptr()).collect();
    let mut index = vec![0u32; n];
    let mut p = ffi::CUpti_PCSamplingGetStallReasonsParams {
        size: std::mem::size_of::<ffi::CUpti_PCSamplingGetStallReasonsParams>(),
        ctx,
        numStallReasons: n,
        stallReasonIndex: index.as_mut_ptr(),
        stallReasons: ptrs.as_mut_ptr(),
        ..Default::default()
    };
    pc_call!(lib, cuptiPCSamplingGetStallReasons, &mut p)?;
    Ok(index
        .iter()
        .zip(&mut names)
        .map(|(&i, name)| {
            if let Some(last) = name.last_mut() {
                *last = 0;
            }
            // SAFETY: `name` is a NUL-terminated buffer (its last byte was just set to 0).
            (i, String::from_utf8_lossy(unsafe { c_str(name.as_ptr()) }).into_owned())
        })
        .collect())
}

fn attr(ty: AttrType) -> Attr {
    // SAFETY: the struct is plain data (an enum, a status and a union of integers/pointers);
    // all zero is a valid value of each.
    let mut a: Attr = unsafe { std::mem::zeroed() };
    a.attributeType = ty;
    a
}

/// What [`configure`] sets.
#[derive(Debug)]
pub struct Settings<'a> {
    /// Sampling period exponent (2^N cycles), `None`: CUPTI's default for the device.
    pub period: Option<u32>,
    /// The stall reasons to collect (all the device reports).
    pub reasons: &'a mut [u32],
    /// CUPTI's software buffer for decoded PCs, bytes (`None`: its default).
    pub scratch_bytes: Option<usize>,
}

/// `cuptiPCSamplingSetConfigurationAttribute`: continuous collection of `s.reasons` at
/// `s.period`, into `buffer` when CUPTI flushes on its own (module unload, disable).
///
/// Returns which attribute CUPTI refused, if one was, in the error's text.
pub fn configure(
    lib: &Lib,
    ctx: ffi::CUcontext,
    s: Settings<'_>,
    buffer: &mut PcBuffer,
) -> Result<(), CuptiError> {
    use ffi::CUpti_PCSamplingConfigurationAttributeType as T;
    let mut attrs = Vec::with_capacity(5);
    if let Some(period) = s.period {
        let mut a = attr(T::CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD);
        a.attributeData.samplingPeriodData.samplingPeriod = period;
        attrs.push(a);
    }
    let mut a = attr(T::CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON);
    a.attributeData.stallReasonData.stallReasonCount = s.reasons.len();
    a.attributeData.stallReasonData.pStallReasonIndex = s.reasons.as_mut_ptr();
    attrs.push(a);
    if let Some(bytes) = s.scratch_bytes {
        let mut a = attr(T::CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE);
        a.attributeData.scratchBufferSizeData.scratchBufferSize = bytes;
        attrs.push(a);
    }
    let mut a = attr(T::CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE);
    a.attributeData.collectionModeData.collectionMode =
        ffi::CUpti_PCSamplingCollectionMode::CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
    attrs.push(a);
    let mut a = attr(T::CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER);
    a.attributeData.samplingDataBufferData.samplingDataBuffer = buffer.raw().cast();
    attrs.push(a);
    let mut p = ffi::CUpti_PCSamplingConfigurationInfoParams {
        size: std::mem::size_of::<ffi::CUpti_PCSamplingConfigurationInfoParams>(),
        ctx,
        numAttributes: attrs.len(),
        pPCSamplingConfigurationInfo: attrs.as_mut_ptr(),
        ..Default::default()
    };
    pc_call!(lib, cuptiPCSamplingSetConfigurationAttribute, &mut p).map_err(|mut e| {
        let refused: Vec<String> = attrs
            .iter()
            .filter(|a| a.attributeStatus != CUptiResult::CUPTI_SUCCESS)
            .map(|a| format!("attribute {} (status {})", a.attributeType, a.attributeStatus))
            .collect();
        if !refused.is_empty() {
            e.text = format!("{}; refused: {}", e.text, refused.join(", "));
        }
        e
    })
}

/// The sampling period configured on `ctx` (N of 2^N cycles: CUPTI's default when none was
/// set), from `cuptiPCSamplingGetConfigurationAttribute`.
pub fn sampling_period(lib: &Lib, ctx: ffi::CUcontext) -> Result<u32, CuptiError> {
    use ffi::CUpti_PCSamplingConfigurationAttributeType as T;
    let mut a = attr(T::CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD);
    let mut p = ffi::CUpti_PCSamplingConfigurationInfoParams {
        size: std::mem::size_of::<ffi::CUpti_PCSamplingConfigurationInfoParams>(),
        ctx,
        numAttributes: 1,
        pPCSamplingConfigurationInfo: &mut a,
        ..Default::default()
    };
    pc_call!(lib, cuptiPCSamplingGetConfigurationAttribute, &mut p)?;
    // SAFETY: CUPTI filled the sampling period member of the union it was asked for.
    Ok(unsafe { a.attributeData.samplingPeriodData.samplingPeriod })
}

/// `cuptiPCSamplingGetData(ctx)` into `buffer` (its previous content is replaced).
pub fn get_data(lib: &Lib, ctx: ffi::CUcontext, buffer: &mut PcBuffer) -> Result<(), CuptiError> {
    let mut p = ffi::CUpti_PCSamplingGetDataParams {
        size: std::mem::size_of::<ffi::CUpti_PCSamplingGetDataParams>(),
        ctx,
        pcSamplingData: buffer.raw().cast(),
        ..Default::default()
    };
    pc_call!(lib, cuptiPCSamplingGetData, &mut p)
}

/// `cuptiGetCubinCrc`: the CRC CUPTI's samples name `cubin` by.
pub fn cubin_crc(lib: &Lib, cubin: &[u8]) -> Result<u64, CuptiError> {
    let mut p = ffi::CUpti_GetCubinCrcParams {
        size: std::mem::size_of::<ffi::CUpti_GetCubinCrcParams>(),
        cubinSize: cubin.len(),
        cubin: cubin.as_ptr().cast(),
        cubinCrc: 0,
    };
    pc_call!(lib, cuptiGetCubinCrc, &mut p)?;
    Ok(p.cubinCrc)
}

/// `cuptiGetDeviceId(ctx)`.
pub fn device_id(lib: &Lib, ctx: ffi::CUcontext) -> Result<u32, CuptiError> {
    let mut id = 0u32;
    pc_call!(lib, cuptiGetDeviceId, ctx, &mut id).map(|()| id)
}

/// `cuptiGetContextId(ctx)`.
pub fn context_id(lib: &Lib, ctx: ffi::CUcontext) -> Result<u32, CuptiError> {
    let mut id = 0u32;
    pc_call!(lib, cuptiGetContextId, ctx, &mut id).map(|()| id)
}

/// One PC of a [`PcBuffer`], read out of CUPTI's struct.
#[derive(Debug, Clone, Copy)]
pub struct Pc<'a> {
    /// CRC of the cubin ([`cubin_crc`]).
    pub cubin_crc: u64,
    /// Offset of the instruction from the start of its function.
    pub pc_offset: u64,
    /// The function's index in the cubin.
    pub function_index: u32,
    /// The kernel launch's correlation id (0: not given).
    pub correlation: u32,
    /// The function's (mangled) name.
    pub function: &'a [u8],
    /// `(stall reason index, samples)`.
    pub reasons: &'a [ffi::CUpti_PCSamplingStallReason],
}

/// A `CUpti_PCSamplingData` with room for `pcs` PCs of `reasons` stall reasons each, owned here
/// and handed to CUPTI to fill (boxed: CUPTI keeps the configured one's address).
pub struct PcBuffer {
    data: Box<ffi::CUpti_PCSamplingData>,
    pcs: Vec<ffi::CUpti_PCSamplingPCData>,
    _reasons: Vec<Vec<ffi::CUpti_PCSamplingStallReason>>,
}

// SAFETY: the buffer's pointers all point into memory it owns; CUPTI writes it only inside the
// calls it is passed to, which take `&mut self` (or while configured: see [`configure`], under
// the agent's lock).
unsafe impl Send for PcBuffer {}

impl std::fmt::Debug for PcBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PcBuffer").field("pcs", &self.pcs.len()).finish()
    }
}

impl PcBuffer {
    /// Room for `pcs` PCs with `reasons` stall reasons each.
    pub fn new(pcs: usize, reasons: usize) -> Self {
        let mut stall: Vec<Vec<ffi::CUpti_PCSamplingStallReason>> =
            (0..pcs).map(|_| vec![Default::default(); reasons.max(1)]).collect();
        let mut pc_data: Vec<ffi::CUpti_PCSamplingPCData> = stall
            .iter_mut()
            .map(|r| ffi::CUpti_PCSamplingPCData {
                size: std::mem::size_of::<ffi::CUpti_PCSamplingPCData>(),
                stallReason: r.as_mut_ptr(),
                ..Default::default()
            })
            .collect();
        let data = Box::new(ffi::CUpti_PCSamplingData {
            size: std::mem::size_of::<ffi::CUpti_PCSamplingData>(),
            collectNumPcs: pcs,
            pPcData: pc_data.as_mut_ptr(),
            ..Default::default()
        });
        Self { data, pcs: pc_data, _reasons: stall }
    }

    fn raw(&mut self) -> *mut ffi::CUpti_PCSamplingData {
        &mut *self.data
    }

    /// The counts of the last fill: (PCs filled, PCs CUPTI still holds, samples in all,
    /// samples the hardware dropped, samples in non-user kernels, hardware buffer full, range).
    pub fn counts(&self) -> Counts {
        let d = &*self.data;
        Counts {
            pcs: d.totalNumPcs.min(self.pcs.len()),
            remaining: d.remainingNumPcs,
            total_samples: d.totalSamples,
            dropped_samples: d.droppedSamples,
            non_user_samples: d.nonUsrKernelsTotalSamples,
            hardware_full: d.hardwareBufferFull != 0,
            range: d.rangeId,
        }
    }

    /// Marks the buffer read (CUPTI's own flushes into the configured buffer add to it).
    pub fn clear(&mut self) {
        self.data.totalNumPcs = 0;
        self.data.remainingNumPcs = 0;
        self.data.totalSamples = 0;
        self.data.droppedSamples = 0;
        self.data.nonUsrKernelsTotalSamples = 0;
        self.data.hardwareBufferFull = 0;
    }

    /// The PCs of the last fill.
    pub fn pcs(&self) -> impl Iterator<Item = Pc<'_>> {
        self.pcs[..self.counts().pcs].iter().map(|p| {
            let n = p.stallReasonCount;
            let reasons = if p.stallReason.is_null() || n == 0 {
                &[][..]
            } else {
                // SAFETY: CUPTI wrote `stallReasonCount` entries into the array this buffer
                // gave it (never more than its room, the device's reason count).
                unsafe { std::slice::from_raw_parts(p.stallReason, n) }
            };
            Pc {
                cubin_crc: p.cubinCrc,
                pc_offset: p.pcOffset,
                function_index: p.functionIndex,
                correlation: p.correlationId,
                // SAFETY: CUPTI's function name is NUL-terminated text it keeps alive.
                function: unsafe { c_str(p.functionName) },
                reasons,
            }
        })
    }
}

/// The counts of one fill of a [`PcBuffer`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// PCs in the buffer.
    pub pcs: usize,
    /// PCs CUPTI still holds (another `get_data` takes them).
    pub remaining: usize,
    /// Samples in all (user and non-user kernels, dropped included).
    pub total_samples: u64,
    /// Samples the hardware dropped.
    pub dropped_samples: u64,
    /// Samples in kernels CUPTI gives no PCs for (its own and the driver's).
    pub non_user_samples: u64,
    /// The hardware buffer filled up (samples lost).
    pub hardware_full: bool,
    /// CUPTI's range id.
    pub range: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_point_at_their_own_room() {
        let mut b = PcBuffer::new(3, 4);
        let raw = b.raw();
        // SAFETY: `raw` points at the buffer's own boxed struct.
        let d = unsafe { &*raw };
        assert_eq!({ d.collectNumPcs }, 3);
        assert_eq!(b.counts().pcs, 0);
        assert_eq!(b.pcs().count(), 0);
        b.data.totalNumPcs = 10;
        assert_eq!(b.counts().pcs, 3, "never more than the room");
        b.clear();
        assert_eq!(b.counts(), Counts::default());
    }
}
