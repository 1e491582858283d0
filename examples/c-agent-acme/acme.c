/* libacme.so: the fictitious runtime (see acme.h). Its launches count, and its "device" runs
 * each kernel for ACME_KERNEL_NS right after the launch returns. */
#define _POSIX_C_SOURCE 200809L
#include "acme.h"

#include <stdatomic.h>
#include <stddef.h>
#include <time.h>

static acme_callback subscriber;
static void *subscriber_data;
static atomic_uint next_correlation = 1;
static atomic_uint launched;
static acme_activity_callback activity;
static void *activity_data;

static uint64_t monotonic_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

void acme_subscribe_activity(acme_activity_callback callback, void *user) {
    activity_data = user;
    activity = callback;
}

void acme_subscribe(acme_callback callback, void *user) {
    subscriber_data = user;
    subscriber = callback;
}

int acme_launch(const char *name) {
    unsigned correlation = atomic_fetch_add(&next_correlation, 1);
    if (subscriber != NULL) {
        subscriber(subscriber_data, 0, ACME_API_LAUNCH, correlation, 0);
    }
    atomic_fetch_add(&launched, 1);
    if (subscriber != NULL) {
        subscriber(subscriber_data, 1, ACME_API_LAUNCH, correlation, 0);
    }
    /* The device runs the kernel once the launch returned, and says so. */
    if (activity != NULL) {
        uint64_t start = monotonic_ns();
        activity(activity_data, correlation, name, start, start + ACME_KERNEL_NS);
    }
    return 0;
}
