/*
 * A backward-like engine thread for reuse_windows.py on the CUDA test double: a native thread
 * named pt_autograd_0 (as PyTorch's autograd engine threads are) that launches kernels through
 * xpuprof_double_launch while the Python thread that asked for them waits in engine_run (called
 * from a Python function named _engine_run_backward, so the agent attributes the launches to
 * that thread's Python stack). Build: cc -O1 -fPIC -shared engine_thread.c -o libengine.so -ldl
 * -lpthread.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sys/prctl.h>

static int (*launch)(const char *kernel);
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int todo;

/* Gradient "nodes" at two native depths, each launching from its own call site. */
__attribute__((noinline)) static void conv_backward(void) {
    launch("conv_grad_input_kernel");
    launch("conv_grad_weight_kernel");
}

__attribute__((noinline)) static void norm_backward(void) { launch("norm_grad_kernel"); }

__attribute__((noinline)) static void apply_node(int i) {
    if (i % 3 == 2) {
        norm_backward();
    } else {
        conv_backward();
    }
    __asm__ volatile("" ::: "memory");
}

static void *engine(void *arg) {
    (void)arg;
    prctl(PR_SET_NAME, "pt_autograd_0", 0, 0, 0);
    pthread_mutex_lock(&lock);
    for (;;) {
        while (todo == 0) {
            pthread_cond_wait(&changed, &lock);
        }
        for (int i = 0; i < todo; i++) {
            apply_node(i);
        }
        todo = 0;
        pthread_cond_broadcast(&changed);
    }
    return NULL;
}

/* Finds xpuprof_double_launch in the already loaded double `libcuda` and starts the thread. */
int engine_start(const char *libcuda) {
    pthread_t t;
    void *h = dlopen(libcuda, RTLD_NOW | RTLD_NOLOAD);
    if (h == NULL || (launch = (int (*)(const char *))dlsym(h, "xpuprof_double_launch")) == NULL) {
        return -1;
    }
    return pthread_create(&t, NULL, engine, NULL);
}

/* Has the engine thread apply `n` nodes; returns when it has. */
void engine_run(int n) {
    pthread_mutex_lock(&lock);
    todo = n;
    pthread_cond_broadcast(&changed);
    while (todo != 0) {
        pthread_cond_wait(&changed, &lock);
    }
    pthread_mutex_unlock(&lock);
}
