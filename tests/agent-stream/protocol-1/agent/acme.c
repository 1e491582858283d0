/* libacme.so: the fictitious runtime (see acme.h). Its launches only count. */
#include "acme.h"

#include <stdatomic.h>
#include <stddef.h>

static acme_callback subscriber;
static void *subscriber_data;
static atomic_uint next_correlation = 1;
static atomic_uint launched;

void acme_subscribe(acme_callback callback, void *user) {
    subscriber_data = user;
    subscriber = callback;
}

int acme_launch(const char *name) {
    unsigned correlation = atomic_fetch_add(&next_correlation, 1);
    if (subscriber != NULL) {
        subscriber(subscriber_data, 0, ACME_API_LAUNCH, correlation, 0);
    }
    (void)name; /* the device would run it */
    atomic_fetch_add(&launched, 1);
    if (subscriber != NULL) {
        subscriber(subscriber_data, 1, ACME_API_LAUNCH, correlation, 0);
    }
    return 0;
}
