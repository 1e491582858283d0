/* A crash reporter for the device rounds (LD_PRELOAD): on SIGSEGV, SIGBUS or SIGABRT it writes the
 * faulting address, the registers, and every frame of the faulting thread as
 * `library+offset symbol` (dladdr) to $XPUPROF_SEGV_LOG (default: stderr), then lets the signal
 * kill the process as it would have. Python's faulthandler names only the Python frames; this
 * names the native one that faulted (the agent's, CUPTI's, XLA's), and the offsets symbolize
 * against the carried, symbol-keeping binaries (`addr2line -f -e .device-carry/LIB OFFSET`).
 * It runs on its own signal stack, so a stack overflow is reported too (fault address near sp).
 *
 * Build: cc -shared -fPIC -O1 -o segv_report.so scripts/gpu/segv_report.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

static int out_fd = 2;

static void frame(int i, void *pc) {
    char line[600];
    Dl_info info;
    int n;
    if (dladdr(pc, &info) != 0 && info.dli_fname != NULL) {
        n = snprintf(line, sizeof line, "#%-2d %p %s+%#lx %s\n", i, pc, info.dli_fname,
                     (unsigned long)((char *)pc - (char *)info.dli_fbase), info.dli_sname ? info.dli_sname : "?");
    } else {
        n = snprintf(line, sizeof line, "#%-2d %p ?\n", i, pc);
    }
    if (n > 0) {
        (void)!write(out_fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    }
}

static void on_fault(int sig, siginfo_t *si, void *ctx) {
    ucontext_t *uc = ctx;
    char head[300];
    void *pcs[64];
    int n, i, first;
#if defined(__x86_64__)
    void *ip = (void *)uc->uc_mcontext.gregs[REG_RIP];
    unsigned long sp = (unsigned long)uc->uc_mcontext.gregs[REG_RSP];
#else
    void *ip = NULL;
    unsigned long sp = 0;
    (void)uc;
#endif
    n = snprintf(head, sizeof head, "SEGV-REPORT signal %d code %d addr %p tid %ld sp %#lx (addr - sp %ld)\n", sig,
                 si->si_code, si->si_addr, (long)syscall(SYS_gettid), sp, (long)((unsigned long)si->si_addr - sp));
    (void)!write(out_fd, head, (size_t)n);
    frame(0, ip);
    /* backtrace() starts in this handler and the kernel's signal trampoline: the faulting
     * thread's own frames follow the one at the faulting instruction. */
    n = backtrace(pcs, 64);
    for (first = 0; first < n && pcs[first] != ip; first++) {
    }
    first = first < n ? first + 1 : 0;
    for (i = first; i < n; i++) {
        frame(i - first + 1, pcs[i]);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

__attribute__((constructor)) static void install(void) {
    static char alt[64 * 1024];
    stack_t ss;
    struct sigaction sa;
    const char *path = getenv("XPUPROF_SEGV_LOG");
    if (path != NULL && *path != '\0') {
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd >= 0) {
            out_fd = fd;
        }
    }
    ss.ss_sp = alt;
    ss.ss_size = sizeof alt;
    ss.ss_flags = 0;
    sigaltstack(&ss, NULL);
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGABRT, &sa, NULL);
}
