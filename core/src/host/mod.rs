//! Plugin discovery, loading and live instances.

pub mod bounded;
pub mod cabi;
mod checks;
pub mod discovery;
pub mod elf;
pub mod instance;
pub mod loader;
pub mod sources;
pub mod trust;
pub mod worker;

pub use checks::{MachineChecks, PluginCheck};
pub use discovery::SearchPath;
pub use instance::{HostContext, Instance, SourceBatch};
pub use loader::{LoadFailure, LoadedPlugin, PluginEntry, PluginMeta, Registry};
pub use worker::{CallError, PluginThread};
