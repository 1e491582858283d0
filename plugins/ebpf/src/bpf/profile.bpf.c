// SPDX-License-Identifier: (MIT OR GPL-2.0)
/* xpuprof eBPF CPU source: on-CPU samples, off-CPU intervals and launch-site uprobes for one
 * process tree. The host seeds `tracked` with the target pid; fork keeps the set up to date. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "events.h"
#include "python.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Set by the host before load. */
const volatile __u64 min_offcpu_ns = 1000000;
const volatile bool kernel_stacks = false;
const volatile __u64 launch_sample_every = 1;
const volatile __u64 launch_max_per_sec = 0;
const volatile __u32 ustack_copy = 65536; /* bytes of user stack copied per record, <= USTACK_MAX */
const volatile bool follow_forks = true; /* false: `xpuprof attach PID` without --tree */

/* Referenced so the skeleton generates the types; the host pins its mirror against them. */
struct xp_stack_event _stack_event_layout = {};
struct xp_proc_event _proc_event_layout = {};
struct xp_mapping_event _mapping_event_layout = {};

/* Open-coded VMA iterator (kernel 6.7+); weak so that older kernels still load the object. */
extern int bpf_iter_task_vma_new(struct bpf_iter_task_vma *it, struct task_struct *task,
				 __u64 addr) __weak __ksym;
extern struct vm_area_struct *bpf_iter_task_vma_next(struct bpf_iter_task_vma *it) __weak __ksym;
extern void bpf_iter_task_vma_destroy(struct bpf_iter_task_vma *it) __weak __ksym;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); /* resized by the host */
} events SEC(".maps");

/* Processes (tgids) of the profiled tree. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u32);
} tracked SEC(".maps");

/* Threads that went off CPU, with their stack at that moment (time = when it went off CPU).
 * Not preallocated: only blocked threads of the profiled tree hold an entry. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 2048);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct xp_stack_event);
} offcpu SEC(".maps");

/* Where a stack record is built before it is sent (too big for the BPF stack): SCRATCH_SLOTS
 * slots per CPU, one per kind of program that may interrupt another on the same CPU (a perf
 * sample can fire inside a uprobe or a scheduler-switch program). A plain array indexed by CPU,
 * not a per-CPU array: per-CPU values are limited to 32 KiB, a record with a 64 KiB copy is not.
 * Sized by the host (SCRATCH_SLOTS x possible CPUs). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SCRATCH_SLOTS);
	__type(key, __u32);
	__type(value, struct xp_stack_event);
} event_scratch SEC(".maps");

enum scratch_slot { SLOT_SAMPLE = 0, SLOT_SWITCH = 1, SLOT_UPROBE = 2 };

struct launch_state {
	__u64 calls;
	__u64 window_start;
	__u64 window_count;
};

/* Per-thread state for launch-probe sampling and rate limiting. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct launch_state);
} launch_threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LOSS_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} losses SEC(".maps");

/* The CPU clock's count (ns) at this CPU's previous sample, whichever task it hit. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} clock_at_last_sample SEC(".maps");

static __always_inline void count_loss(__u32 cause)
{
	__u64 *v = bpf_map_lookup_elem(&losses, &cause);

	if (v)
		*v += 1;
}

static __always_inline bool is_tracked(__u32 tgid)
{
	return tgid && bpf_map_lookup_elem(&tracked, &tgid);
}

static __always_inline void fill_header(struct xp_stack_event *e, __u32 kind, __u64 pid_tgid)
{
	e->kind = kind;
	e->pid = pid_tgid >> 32;
	e->tid = (__u32)pid_tgid;
	e->backend = 0;
	e->time = bpf_ktime_get_ns();
	e->weight = 0;
	e->correlation = 0;
	e->cookie = 0;
	e->flags = 0;
	e->kstack_bytes = 0;
	e->pad = 0;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
}

static __always_inline struct xp_stack_event *scratch_event(enum scratch_slot slot)
{
	__u32 key = bpf_get_smp_processor_id() * SCRATCH_SLOTS + slot;

	return bpf_map_lookup_elem(&event_scratch, &key);
}

/* Copies the user stack from e->user_sp up: ustack_copy bytes, fewer for the main thread near
 * its top (mm->start_stack, where argc sits, is the end of its frames) and, when a read still
 * faults (a thread stack's end: its thread descriptor and TLS may leave only a few KiB above the
 * stack pointer of a shallow thread), halving the length down to 2 KiB. */
