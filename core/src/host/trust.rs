//! Whether a file may be loaded or read while xpuprof runs as root: the one implementation
//! lives in the SDK ([`xpuprof_sdk::trust`]) so that source plugins checking the agent library
//! they inject use the very same rules as the host's plugin, config and output checks.

pub use xpuprof_sdk::trust::{check_trusted_file, check_trusted_file_for};
