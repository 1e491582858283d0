//! The `levelzero` source end to end, without Intel hardware: the real `xpuprof` host runs the
//! C workloads of `plugins/levelzero/tests/workloads` through the **real** Level Zero loader and
//! tracing layer (`libze1`), with the project's test-double driver underneath
//! (`ZE_ENABLE_ALT_DRIVERS`, scripted by `XPUPROF_TEST_ZE_DRIVER`), and the agent preloaded
//! by the plugin. Checks exact launch stacks, scripted durations in the session clock,
//! one-to-many joins for executed lists, counted losses and golden sink outputs.

mod harness;
mod immediate;
mod processes;
mod python;
mod regular;
mod variants;
