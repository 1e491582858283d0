//! Raw system interfaces: `perf_event_open` for the sampling clock, CPU lists, privileges, the
//! BPF programs' run-time statistics.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_SW_CPU_CLOCK: u64 = 0;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
/// `perf_event_attr.freq`: `sample_period` is a frequency.
const ATTR_FLAG_FREQ: u64 = 1 << 10;

/// `struct perf_event_attr` as of PERF_ATTR_SIZE_VER0 (64 bytes), which every kernel accepts.
#[repr(C)]
#[derive(Debug, Default)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period_or_freq: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

/// Opens a software cpu-clock event sampling at `hz` on `cpu`, for every task running there.
pub fn open_cpu_clock(cpu: u32, hz: u64) -> io::Result<OwnedFd> {
    let attr = PerfEventAttr {
        type_: PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: PERF_COUNT_SW_CPU_CLOCK,
        sample_period_or_freq: hz,
        flags: ATTR_FLAG_FREQ,
        ..Default::default()
    };
    // SAFETY: `attr` is a valid perf_event_attr of the size it declares and outlives the call;
    // pid -1 + a cpu number and group fd -1 are valid arguments.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            -1 as libc::pid_t,
            cpu as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel returned a new file descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(ret as i32) })
}

/// The online CPUs, from `/sys/devices/system/cpu/online` ("0-3,5").
pub fn online_cpus() -> io::Result<Vec<u32>> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online")?;
    parse_cpu_list(text.trim())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("bad CPU list {text:?}")))
}

fn parse_cpu_list(s: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<u32>().ok()?..=b.parse::<u32>().ok()?),
            None => out.push(part.parse().ok()?),
        }
    }
    Some(out)
}

/// Turns on the kernel's run-time statistics of every BPF program (`BPF_ENABLE_STATS` with
/// `BPF_STATS_RUN_TIME`) for as long as the returned descriptor is open.
pub fn enable_run_time_stats() -> io::Result<OwnedFd> {
    // SAFETY: bpf_enable_stats takes a plain enum value and returns a new descriptor or a
    // negative errno.
    let fd = unsafe { libbpf_rs::libbpf_sys::bpf_enable_stats(libbpf_rs::libbpf_sys::BPF_STATS_RUN_TIME) };
    if fd < 0 {
        return Err(io::Error::from_raw_os_error(-fd));
    }
    // SAFETY: the kernel returned a new file descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A loaded program's runs and the nanoseconds they took, as the kernel counted them while its
/// run-time statistics were on ([`enable_run_time_stats`]).
pub fn program_run_time(prog: BorrowedFd<'_>) -> io::Result<(u64, u64)> {
    // SAFETY: bpf_prog_info is plain data; all zero asks for no arrays.
    let mut info: libbpf_rs::libbpf_sys::bpf_prog_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of_val(&info) as u32;
    // SAFETY: `info` is writable for `len` bytes and outlives the call; `prog` is a live
    // program descriptor.
    let ret =
        unsafe { libbpf_rs::libbpf_sys::bpf_prog_get_info_by_fd(prog.as_raw_fd(), &mut info, &mut len) };
    if ret < 0 {
        return Err(io::Error::from_raw_os_error(-ret));
    }
    Ok((info.run_cnt, info.run_time_ns))
}

/// Capabilities from `/proc/self/status` (`CapEff`), bit numbers per `capability.h`.
const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

/// `Err(message)` when this process can neither load BPF programs nor open perf events.
pub fn check_privileges() -> Result<(), String> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    let has = |cap: u32| eff & (1u64 << cap) != 0;
    if has(CAP_SYS_ADMIN) || (has(CAP_BPF) && has(CAP_PERFMON)) {
        return Ok(());
    }
    Err("failed to start the eBPF source: this process has neither root (CAP_SYS_ADMIN) nor \
         CAP_BPF + CAP_PERFMON\nhint: run xpuprof with sudo, or grant the capabilities: \
         sudo setcap cap_bpf,cap_perfmon+ep $(which xpuprof)"
        .to_owned())
}

/// `Err(message)` when the kernel has no BTF (needed by the tp_btf programs).
pub fn check_btf() -> Result<(), String> {
    const BTF: &str = "/sys/kernel/btf/vmlinux";
    if std::path::Path::new(BTF).exists() {
        return Ok(());
    }
    Err(format!(
        "failed to start the eBPF source: the kernel has no BTF ({BTF} is missing)\nhint: use a \
         kernel built with CONFIG_DEBUG_INFO_BTF=y (most distribution kernels since 5.8), or run \
         without --source ebpf"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cpu_lists() {
        assert_eq!(parse_cpu_list("0-3,5"), Some(vec![0, 1, 2, 3, 5]));
        assert_eq!(parse_cpu_list("0"), Some(vec![0]));
        assert_eq!(parse_cpu_list("x"), None);
    }

    #[test]
    fn attr_has_the_ver0_size() {
        assert_eq!(std::mem::size_of::<PerfEventAttr>(), 64);
    }
}