static __always_inline void copy_user_stack(struct task_struct *task, struct xp_stack_event *e)
{
	__u64 sp = e->user_sp, top = BPF_CORE_READ(task, mm, start_stack);
	__u64 len = ustack_copy;

	if (sp < top && top - sp + 64 < len)
		len = top - sp + 64;
	for (int i = 0; i < 6; i++) {
		len &= ~7ULL;
		if (len > USTACK_MAX)
			len = USTACK_MAX;
		if (len == 0)
			break;
		if (!bpf_probe_read_user(e->ustack, len, (void *)sp)) {
			e->ustack_bytes = len;
			return;
		}
		len /= 2;
	}
	e->ustack_bytes = -14; /* EFAULT */
}

/* The user registers of `task` (saved at its entry to the kernel, so right also for a sample
 * that hit kernel code) and its user stack. */
static __always_inline void read_user(struct task_struct *task, struct xp_stack_event *e)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);

	e->user_ip = BPF_CORE_READ(regs, ip);
	e->user_sp = BPF_CORE_READ(regs, sp);
	e->user_bp = BPF_CORE_READ(regs, bp);
	e->flags = 0;
	copy_user_stack(task, e);
}

/* Sends `e` with the part of its user stack that was copied. */
static __always_inline long send_event(struct xp_stack_event *e)
{
	__u64 n = e->ustack_bytes > 0 ? e->ustack_bytes : 0;

	if (n > USTACK_MAX)
		n = USTACK_MAX;
	return bpf_ringbuf_output(&events, e, offsetof(struct xp_stack_event, ustack) + n, 0);
}

/* The CPU time a sample stands for: the CPU clock's advance since this CPU's previous sample.
 * That is the period, except where the timer fired late (a virtual CPU the hypervisor did not
 * run, interrupts off) and periods were skipped, which the period alone would lose silently;
 * the period where there is no previous count or the gap is implausibly long (the event was
 * off meanwhile). */
static __always_inline __u64 sample_weight(struct bpf_perf_event_data *ctx)
{
	struct bpf_perf_event_value v = {};
	__u32 zero = 0;
	__u64 *last = bpf_map_lookup_elem(&clock_at_last_sample, &zero);
	__u64 period = ctx->sample_period;
	__u64 w = period;

	if (!last || bpf_perf_prog_read_value(ctx, &v, sizeof(v)))
		return w;
	if (*last && v.counter > *last && v.counter - *last <= 64 * period)
		w = v.counter - *last;
	*last = v.counter;
	return w;
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u64 weight = sample_weight(ctx);
	struct xp_stack_event *e;

	if (!is_tracked(id >> 32))
		return 0;
	e = scratch_event(SLOT_SAMPLE);
	if (!e)
		return 0;
	fill_header(e, EV_SAMPLE, id);
	e->weight = weight;
	read_user(bpf_get_current_task_btf(), e);
	xp_read_python(bpf_get_current_task_btf(), e->pid, e->tid, &e->py);
	if (kernel_stacks)
		e->kstack_bytes = bpf_get_stack(ctx, e->kstack, sizeof(e->kstack), 0);
	if (send_event(e))
		count_loss(LOSS_RINGBUF_SAMPLE);
	return 0;
}

static __always_inline void send_proc_event(__u32 kind, __u32 pid, __u32 ppid, __u32 tid)
{
	struct xp_proc_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		count_loss(LOSS_RINGBUF_PROC);
		return;
	}
	e->kind = kind;
	e->pid = pid;
	e->ppid = ppid;
	e->tid = tid;
	e->time = bpf_ktime_get_ns();
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, 0);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ppid = parent->tgid;
	__u32 pid = child->tgid;
	__u32 one = 1;

	if (!follow_forks || pid == ppid || !is_tracked(ppid))
		return 0;
	if (bpf_map_update_elem(&tracked, &pid, &one, BPF_ANY)) {
		count_loss(LOSS_TRACKED_MAP_FULL);
		return 0;
	}
	send_proc_event(EV_FORK, pid, ppid, child->pid);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p)
{
	__u32 pid = p->tgid;

	if (is_tracked(pid))
		send_proc_event(EV_EXEC, pid, 0, p->pid);
	return 0;
}

#define VM_EXEC_FLAG 0x4

/* Scratch space for building a mapping record outside the ring buffer. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xp_mapping_event);
} mapping_scratch SEC(".maps");

/* State of the walk from a file's dentry up to the root (all plain numbers: the walk reads
 * kernel memory with bpf_probe_read_kernel). */
