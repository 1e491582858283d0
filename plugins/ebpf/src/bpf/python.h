/* CPython frames of a sampled thread, read in BPF at the moment of the sample (on-CPU) or of the
 * switch out (off-CPU): the code object and instruction pointer of each frame of the thread's
 * frame chain, innermost first. User space resolves the code objects (process_vm_readv, cached)
 * into `function (file.py:line)` and merges them into the native stack where the eval loop runs
 * them. Per-version offsets come from the host (xpuprof-python's layout table) per process in
 * `py_procs`; a process without an entry costs one map lookup per sample. */
#ifndef XPUPROF_PYTHON_H
#define XPUPROF_PYTHON_H

#include "python_stack.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct xp_py_offsets);
} py_procs SEC(".maps");

static __always_inline __u64 py_u64(__u64 addr, int *bad)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		*bad = 1;
	return v;
}

static __always_inline __u32 py_u32(__u64 addr, int *bad)
{
	__u32 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		*bad = 1;
	return v;
}

/* Which code object lives at `code` (xpuprof-python's code::identity, the same bits): its
 * co_version (3.12 and later), else its file and name objects' addresses mixed. Read at the
 * sample, it tells a code object from one created later at the same address. */
static __always_inline __u64 py_identity(const struct xp_py_offsets *o, __u64 code, int *bad)
{
	__u64 names[2] = {}, h;

	if (o->identity_version)
		return py_u32(code + o->code_identity, bad) & PY_IDENTITY;
	if (bpf_probe_read_user(names, sizeof(names), (void *)(code + o->code_identity)))
		*bad = 1;
	h = names[0] ^ ((names[1] << 17) | (names[1] >> 47));
	return (h ^ (h >> 31) ^ (h >> 62)) & PY_IDENTITY;
}

/* State of a walk, shared with the bpf_loop callbacks (one verification each, whatever the
 * number of threads or frames). */
struct py_walk {
	const struct xp_py_offsets *o;
	struct xp_py_stack *out;
	__u64 cur; /* thread state or frame being looked at */
	__u64 cframe; /* 3.11: the _PyCFrame of the eval-loop call running `cur` */
	__u64 found;
	__u64 fsbase;
	__u32 tid;
	__u32 n;
	int bad;
};

static long py_thread_step(__u64 i, void *data)
{
	struct py_walk *w = data;
	const struct xp_py_offsets *o = w->o;

	if (!w->cur || w->bad)
		return 1;
	if (o->tstate_native_tid != PY_NONE) {
		if (py_u32(w->cur + o->tstate_native_tid, &w->bad) == w->tid) {
			w->found = w->cur;
			return 1;
		}
	} else if (py_u64(w->cur + o->tstate_thread_id, &w->bad) == w->fsbase) {
		w->found = w->cur;
		return 1;
	}
	w->cur = py_u64(w->cur + o->tstate_next, &w->bad);
	return 0;
}

static long py_frame_step(__u64 i, void *data)
{
	struct py_walk *w = data;
	const struct xp_py_offsets *o = w->o;
	__u64 frame = w->cur, instr, code, start;
	__u32 n = w->n;
	__u8 owner = 0, entry = 0;

	if (!frame || w->bad)
		return 1;
	w->cur = py_u64(frame + o->frame_back, &w->bad);
	if (!o->objects) {
		bpf_probe_read_user(&owner, 1, (void *)(frame + o->frame_owner));
		if (o->owner_cstack != PY_NONE && owner == o->owner_cstack) {
			/* The eval loop's own marker frame (a local of that call): its caller ran first
			 * in that call. */
			if (n > 0 && n <= PY_MAX_FRAMES) {
				w->out->instr[(n - 1) & (PY_MAX_FRAMES - 1)] |= PY_ENTRY;
				w->out->cstack[(n - 1) & (PY_MAX_FRAMES - 1)] = frame;
			}
			return 0;
		}
	}
	if (n >= PY_MAX_FRAMES)
		return 1;
	code = py_u64(frame + o->frame_code, &w->bad);
	if (o->objects) {
		entry = 1;
		instr = py_u32(frame + o->frame_instr, &w->bad);
	} else {
		if (o->frame_is_entry != PY_NONE)
			bpf_probe_read_user(&entry, 1, (void *)(frame + o->frame_is_entry));
		/* The instruction pointer -> its byte offset in the code's instructions. */
		instr = py_u64(frame + o->frame_instr, &w->bad);
		start = code + o->code_instructions;
		instr = instr >= start && instr - start < 0xffffffffull ? instr - start : 0xffffffffull;
	}
	instr |= py_identity(o, code, &w->bad) << 32;
	w->out->code[n & (PY_MAX_FRAMES - 1)] = code;
	w->out->instr[n & (PY_MAX_FRAMES - 1)] = instr | (entry ? PY_ENTRY : 0);
	w->out->cstack[n & (PY_MAX_FRAMES - 1)] = 0;
	if (entry && w->cframe) {
		/* 3.11: the first frame of an eval-loop call; the next call out is the _PyCFrame's
		 * previous one, whose current frame must be the next frame of the chain (else the
		 * two chains do not pair up, e.g. frames run by a PEP 523 evaluator: no more markers). */
		w->out->cstack[n & (PY_MAX_FRAMES - 1)] = w->cframe;
		w->cframe = py_u64(w->cframe + o->cframe_previous, &w->bad);
		if (w->cframe && py_u64(w->cframe + o->cframe_current, &w->bad) != w->cur)
			w->cframe = 0;
	}
	w->n = n + 1;
	return 0;
}

/* Reads the Python frames of `task` (thread `tid` of process `tgid`) into `out`; out->frames = 0
 * when the process runs no known interpreter or the thread runs no Python code. */
static __always_inline void xp_read_python(struct task_struct *task, __u32 tgid, __u32 tid, struct xp_py_stack *out)
{
	const struct xp_py_offsets *o = bpf_map_lookup_elem(&py_procs, &tgid);
	struct py_walk w = {};
	__u64 interp, frame;

	out->frames = 0;
	out->status = 0;
	if (!o)
		return;
	w.o = o;
	w.out = out;
	w.tid = tid;
#if defined(__TARGET_ARCH_x86)
	w.fsbase = BPF_CORE_READ(task, thread.fsbase);
#endif
	interp = py_u64(o->interpreters_head, &w.bad);
	if (interp && !w.bad)
		w.cur = py_u64(interp + o->interp_threads_head, &w.bad);
	bpf_loop(PY_MAX_THREADS, py_thread_step, &w, 0);
	if (!w.found) {
		out->status = w.bad ? -2 : -1;
		return;
	}
	frame = py_u64(w.found + o->tstate_frame, &w.bad);
	if (frame && o->cframe_current != PY_NONE) {
		if (o->cframe_previous != PY_NONE && o->frame_is_entry != PY_NONE)
			w.cframe = frame;
		frame = py_u64(frame + o->cframe_current, &w.bad);
	}
	w.cur = frame;
	bpf_loop(2 * PY_MAX_FRAMES, py_frame_step, &w, 0);
	out->frames = w.n;
	out->status = w.bad ? -2 : (w.cur ? 1 : 0);
}

#endif
