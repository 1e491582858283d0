//! Finding plugin files: `--plugin-dir`, `XPUPROF_PLUGIN_PATH`, the config file, then the
//! directories the `xpuprof` binary was installed with.

use std::fs;
use std::path::{Path, PathBuf};

/// Plugin libraries are named `libxpuprof_plugin_<name>.so`.
pub const FILE_PREFIX: &str = "libxpuprof_plugin_";
/// Plugin library extension.
pub const FILE_SUFFIX: &str = ".so";

/// Where to look for plugins, in priority order.
#[derive(Debug, Clone, Default)]
pub struct SearchPath {
    /// Directories (or single plugin files), highest priority first, each with where it came from.
    pub dirs: Vec<(PathBuf, &'static str)>,
}

impl SearchPath {
    /// Builds the search path from the command line, the environment, the config file and the
    /// install location, in that order.
    pub fn new(cli_dirs: &[PathBuf], env: Option<&str>, config_dirs: &[PathBuf]) -> Self {
        let mut dirs: Vec<(PathBuf, &'static str)> = Vec::new();
        dirs.extend(cli_dirs.iter().map(|d| (d.clone(), "--plugin-dir")));
        if let Some(env) = env {
            dirs.extend(
                env.split(':').filter(|s| !s.is_empty()).map(|d| (PathBuf::from(d), "XPUPROF_PLUGIN_PATH")),
            );
        }
        dirs.extend(config_dirs.iter().map(|d| (d.clone(), "config file")));
        dirs.extend(install_dirs().into_iter().map(|d| (d, "install directory")));
        let mut seen = std::collections::HashSet::new();
        dirs.retain(|(d, _)| seen.insert(d.clone()));
        Self { dirs }
    }
}

/// The directories that ship with the binary: next to it (a cargo `target/<profile>` layout)
/// and `<prefix>/lib/xpuprof/plugins` for an installed `<prefix>/bin/xpuprof`.
pub fn install_dirs() -> Vec<PathBuf> {
    let Ok(exe) = std::env::current_exe() else { return Vec::new() };
    let Some(bin) = exe.parent() else { return Vec::new() };
    let mut out = vec![bin.to_path_buf()];
    if let Some(prefix) = bin.parent() {
        out.push(prefix.join("lib/xpuprof/plugins"));
    }
    out
}

/// A plugin file that was found, or a directory problem.
#[derive(Debug, Clone)]
pub enum Found {
    /// A candidate plugin library.
    File(PathBuf),
    /// A directory that was named explicitly but cannot be read.
    BadDir {
        /// The directory.
        dir: PathBuf,
        /// Where it was named.
        origin: &'static str,
        /// Why it cannot be used.
        reason: String,
    },
}

/// Lists candidate plugin files in every directory of `path`, and the files it names directly
/// (an entry of `--plugin-dir`, `XPUPROF_PLUGIN_PATH` or the config may be one plugin file, as
/// the tests use it for their test plugins, which no build ships). Directories named explicitly
/// (command line, environment, config) that are missing are reported; a missing install
/// directory is not.
pub fn scan(path: &SearchPath) -> Vec<Found> {
    let mut out = Vec::new();
    for (dir, origin) in &path.dirs {
        // An entry may name one plugin file (whatever its name) instead of a directory.
        if dir.is_file() {
            out.push(Found::File(dir.clone()));
            continue;
        }
        let entries = match fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) => {
                if *origin != "install directory" {
                    out.push(Found::BadDir { dir: dir.clone(), origin, reason: e.to_string() });
                }
                continue;
            }
        };
        let mut files: Vec<PathBuf> =
            entries.filter_map(Result::ok).map(|e| e.path()).filter(|p| is_plugin_file_name(p)).collect();
        files.sort();
        out.extend(files.into_iter().map(Found::File));
    }
    out
}

