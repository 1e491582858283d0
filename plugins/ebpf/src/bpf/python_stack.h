/* What BPF hands user space of a thread's Python frames (carried in every stack record, see
 * events.h) and the per-process offsets it reads them with (map py_procs, set by the host from
 * xpuprof-python's layout table: src/python.rs mirrors both). */
#ifndef XPUPROF_PYTHON_STACK_H
#define XPUPROF_PYTHON_STACK_H

#define PY_MAX_FRAMES 256 /* a power of two: indexes are masked for the verifier; `import torch` nests
                            * imports more than 10 deep, about 6 frames each */
#define PY_MAX_THREADS 256 /* thread states looked at per sample (newest first: the main thread is last) */
#define PY_NONE 0xffffffffu
#define PY_ENTRY (1ull << 63) /* in xp_py_stack.instr: the first frame its eval-loop call ran */
#define PY_IDENTITY 0x7fffffffu /* the bits of a code object's identity (xpuprof-python code::identity) */

/* Where a process's interpreter keeps what is read (set by the host, see src/python.rs). */
struct xp_py_offsets {
	__u64 interpreters_head; /* address of _PyRuntime.interpreters.head */
	__u32 interp_threads_head;
	__u32 tstate_next;
	__u32 tstate_native_tid; /* PY_NONE before 3.11: threads are matched by pthread_t = fs base */
	__u32 tstate_thread_id;
	__u32 tstate_frame;
	__u32 cframe_current; /* PY_NONE when tstate_frame points to the frame itself */
	__u32 objects;        /* 1: PyFrameObject chain (3.9, 3.10); 0: _PyInterpreterFrame chain */
	__u32 frame_back;
	__u32 frame_code;
	__u32 frame_instr; /* prev_instr / instr_ptr, or f_lasti (an int) for frame objects */
	__u32 frame_owner; /* PY_NONE for frame objects */
	__u32 frame_is_entry; /* PY_NONE unless 3.11 */
	__u32 owner_cstack;   /* PY_NONE before 3.12 */
	__u32 cframe_previous; /* _PyCFrame.previous (3.11), PY_NONE else */
	__u32 code_instructions; /* co_code_adaptive (3.11 and later), PY_NONE for frame objects */
	__u32 code_identity;     /* co_version (3.12 and later), else co_filename (co_name follows) */
	__u32 identity_version;  /* 1: code_identity is co_version; 0: the file and name pointers */
	__u32 pad;
};

/* What a sample carries of Python. */
struct xp_py_stack {
	__u32 frames;  /* entries filled */
	__s32 status;  /* 0: complete; 1: cut at PY_MAX_FRAMES; -1: thread not found; -2: read failed */
	__u64 code[PY_MAX_FRAMES];
	/* Low 32 bits: the instruction's byte offset in the code (3.11 and later; 0xffffffff before
	 * the first) or f_lasti (3.9, 3.10); bits 32..62: the code object's identity (PY_IDENTITY);
	 * bit 63: PY_ENTRY. */
	__u64 instr[PY_MAX_FRAMES];
	/* For an entry frame: the address of its eval-loop call's marker on the C stack, a local of
	 * that _PyEval_EvalFrameDefault call (3.11: its _PyCFrame; 3.12, 3.13: its entry frame, owned
	 * by the C stack), so user space finds the native frame that runs it by stack address;
	 * 0 when unknown (other frames, 3.9, 3.10). */
	__u64 cstack[PY_MAX_FRAMES];
};

#endif
