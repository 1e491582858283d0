/* Everything cupti-sys binds: the CUPTI activity and callback APIs, the callback ids, and the PC sampling API. */
#include <cupti.h>
#include <cupti_pcsampling.h>