struct walk_ctx {
	__u64 dentry;
	__u64 vfsmount;
	__u64 mount;
	__u64 mnt_off; /* offsetof(struct mount, mnt) */
	__u32 n;
	__u32 complete;
};

/* One step of the walk (a bpf_loop callback, so the verifier checks it once): records the
 * dentry's name in the scratch record and moves to its parent, or crosses a mount point. */
static long walk_step(__u64 i, void *data)
{
	struct walk_ctx *c = data;
	struct dentry *d = (void *)c->dentry;
	struct mount *mnt = (void *)c->mount;
	struct vfsmount *vfs = (void *)c->vfsmount;
	struct dentry *root = BPF_CORE_READ(vfs, mnt_root);
	struct dentry *parent = BPF_CORE_READ(d, d_parent);
	struct xp_mapping_event *e;
	__u32 zero = 0;

	if (d == root || d == parent) {
		struct mount *up = BPF_CORE_READ(mnt, mnt_parent);

		if (up == mnt || d != root) {
			c->complete = 1;
			return 1;
		}
		c->dentry = (__u64)BPF_CORE_READ(mnt, mnt_mountpoint);
		c->mount = (__u64)up;
		c->vfsmount = (__u64)up + c->mnt_off;
		return 0;
	}
	e = bpf_map_lookup_elem(&mapping_scratch, &zero);
	if (!e || c->n >= PATH_DEPTH)
		return 1;
	bpf_probe_read_kernel_str(&e->names[(c->n & (PATH_DEPTH - 1)) * NAME_LEN], NAME_LEN,
				  BPF_CORE_READ(d, d_name.name));
	c->n++;
	c->dentry = (__u64)parent;
	return 0;
}

/* Fills e's path from `file` (a struct file * as a number), file name first. */
static __always_inline void fill_path(struct xp_mapping_event *e, __u64 file)
{
	struct walk_ctx c = {};

	c.mnt_off = bpf_core_field_offset(struct mount, mnt);
	c.dentry = (__u64)BPF_CORE_READ((struct file *)file, f_path.dentry);
	c.vfsmount = (__u64)BPF_CORE_READ((struct file *)file, f_path.mnt);
	c.mount = c.vfsmount - c.mnt_off;
	bpf_loop(PATH_DEPTH * 2, walk_step, &c, 0);
	e->depth = c.n;
	e->complete = c.complete;
}

/* Sends the executable file mappings of exiting process `p` (its address space still exists at
 * this tracepoint on recent kernels; nothing is sent where it is already gone). */
static __always_inline void send_exit_mappings(struct task_struct *p)
{
	struct bpf_iter_task_vma it;
	struct vm_area_struct *vma;
	__u32 zero = 0;

	if (!bpf_ksym_exists(bpf_iter_task_vma_new) || !p->mm)
		return;
	bpf_iter_task_vma_new(&it, p, 0);
	while ((vma = bpf_iter_task_vma_next(&it))) {
		struct xp_mapping_event *e;
		__u64 file = 0;

		/* Read as a plain number: the global function takes scalars only. */
		bpf_probe_read_kernel(&file, sizeof(file), &vma->vm_file);
		if (!file || !(vma->vm_flags & VM_EXEC_FLAG))
			continue;
		e = bpf_map_lookup_elem(&mapping_scratch, &zero);
		if (!e)
			break;
		e->kind = EV_MAPPING;
		e->pid = p->tgid;
		e->time = bpf_ktime_get_ns();
		e->start = vma->vm_start;
		e->end = vma->vm_end;
		e->pgoff = vma->vm_pgoff;
		fill_path(e, file);
		if (bpf_ringbuf_output(&events, e, sizeof(*e), 0))
			count_loss(LOSS_RINGBUF_PROC);
	}
	bpf_iter_task_vma_destroy(&it);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	__u32 pid = p->tgid;
	__u32 tid = p->pid;

	bpf_map_delete_elem(&offcpu, &tid);
	if (!is_tracked(pid) || BPF_CORE_READ(p, signal, live.counter) != 0)
		return 0;
	send_exit_mappings(p);
	bpf_map_delete_elem(&tracked, &pid);
	send_proc_event(EV_EXIT, pid, 0, tid);
	return 0;
}

