//! Plugin discovery, loading and live instances.

pub mod bounded;
pub mod discovery;
pub mod elf;
pub mod instance;
pub mod loader;
pub mod trust;

pub use discovery::SearchPath;
pub use instance::{Instance, SourceBatch};
pub use loader::{KeySpec, LoadFailure, LoadedPlugin, PluginMeta, Registry};
