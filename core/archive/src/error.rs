//! Archive errors.

use std::path::PathBuf;

/// What went wrong reading or writing an archive.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArchiveError {
    /// An I/O operation failed.
    #[error("failed to {action} {}: {source}", path.display())]
    Io {
        /// What was being done ("read", "create", "write").
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The path holds no archive.
    #[error("failed to open archive {}: {reason}", path.display())]
    NotAnArchive {
        /// The path given.
        path: PathBuf,
        /// Why it is not one.
        reason: String,
    },
    /// The archive was written in a format version this reader does not speak.
    #[error(
        "failed to open archive {}: format version {found}, this xpuprof reads versions 1 to {supported}",
        path.display()
    )]
    Version {
        /// The archive file.
        path: PathBuf,
        /// The version in the file.
        found: u32,
        /// The newest version this reader speaks (it reads every older one).
        supported: u32,
    },
    /// The file is damaged or truncated from this byte on; everything before was readable.
    #[error("archive {} is damaged at byte {offset}: {reason}", path.display())]
    Corrupt {
        /// The archive file.
        path: PathBuf,
        /// Byte offset in the file.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
}

impl ArchiveError {
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io { action, path: path.into(), source }
    }

    pub(crate) fn corrupt(path: impl Into<PathBuf>, offset: u64, reason: impl Into<String>) -> Self {
        Self::Corrupt { path: path.into(), offset, reason: reason.into() }
    }
}