static __always_inline void offcpu_begin(void *ctx, struct task_struct *prev)
{
	__u32 tid = prev->pid;
	struct xp_stack_event *s = scratch_event(SLOT_SWITCH);

	if (!s)
		return;
	fill_header(s, EV_OFFCPU, ((__u64)prev->tgid << 32) | tid);
	read_user(prev, s);
	/* sched_switch runs on prev's address space: its user memory is readable here. */
	xp_read_python(prev, s->pid, tid, &s->py);
	if (kernel_stacks)
		s->kstack_bytes = bpf_get_stack(ctx, s->kstack, sizeof(s->kstack), 0);
	if (bpf_map_update_elem(&offcpu, &tid, s, BPF_ANY))
		count_loss(LOSS_OFFCPU_MAP_FULL);
}

static __always_inline void offcpu_end(struct task_struct *next)
{
	__u32 tid = next->pid;
	struct xp_stack_event *s = bpf_map_lookup_elem(&offcpu, &tid);
	__u64 now, blocked;

	if (!s)
		return;
	now = bpf_ktime_get_ns();
	blocked = now - s->time;
	if (blocked < min_offcpu_ns)
		goto out;
	s->time = now;
	s->weight = blocked;
	if (send_event(s))
		count_loss(LOSS_RINGBUF_OFFCPU);
out:
	bpf_map_delete_elem(&offcpu, &tid);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	/* Only blocked threads count as off-CPU; preempted ones are still runnable. */
	if (prev_state != 0 && is_tracked(prev->tgid))
		offcpu_begin(ctx, prev);
	offcpu_end(next);
	return 0;
}

/* Sampling and per-thread rate limiting of launch probes; false = skip this hit. */
static __always_inline bool launch_admit(__u32 tid)
{
	struct launch_state init = {}, *s;
	__u64 calls, now;

	s = bpf_map_lookup_elem(&launch_threads, &tid);
	if (!s) {
		bpf_map_update_elem(&launch_threads, &tid, &init, BPF_NOEXIST);
		s = bpf_map_lookup_elem(&launch_threads, &tid);
		if (!s)
			return true;
	}
	calls = s->calls++;
	if (launch_sample_every > 1 && calls % launch_sample_every != 0) {
		count_loss(LOSS_LAUNCH_SAMPLED_OUT);
		return false;
	}
	if (launch_max_per_sec) {
		now = bpf_ktime_get_ns();
		if (now - s->window_start >= 1000000000ULL) {
			s->window_start = now;
			s->window_count = 0;
		}
		if (s->window_count >= launch_max_per_sec) {
			count_loss(LOSS_LAUNCH_RATE_LIMITED);
			return false;
		}
		s->window_count++;
	}
	return true;
}

/* The agent's caller-side start (trampoline arguments 3-5) is used when its stack pointer lies
 * in this thread's stack above the trampoline's own frame (two-argument callers leave
 * unrelated values there). */
#define START_MAX_ABOVE (1 << 20)

static __always_inline int launch_event(struct pt_regs *ctx, __u32 kind, __u32 backend, __u64 corr)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct xp_stack_event *e;

	if (!is_tracked(id >> 32) || !launch_admit((__u32)id))
		return 0;
	e = scratch_event(SLOT_UPROBE);
	if (!e)
		return 0;
	fill_header(e, kind, id);
	e->backend = backend;
	e->correlation = corr;
	e->cookie = bpf_get_attach_cookie(ctx);
	/* A uprobe fires in user mode: ctx holds the user registers. At a function's entry the
	 * return address sits at the stack pointer, which the CFI of the entry says. */
	e->user_ip = PT_REGS_IP(ctx);
	e->user_sp = PT_REGS_SP(ctx);
	e->user_bp = PT_REGS_FP(ctx);
	e->flags = 0;
	if (kind == EV_TRAMPOLINE) {
		__u64 ip = PT_REGS_PARM3(ctx), sp = PT_REGS_PARM4(ctx);

		if (ip && sp > e->user_sp && sp - e->user_sp < START_MAX_ABOVE) {
			e->user_ip = ip;
			e->user_sp = sp;
			e->user_bp = PT_REGS_PARM5(ctx);
			e->flags = XP_START_CALLER;
		}
	}
	copy_user_stack(bpf_get_current_task_btf(), e);
	xp_read_python(bpf_get_current_task_btf(), e->pid, e->tid, &e->py);
	if (send_event(e))
		count_loss(LOSS_RINGBUF_LAUNCH);
	return 0;
}

SEC("uprobe")
int on_launch(struct pt_regs *ctx)
{
	return launch_event(ctx, EV_LAUNCH, 0, 0);
}

SEC("uprobe")
int on_trampoline(struct pt_regs *ctx)
{
	return launch_event(ctx, EV_TRAMPOLINE, (__u32)PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx));
}
