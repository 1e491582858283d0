// SPDX-License-Identifier: (MIT OR GPL-2.0)
/* xpuprof eBPF CPU source: on-CPU samples, off-CPU intervals and launch-site uprobes for one
 * process tree. The host seeds `tracked` with the target pid; fork keeps the set up to date. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "events.h"
#include "python.h" /* not called yet: compiled so it cannot rot (see docs/stacks.md) */

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Set by the host before load. */
const volatile __u64 min_offcpu_ns = 1000000;
const volatile bool kernel_stacks = false;
const volatile __u64 launch_sample_every = 1;
const volatile __u64 launch_max_per_sec = 0;

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

struct offcpu_start {
	__u64 ts;
	__u64 user_sp;
	__u64 user_bp;
	__u64 sp_words[SP_WORDS];
	__s32 ustack_bytes;
	__s32 kstack_bytes;
	__u64 ustack[MAX_USTACK];
	__u64 kstack[MAX_KSTACK];
};

/* Threads that went off CPU, with their stack at that moment. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct offcpu_start);
} offcpu SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct offcpu_start);
} offcpu_scratch SEC(".maps");

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
	e->kstack_bytes = 0;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
}

/* The user registers of `task` and the top of its user stack. The frame-pointer walk skips
 * callers that have not set up a frame (a function entry seen by a uprobe, a libc syscall
 * wrapper): the host finds their return addresses among these words. */
static __always_inline void read_user_top(struct task_struct *task, __u64 *sp_out, __u64 *bp_out,
					  __u64 *words)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	__u64 sp = BPF_CORE_READ(regs, sp);

	*sp_out = sp;
	*bp_out = BPF_CORE_READ(regs, bp);
	if (bpf_probe_read_user(words, SP_WORDS * sizeof(__u64), (void *)sp))
		__builtin_memset(words, 0, SP_WORDS * sizeof(__u64));
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct xp_stack_event *e;

	if (!is_tracked(id >> 32))
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_loss(LOSS_RINGBUF_SAMPLE);
		return 0;
	}
	fill_header(e, EV_SAMPLE, id);
	e->weight = ctx->sample_period;
	read_user_top(bpf_get_current_task_btf(), &e->user_sp, &e->user_bp, e->sp_words);
	e->ustack_bytes = bpf_get_stack(ctx, e->ustack, sizeof(e->ustack), BPF_F_USER_STACK);
	if (kernel_stacks)
		e->kstack_bytes = bpf_get_stack(ctx, e->kstack, sizeof(e->kstack), 0);
	bpf_ringbuf_submit(e, 0);
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

	if (pid == ppid || !is_tracked(ppid))
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
	__u32 zero = 0, tid = prev->pid;
	struct offcpu_start *s = bpf_map_lookup_elem(&offcpu_scratch, &zero);

	if (!s)
		return;
	s->ts = bpf_ktime_get_ns();
	read_user_top(prev, &s->user_sp, &s->user_bp, s->sp_words);
	s->ustack_bytes = bpf_get_stack(ctx, s->ustack, sizeof(s->ustack), BPF_F_USER_STACK);
	s->kstack_bytes = 0;
	if (kernel_stacks)
		s->kstack_bytes = bpf_get_stack(ctx, s->kstack, sizeof(s->kstack), 0);
	if (bpf_map_update_elem(&offcpu, &tid, s, BPF_ANY))
		count_loss(LOSS_OFFCPU_MAP_FULL);
}

static __always_inline void offcpu_end(struct task_struct *next)
{
	__u32 tid = next->pid;
	struct offcpu_start *s = bpf_map_lookup_elem(&offcpu, &tid);
	struct xp_stack_event *e;
	__u64 now, blocked;

	if (!s)
		return;
	now = bpf_ktime_get_ns();
	blocked = now - s->ts;
	if (blocked < min_offcpu_ns)
		goto out;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_loss(LOSS_RINGBUF_OFFCPU);
		goto out;
	}
	e->kind = EV_OFFCPU;
	e->pid = next->tgid;
	e->tid = tid;
	e->backend = 0;
	e->time = now;
	e->weight = blocked;
	e->correlation = 0;
	e->cookie = 0;
	e->user_sp = s->user_sp;
	e->user_bp = s->user_bp;
	e->ustack_bytes = s->ustack_bytes;
	e->kstack_bytes = s->kstack_bytes;
	BPF_CORE_READ_STR_INTO(&e->comm, next, comm);
	bpf_probe_read_kernel(e->sp_words, sizeof(e->sp_words), s->sp_words);
	bpf_probe_read_kernel(e->ustack, sizeof(e->ustack), s->ustack);
	bpf_probe_read_kernel(e->kstack, sizeof(e->kstack), s->kstack);
	bpf_ringbuf_submit(e, 0);
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

static __always_inline int launch_event(struct pt_regs *ctx, __u32 kind, __u32 backend, __u64 corr)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct xp_stack_event *e;

	if (!is_tracked(id >> 32) || !launch_admit((__u32)id))
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_loss(LOSS_RINGBUF_LAUNCH);
		return 0;
	}
	fill_header(e, kind, id);
	e->backend = backend;
	e->correlation = corr;
	e->cookie = bpf_get_attach_cookie(ctx);
	/* At function entry the return address sits at the stack pointer. */
	read_user_top(bpf_get_current_task_btf(), &e->user_sp, &e->user_bp, e->sp_words);
	e->ustack_bytes = bpf_get_stack(ctx, e->ustack, sizeof(e->ustack), BPF_F_USER_STACK);
	bpf_ringbuf_submit(e, 0);
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
