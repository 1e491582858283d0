//! The `[sink.dump]` table.

xpuprof_sdk::plugin_config! {
    /// The `[sink.dump]` table.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct DumpConfig {
        /// file the records are written to, in the output directory
        pub file: String = "records.jsonl";
        /// most records written (0: all); the rest are counted, not written
        pub limit: u64 = 0;
    }
}
