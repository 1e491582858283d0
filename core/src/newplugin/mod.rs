//! `xpuprof new-plugin`: writes a plugin crate (Rust) or folder (C) that builds and passes the
//! conformance kit as generated, for the author to fill in; with `--agent`, a Rust source in the
//! two halves of xpuprof's GPU backends (`templates/agent/`: an in-target agent on the agent kit
//! and the host plugin decoding its stream), the start of `docs/architecture.md`'s "Adding a
//! backend".

use std::path::{Path, PathBuf};

use xpuprof_sdk::PluginKind;

/// The language of a new plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// A cdylib crate on `xpuprof-sdk`, with a conformance test.
    Rust,
    /// A C file on `xpuprof/plugin.h` and its Makefile.
    C,
}

/// What to generate.
#[derive(Debug, Clone)]
pub struct NewPlugin {
    /// Plugin name (letters, digits, `-`, `_`).
    pub name: String,
    /// Source or sink.
    pub kind: PluginKind,
    /// Rust or C.
    pub lang: Lang,
    /// A Rust source in two halves: an in-target agent on the agent kit and the host plugin
    /// that decodes its stream (the toolbox's `AgentSource`), as xpuprof's GPU backends are.
    pub agent: bool,
    /// The folder to create (it must not exist yet).
    pub dir: PathBuf,
    /// Where the SDK is.
    pub kit: Kit,
}

/// Where the plugin author's kit lies: the install layout of `scripts/install.sh`, or
/// xpuprof's repository.
#[derive(Debug, Clone)]
pub struct Kit {
    /// The `xpuprof-sdk` sources (Rust).
    pub sdk: PathBuf,
    /// The `xpuprof-plugin-test` sources (Rust).
    pub plugin_test: PathBuf,
    /// The directory holding `xpuprof/plugin.h` (C).
    pub include: PathBuf,
    /// The xpuprof that runs the conformance check (`make check`, the Rust crate's test).
    pub xpuprof: PathBuf,
}

impl Kit {
    /// The kit of the xpuprof at `exe`: its installation's (`<prefix>/share/xpuprof/sdk`,
    /// `<prefix>/share/xpuprof/plugin-test`, `<prefix>/include` beside `<prefix>/bin/xpuprof`)
    /// when they are there; else the repository it was built in while that still holds the
    /// SDK (`cargo run`, `target/debug/xpuprof`); else the installation's paths, which the
    /// request then reports missing.
    pub fn of(exe: &Path) -> Self {
        let prefix = exe.parent().and_then(Path::parent).unwrap_or(Path::new("/usr/local")).to_path_buf();
        let share = prefix.join("share/xpuprof");
        let installed = Self {
            sdk: share.join("sdk"),
            plugin_test: share.join("plugin-test"),
            include: prefix.join("include"),
            xpuprof: exe.to_path_buf(),
        };
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default();
        if installed.sdk.join("Cargo.toml").is_file() || !repo.join("sdk/Cargo.toml").is_file() {
            return installed;
        }
        Self {
            sdk: repo.join("sdk"),
            plugin_test: repo.join("sdk/plugin-test"),
            include: repo.join("sdk/include"),
            xpuprof: exe.to_path_buf(),
        }
    }

    /// The kit of the running xpuprof.
    pub fn here() -> Self {
        let exe = std::env::current_exe().and_then(|e| e.canonicalize());
        Self::of(&exe.unwrap_or_else(|_| PathBuf::from("/usr/local/bin/xpuprof")))
    }

    /// The dependency versions the SDK was built and tested with: `Cargo.lock` beside the SDK's
    /// folder (`<prefix>/share/xpuprof/Cargo.lock`, the repository's own).
    pub fn lock(&self) -> Option<PathBuf> {
        self.sdk.parent().map(|p| p.join("Cargo.lock")).filter(|p| p.is_file())
    }

    /// The installation's `xpuprof.pc` (`<include>/../lib/pkgconfig/xpuprof.pc`), if any.
    pub fn pkg_config(&self) -> Option<PathBuf> {
        self.include.parent().map(|p| p.join("lib/pkgconfig/xpuprof.pc")).filter(|p| p.is_file())
    }
}

/// The `[package] version` of the crate whose sources are in `dir`, for the template's pin;
/// `*` (any) when it cannot be read, which [`NewPlugin::create`] reports before it fills one.
fn crate_version(dir: &Path) -> String {
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).ok();
    let table = manifest.and_then(|m| m.parse::<toml::Table>().ok());
    let version = table.as_ref().and_then(|t| t.get("package")?.get("version")?.as_str().map(str::to_owned));
    version.unwrap_or_else(|| "*".to_owned())
}

