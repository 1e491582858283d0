/* The "Acme" accelerator runtime of the example: a launch API, and a callback API through which
 * a profiler's agent sees every call's entry and exit (as CUPTI's or Level Zero's tracing
 * layers do for real accelerators). */
#ifndef ACME_H
#define ACME_H

#ifdef __cplusplus
extern "C" {
#endif

/* API numbers the callbacks name. */
enum { ACME_API_LAUNCH = 1 };

/* Called at the entry (`exit` 0) and the exit (`exit` 1) of every API call, on the calling
 * thread; `correlation` is the call's id, unique in the process; `result` is set at exit. */
typedef void (*acme_callback)(void *user, int exit, unsigned api, unsigned correlation, int result);

/* Subscribes one callback (the last subscription wins). */
void acme_subscribe(acme_callback callback, void *user);

/* Launches kernel `name` on the accelerator; returns 0. */
int acme_launch(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* ACME_H */