/// One entry of the search path as `xpuprof plugins -v` shows it: the files it held.
#[derive(Debug, Clone)]
pub struct Searched {
    /// The directory (or plugin file) searched.
    pub dir: PathBuf,
    /// Where it was named (`--plugin-dir`, `XPUPROF_PLUGIN_PATH`, `config file`, `install directory`).
    pub origin: &'static str,
    /// Its files (sorted; folders left out), each with whether it is a candidate [`scan`] takes;
    /// or why it cannot be read.
    pub files: Result<Vec<(PathBuf, bool)>, String>,
}

/// What each entry of `path` held, for the listing; [`scan`] takes the candidates of it.
pub fn survey(path: &SearchPath) -> Vec<Searched> {
    let survey_one = |dir: &Path| -> Result<Vec<(PathBuf, bool)>, String> {
        if dir.is_file() {
            return Ok(vec![(dir.to_path_buf(), true)]);
        }
        let entries = fs::read_dir(dir).map_err(|e| e.to_string())?;
        let mut files: Vec<(PathBuf, bool)> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| !p.is_dir())
            .map(|p| {
                let candidate = is_plugin_file_name(&p);
                (p, candidate)
            })
            .collect();
        files.sort();
        Ok(files)
    };
    path.dirs
        .iter()
        .map(|(dir, origin)| Searched { dir: dir.clone(), origin, files: survey_one(dir) })
        .collect()
}

/// The plugin name a file's name stands for, `-` written `_`: `NAME` for
/// `libxpuprof_plugin_NAME.so`, and, for a file the search path names directly,
/// `libxpuprof_test_NAME.so`, `libNAME.so` or `NAME.so`. A file that cannot be loaded still
/// holds its name's place in the search order: a plugin of that name found later is not used in
/// its stead.
pub fn claimed_name(p: &Path) -> Option<String> {
    let stem = p.file_name()?.to_str()?.strip_suffix(FILE_SUFFIX)?;
    let stem = stem.strip_prefix("lib").unwrap_or(stem);
    let stem = ["xpuprof_plugin_", "xpuprof_test_"].iter().find_map(|x| stem.strip_prefix(x)).unwrap_or(stem);
    (!stem.is_empty()).then(|| stem.replace('-', "_"))
}

/// True for `libxpuprof_plugin_*.so`.
pub fn is_plugin_file_name(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(FILE_PREFIX) && n.ends_with(FILE_SUFFIX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_name_claims_its_plugin_name() {
        let claim = |p: &str| claimed_name(Path::new(p));
        assert_eq!(claim("/x/libxpuprof_plugin_folded.so").as_deref(), Some("folded"));
        assert_eq!(claim("/x/libxpuprof_test_stuck_sink.so").as_deref(), Some("stuck_sink"));
        assert_eq!(claim("/x/libmy-sink.so").as_deref(), Some("my_sink"));
        assert_eq!(claim("folded.so").as_deref(), Some("folded"));
        assert_eq!(claim("/x/plugins"), None);
        assert_eq!(claim("/x/lib.so"), None);
    }

    #[test]
    fn the_survey_lists_every_file_and_which_are_candidates() {
        let dir = std::env::temp_dir().join(format!("xpuprof-survey-{}", std::process::id()));
        fs::create_dir_all(dir.join("sub")).unwrap();
        for f in ["libxpuprof_plugin_a.so", "libother.so", "notes.txt"] {
            fs::write(dir.join(f), b"").unwrap();
        }
        let missing = dir.join("missing");
        let path = SearchPath { dirs: vec![(dir.clone(), "--plugin-dir"), (missing, "--plugin-dir")] };
        let got = survey(&path);
        let files = got[0].files.as_ref().unwrap();
        let names: Vec<_> =
            files.iter().map(|(p, c)| (p.file_name().unwrap().to_str().unwrap().to_owned(), *c)).collect();
        let want = [("libother.so", false), ("libxpuprof_plugin_a.so", true), ("notes.txt", false)];
        assert_eq!(names, want.map(|(n, c)| (n.to_owned(), c)));
        assert!(got[1].files.is_err());
        fs::remove_dir_all(&dir).unwrap();
    }
}