/// The `xpuprof-plugin-test` sources next to the SDK at `sdk`: `<sdk>/plugin-test` in xpuprof's
/// repository, `<sdk>/../plugin-test` in the install layout.
pub fn plugin_test_near(sdk: &Path) -> PathBuf {
    let inside = sdk.join("plugin-test");
    match sdk.parent() {
        Some(p) if !inside.is_dir() && p.join("plugin-test").is_dir() => p.join("plugin-test"),
        _ => inside,
    }
}

/// `my-plugin` -> `MyPlugin`.
fn camel(name: &str) -> String {
    name.split(['-', '_'])
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
        })
        .collect()
}

impl NewPlugin {
    fn fill(&self, template: &str) -> String {
        let lib = self.name.replace('-', "_");
        // pkg-config with the installation's own xpuprof.pc (not whichever one PKG_CONFIG_PATH
        // finds first), or the include directory itself.
        let (cflags, cflags_from) = match self.kit.pkg_config() {
            Some(pc) => (
                format!("$(shell pkg-config --cflags {})", pc.display()),
                "the xpuprof.pc of the installation that generated this folder",
            ),
            None => {
                (format!("-I{}", self.kit.include.display()), "the headers this folder was generated from")
            }
        };
        let mut ty = camel(&self.name);
        if ty.starts_with(|c: char| c.is_ascii_digit()) {
            ty.insert(0, 'P');
        }
        template
            .replace("{{name}}", &self.name)
            .replace("{{lib}}", &lib)
            .replace("{{LIB}}", &lib.to_ascii_uppercase())
            .replace("{{Type}}", &ty)
            .replace("{{kind}}", self.kind.as_str())
            .replace("{{sdk_version}}", &crate_version(&self.kit.sdk))
            .replace("{{plugin_test_version}}", &crate_version(&self.kit.plugin_test))
            .replace("{{sdk}}", &self.kit.sdk.display().to_string())
            .replace("{{plugin_test}}", &self.kit.plugin_test.display().to_string())
            .replace("{{xpuprof}}", &self.kit.xpuprof.display().to_string())
            .replace("{{cflags_from}}", cflags_from)
            .replace("{{cflags}}", &cflags)
    }

    /// The files to write: path relative to the folder, contents.
    pub fn files(&self) -> Vec<(String, String)> {
        let lib = self.name.replace('-', "_");
        let source = self.kind == PluginKind::Source;
        match self.lang {
            Lang::Rust if self.agent => vec![
                ("Cargo.toml".into(), self.fill(include_str!("templates/agent/Cargo.toml.in"))),
                ("src/lib.rs".into(), self.fill(include_str!("templates/agent/lib.rs.in"))),
                ("agent/Cargo.toml".into(), self.fill(include_str!("templates/agent/agent-Cargo.toml.in"))),
                ("agent/src/lib.rs".into(), self.fill(include_str!("templates/agent/agent-lib.rs.in"))),
                ("wire/Cargo.toml".into(), self.fill(include_str!("templates/agent/wire-Cargo.toml.in"))),
                ("wire/src/lib.rs".into(), self.fill(include_str!("templates/agent/wire-lib.rs.in"))),
                (".gitignore".into(), "/target\n".into()),
            ],
            Lang::Rust => vec![
                ("Cargo.toml".into(), self.fill(include_str!("templates/Cargo.toml.in"))),
                (
                    "src/lib.rs".into(),
                    self.fill(if source {
                        include_str!("templates/source.rs.in")
                    } else {
                        include_str!("templates/sink.rs.in")
                    }),
                ),
                ("tests/conformance.rs".into(), self.fill(include_str!("templates/conformance.rs.in"))),
                (".cargo/config.toml".into(), self.fill(include_str!("templates/cargo-config.toml.in"))),
                (".gitignore".into(), "/target\n".into()),
            ],
            Lang::C => vec![
                (
                    format!("{lib}.c"),
                    self.fill(if source {
                        include_str!("templates/source.c.in")
                    } else {
                        include_str!("templates/sink.c.in")
                    }),
                ),
                ("Makefile".into(), self.fill(include_str!("templates/Makefile.in"))),
                (".gitignore".into(), "*.so\n".into()),
            ],
        }
    }

