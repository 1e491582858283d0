/* Everything level-zero-sys binds: the core, tools and sysman APIs with their DDI tables (a
 * driver exports the *GetProcAddrTable functions that fill them), the loader's tracing layer
 * (zelTracer* and every per-function RegisterCallback) and the loader API. */
#include <level_zero/ze_api.h>
#include <level_zero/ze_ddi.h>
#include <level_zero/zet_api.h>
#include <level_zero/zet_ddi.h>
#include <level_zero/zes_api.h>
#include <level_zero/zes_ddi.h>
#include <level_zero/layers/zel_tracing_api.h>
#include <level_zero/layers/zel_tracing_register_cb.h>
#include <level_zero/loader/ze_loader.h>
