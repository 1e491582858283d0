/* Everything cupti-sys binds: the CUPTI activity and callback APIs and the callback ids. */
#include <cupti.h>
