//! Plugin discovery, loading and live instances.

pub mod discovery;
pub mod instance;
pub mod loader;

pub use discovery::SearchPath;
pub use instance::{Instance, SourceBatch};
pub use loader::{KeySpec, LoadFailure, LoadedPlugin, PluginMeta, Registry};
