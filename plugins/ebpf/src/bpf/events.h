/* Layout of the records the BPF programs send to user space through the ring buffer.
 * Mirrored by `src/decode.rs` (`#[repr(C)]`, decoded with `plain`); the unit tests there pin
 * sizes and offsets against the skeleton's generated types. */
#ifndef XPUPROF_EVENTS_H
#define XPUPROF_EVENTS_H

#include "python_stack.h"

#define MAX_KSTACK 48
#define COMM_LEN 16
#define USTACK_MAX 65536 /* most bytes of user stack a record carries (the copy size is set at load) */
#define SCRATCH_SLOTS 3  /* event_scratch slots per CPU: samples, scheduler switches, uprobes (see profile.bpf.c) */

/* xp_stack_event.flags */
#define XP_START_CALLER 1 /* user_ip is a return address: the caller-side start an agent passed */

/* Record kinds (first u32 of every record). */
enum xp_event_kind {
	EV_SAMPLE = 1,     /* on-CPU sample: struct xp_stack_event */
	EV_OFFCPU = 2,     /* blocked interval ended: struct xp_stack_event */
	EV_LAUNCH = 3,     /* uprobe on a launch symbol: struct xp_stack_event, cookie = probe index */
	EV_TRAMPOLINE = 4, /* uprobe on xpuprof_agent_launch: struct xp_stack_event */
	EV_FORK = 5,       /* tracked process forked a new process: struct xp_proc_event */
	EV_EXEC = 6,       /* tracked process exec'd: struct xp_proc_event */
	EV_EXIT = 7,       /* tracked process exited: struct xp_proc_event */
	EV_MAPPING = 8,    /* executable file mapping of an exiting process: struct xp_mapping_event */
};

/* Loss counters (index into the per-CPU `losses` array). */
enum xp_loss_cause {
	LOSS_RINGBUF_SAMPLE = 0,
	LOSS_RINGBUF_OFFCPU = 1,
	LOSS_RINGBUF_LAUNCH = 2,
	LOSS_RINGBUF_PROC = 3,
	LOSS_LAUNCH_SAMPLED_OUT = 4,
	LOSS_LAUNCH_RATE_LIMITED = 5,
	LOSS_OFFCPU_MAP_FULL = 6,
	LOSS_TRACKED_MAP_FULL = 7,
	LOSS_COUNT = 8,
};

struct xp_stack_event {
	__u32 kind;
	__u32 pid;
	__u32 tid;
	__u32 backend;      /* EV_TRAMPOLINE: first argument */
	__u64 time;         /* bpf_ktime_get_ns */
	__u64 weight;       /* EV_SAMPLE: period ns; EV_OFFCPU: blocked ns */
	__u64 correlation;  /* EV_TRAMPOLINE: second argument */
	__u64 cookie;       /* EV_LAUNCH: index of the probed symbol */
	__u64 user_ip;      /* user registers the host's unwind starts from */
	__u64 user_sp;
	__u64 user_bp;
	__u32 flags;        /* XP_START_* */
	__s32 ustack_bytes; /* bytes of ustack copied from user_sp, or a negative errno */
	__s32 kstack_bytes; /* bytes of kstack filled, or a negative errno, 0 when not captured */
	__u32 pad;
	char comm[COMM_LEN];
	__u64 kstack[MAX_KSTACK];
	/* The thread's Python frames where the process runs CPython (python.h), frames = 0 else. */
	struct xp_py_stack py;
	/* The user stack from user_sp up, unwound by the host with the binaries' CFI (the model of
	 * perf --call-graph dwarf). Records are variable-length: only ustack_bytes of it are sent. */
	__u8 ustack[USTACK_MAX];
};

struct xp_proc_event {
	__u32 kind;
	__u32 pid;
	__u32 ppid;
	__u32 tid;
	__u64 time;
	char comm[COMM_LEN];
};

#define PATH_DEPTH 16
#define NAME_LEN 64

/* One executable file mapping of a process, sent when its last thread exits (while the
 * address space still exists) so that processes that exit quickly still normalise. The path is
 * rebuilt from the dentry chain, crossing mount points. */
struct xp_mapping_event {
	__u32 kind;
	__u32 pid;
	__u64 time;
	__u64 start;
	__u64 end;
	__u64 pgoff;    /* in pages */
	__u32 depth;    /* path components in names */
	__u32 complete; /* 1 when the walk reached the root */
	char names[PATH_DEPTH * NAME_LEN]; /* NAME_LEN-byte slots: file name first, then directories */
};

#endif