    /// Checks the request and writes the files; returns what to run next.
    pub fn write(&self) -> Result<String, String> {
        if self.name.is_empty()
            || self.name.len() > 64
            || self.name.contains(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        {
            return Err(format!(
                "invalid plugin name {:?}: use letters, digits, `-` and `_` (at most 64)",
                self.name
            ));
        }
        if self.dir.exists() {
            return Err(format!("{} already exists: give a new folder with --dir", self.dir.display()));
        }
        if self.agent && (self.lang != Lang::Rust || self.kind != PluginKind::Source) {
            return Err("--agent makes a Rust source: give --kind source --lang rust".into());
        }
        let needed = match self.lang {
            // The agent's crates are the repository's (the installed kit has the SDK alone).
            Lang::Rust if self.agent => ["", "toolbox", "wire", "agent-kit"]
                .iter()
                .map(|c| self.kit.sdk.join(c).join("Cargo.toml"))
                .collect(),
            Lang::Rust => [self.kit.sdk.join("Cargo.toml"), self.kit.plugin_test.join("Cargo.toml")].to_vec(),
            Lang::C => vec![self.kit.include.join("xpuprof/plugin.h")],
        };
        if let Some(missing) = needed.iter().find(|p| !p.is_file()) {
            return Err(format!(
                "cannot find {}: give the SDK's location with --sdk and --plugin-test (Rust) or --include (C)",
                missing.display()
            ));
        }
        for (rel, text) in self.files() {
            let path = self.dir.join(rel);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("failed to create {}: {e}", parent.display()))?;
            }
            std::fs::write(&path, text).map_err(|e| format!("failed to write {}: {e}", path.display()))?;
        }
        // The first build takes the versions the SDK was tested with (cargo drops the rest).
        if let (Lang::Rust, Some(lock)) = (self.lang, self.kit.lock()) {
            let to = self.dir.join("Cargo.lock");
            std::fs::copy(&lock, &to)
                .map_err(|e| format!("failed to copy {} to {}: {e}", lock.display(), to.display()))?;
        }
        let dir = self.dir.display();
        Ok(match self.lang {
            Lang::Rust if self.agent => format!(
                "cd {dir} && cargo build    # libxpuprof_plugin_{lib}.so and its agent libxpuprof_{lib}_agent.so\n\
                 xpuprof --plugin-dir {dir}/target/debug --source {name} ...",
                lib = self.name.replace('-', "_"),
                name = self.name
            ),
            Lang::Rust => format!(
                "cd {dir} && cargo build && cargo test    # target/debug/libxpuprof_plugin_{lib}.so, then the \
                 conformance kit\n\
                 xpuprof --plugin-dir {dir}/target/debug ...",
                lib = self.name.replace('-', "_")
            ),
            Lang::C => format!(
                "make -C {dir} check    # builds libxpuprof_plugin_{lib}.so and runs xpuprof check-plugin\n\
                 xpuprof --plugin-dir {dir} ...",
                lib = self.name.replace('-', "_")
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_pins_the_kit_s_own_versions() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let sdk = crate_version(&repo.join("sdk"));
        assert_eq!(sdk, xpuprof_sdk::abi::SDK_VERSION);
        assert!(crate_version(&repo.join("sdk/plugin-test")).starts_with("0."));
        assert_eq!(crate_version(Path::new("/nonexistent")), "*");
    }

    #[test]
    fn names_become_types_and_library_names() {
        assert_eq!(camel("my-npu_source"), "MyNpuSource");
        let p = NewPlugin {
            name: "my-npu".into(),
            kind: PluginKind::Source,
            lang: Lang::Rust,
            agent: false,
            dir: "x".into(),
            kit: Kit {
                sdk: "/sdk".into(),
                plugin_test: "/pt".into(),
                include: "/inc".into(),
                xpuprof: "/bin/xpuprof".into(),
            },
        };
        let files = p.files();
        let lib = &files.iter().find(|(f, _)| f == "src/lib.rs").unwrap().1;
        assert!(lib.contains("pub struct MyNpu {") && lib.contains("name: \"my-npu\""), "{lib}");
        let toml = &files[0].1;
        assert!(
            toml.contains("name = \"xpuprof_plugin_my_npu\"") && toml.contains("path = \"/sdk\""),
            "{toml}"
        );
        assert!(!files.iter().any(|(_, t)| t.contains("{{")), "every placeholder filled");
        assert!(toml.contains("xpuprof-sdk = \"=*\"") && toml.contains("[patch.crates-io]"), "{toml}");
        let agent = NewPlugin { agent: true, ..p }.files();
        let names: Vec<&str> = agent.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            names,
            [
                "Cargo.toml",
                "src/lib.rs",
                "agent/Cargo.toml",
                "agent/src/lib.rs",
                "wire/Cargo.toml",
                "wire/src/lib.rs",
                ".gitignore"
            ]
        );
        assert!(
            agent[1].1.contains("impl AgentBackend for MyNpu")
                && agent[1].1.contains("XPUPROF_MY_NPU_SOCKET")
        );
        assert!(
            agent[3].1.contains("XPUPROF_MY_NPU_SOCKET") && agent[2].1.contains("path = \"/sdk/agent-kit\"")
        );
        assert!(!agent.iter().any(|(_, t)| t.contains("{{")), "every placeholder filled");
    }
}
