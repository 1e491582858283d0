//! The SASS text of sampled instructions: NVIDIA's disassembler (`nvdisasm -c -gi`), run by the
//! host on a cubin the first time one of its kernels is sampled, while recording, where the CUDA
//! toolkit is installed. Its listing gives, per kernel and instruction offset, the instruction's
//! text and — with `-gi` — the chain of call sites where the instruction's line is code inlined
//! into the kernel (a Triton kernel's own line around the library line `.debug_line` names).
//! The text goes into the samples' records, so a report elsewhere needs neither the cubin nor
//! the toolkit.
//!
//! A listing looks like this (`-c`: code sections only; `-g`/`-gi`: source lines as comments):
//!
//! ```text
//!         .section        .text._Z5chainPfi,"ax",@progbits
//! _Z5chainPfi:
//!         //## File "/src/pc_stalls.cu", line 37
//!         /*0170*/                   FFMA R5, R2, R5, 9.9999997473787516356e-05 ;
//!         //## File "/src/kernel.py", line 12 inlined at "/src/model.py", line 40
//! ```
//!
//! Only what is needed is read: the section (the kernel), the instruction lines and the file
//! comments; any other line is skipped, so a newer nvdisasm's additions do not break it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The longest one disassembly may take before it is abandoned.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Why a cubin could not be disassembled.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SassError {
    /// Writing the cubin to a temporary file, or starting or waiting for nvdisasm, failed.
    #[error("failed to run {tool} on the cubin: {cause}")]
    Io {
        /// The disassembler's path.
        tool: String,
        /// What failed.
        cause: std::io::Error,
    },
    /// nvdisasm exited with an error.
    #[error("{tool} failed ({status}): {stderr}")]
    Failed {
        /// The disassembler's path.
        tool: String,
        /// Its exit status.
        status: String,
        /// The start of its error output.
        stderr: String,
    },
    /// nvdisasm ran longer than [`TIMEOUT`].
    #[error("{tool} ran longer than {}s and was stopped", TIMEOUT.as_secs())]
    Timeout {
        /// The disassembler's path.
        tool: String,
    },
}

/// One instruction of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instruction {
    /// Its text without the final `;` (`FFMA R5, R2, R5, 9.99e-05`, `@!P0 BRA ...`).
    pub text: String,
    /// The outermost call site `(file, line)` when its source line is inlined code.
    pub call_site: Option<(String, u32)>,
}

/// A cubin's instructions: per kernel (mangled name), per offset.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Listing {
    kernels: HashMap<String, HashMap<u64, Instruction>>,
}

impl Listing {
    /// Reads nvdisasm's output.
    pub fn parse(text: &str) -> Self {
        let mut kernels: HashMap<String, HashMap<u64, Instruction>> = HashMap::new();
        let mut kernel: Option<String> = None;
        let mut call_site: Option<(String, u32)> = None;
        for line in text.lines() {
            let t = line.trim();
            // `.section NAME,...` (not `.sectionflags`, `.sectioninfo`).
            if let Some(rest) = t.strip_prefix(".section").filter(|r| r.starts_with([' ', '\t'])) {
                let name = rest.trim().split(',').next().unwrap_or("");
                kernel = name.strip_prefix(".text.").map(str::to_owned);
                call_site = None;
            } else if let Some(comment) = t.strip_prefix("//##") {
                call_site = outermost_call_site(comment);
            } else if let (Some(k), Some((offset, text))) = (&kernel, instruction(t)) {
                let i = Instruction { text, call_site: call_site.clone() };
                kernels.entry(k.clone()).or_default().insert(offset, i);
            }
        }
        Self { kernels }
    }

    /// The instruction of `kernel` at `offset`.
    pub fn get(&self, kernel: &str, offset: u64) -> Option<&Instruction> {
        self.kernels.get(kernel)?.get(&offset)
    }

    /// Instructions in all.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.kernels.values().map(HashMap::len).sum()
    }
}

/// `/*0170*/   FFMA R5, R2, R5, 9.99e-05 ;` → (0x170, `FFMA R5, R2, R5, 9.99e-05`).
fn instruction(t: &str) -> Option<(u64, String)> {
    let rest = t.strip_prefix("/*")?;
    let (hex, rest) = rest.split_once("*/")?;
    let offset = u64::from_str_radix(hex.trim(), 16).ok()?;
    // A trailing encoding comment (`-hex`) is not part of the instruction.
    let body = rest.split("/*").next().unwrap_or("").trim();
    let body = body.strip_suffix(';').unwrap_or(body).trim_end();
    (!body.is_empty()).then(|| (offset, squeeze(body)))
}

/// Runs of blanks as one space (nvdisasm aligns predicates with many).
fn squeeze(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The places of a `//## File "a", line 3 inlined at "b", line 9 ...` comment: the last one when
/// there are several (the outermost call site), none for a line that is not inlined.
fn outermost_call_site(comment: &str) -> Option<(String, u32)> {
    let mut places = Vec::new();
    let mut rest = comment;
    while let Some(open) = rest.find('"') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('"') else { break };
        let file = &after[..close];
        let tail = &after[close + 1..];
        let line = tail
            .trim_start_matches([',', ' '])
            .strip_prefix("line")
            .map(|l| l.trim_start().chars().take_while(char::is_ascii_digit).collect::<String>())
            .and_then(|d| d.parse::<u32>().ok());
        if let Some(line) = line {
            places.push((file.to_owned(), line));
        }
        rest = tail;
    }
    (places.len() > 1).then(|| places.pop()).flatten()
}

/// The disassembler found for this session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disassembler {
    tool: PathBuf,
}

impl Disassembler {
    /// The disassembler at `path`.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Self { tool: path.into() }
    }

    /// nvdisasm from `$CUDA_HOME/bin`, `$CUDA_PATH/bin`, `/usr/local/cuda/bin`, then `PATH`;
    /// `None` when none is there.
    pub fn find() -> Option<Self> {
        let env_dirs = ["CUDA_HOME", "CUDA_PATH"]
            .into_iter()
            .filter_map(std::env::var_os)
            .map(|d| PathBuf::from(d).join("bin"));
        let path_dirs = std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect::<Vec<_>>());
        env_dirs
            .chain(std::iter::once(PathBuf::from("/usr/local/cuda/bin")))
            .chain(path_dirs.into_iter().flatten())
            .map(|d| d.join("nvdisasm"))
            .find(|p| is_executable(p))
            .map(|tool| Self { tool })
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.tool
    }

    /// The listing of `cubin` (`nvdisasm -c -gi`; `-c -g`, without inlining chains, where
    /// that nvdisasm refuses `-gi`).
    pub fn disassemble(&self, cubin: &[u8]) -> Result<Listing, SassError> {
        let tool = self.tool.display().to_string();
        let io = |cause| SassError::Io { tool: tool.clone(), cause };
        let dir = std::env::temp_dir();
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let stem = format!("xpuprof-sass-{}-{n}-{:x}", std::process::id(), fastish_id(cubin));
        let files = ["cubin", "txt", "err"].map(|ext| dir.join(format!("{stem}.{ext}")));
        let _cleanup = Cleanup(files.to_vec());
        std::fs::write(&files[0], cubin).map_err(io)?;
        match self.run("-gi", &files) {
            Err(SassError::Failed { .. }) => self.run("-g", &files)?,
            other => other?,
        }
        let text = std::fs::read_to_string(&files[1]).map_err(io)?;
        Ok(Listing::parse(&text))
    }

    /// Runs `nvdisasm -c <lines> input > output 2> errors` (`files`), within [`TIMEOUT`].
    fn run(&self, lines: &str, [input, output, errors]: &[PathBuf; 3]) -> Result<(), SassError> {
        let tool = self.tool.display().to_string();
        let io = |cause| SassError::Io { tool: tool.clone(), cause };
        let mut child = Command::new(&self.tool)
            .args(["-c", lines])
            .arg(input)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(output).map_err(io)?)
            .stderr(std::fs::File::create(errors).map_err(io)?)
            .spawn()
            .map_err(io)?;
        let started = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().map_err(io)? {
                break s;
            }
            if started.elapsed() > TIMEOUT {
                let _ = child.kill();
                let _ = child.wait();
                return Err(SassError::Timeout { tool });
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        if status.success() {
            return Ok(());
        }
        let stderr = std::fs::read_to_string(errors).unwrap_or_default();
        let stderr: String = stderr.trim().chars().take(300).collect();
        Err(SassError::Failed { tool, status: status.to_string(), stderr })
    }
}

/// Removes its files when dropped.
struct Cleanup(Vec<PathBuf>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// A name for a cubin's temporary file (FNV-1a of its bytes).
fn fastish_id(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTING: &str = r#"
	.section	.text._Z5chainPfi,"ax",@progbits
	.sectionflags	@"SHF_BARRIERS=1"
	.sectioninfo	@"SHI_REGISTERS=24"
_Z5chainPfi:
	//## File "/src/pc_stalls.cu", line 33
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*00b0*/              @!P0 BRA `(.L_x_0) ;
.L_x_4:
	//## File "/lib/standard.py", line 263 inlined at "/lib/helpers.py", line 7 inlined at "/src/kernel.py", line 41
        /*0170*/                   FFMA R5, R2, R5, 9.9999997473787516356e-05 ;  /* 0x3851b71702057423 */
	.section	.text.other,"ax",@progbits
        /*0000*/                   EXIT ;
"#;

    #[test]
    fn a_listing_gives_each_instruction_and_its_outermost_call_site() {
        let l = Listing::parse(LISTING);
        assert_eq!(l.len(), 4);
        let i = l.get("_Z5chainPfi", 0xb0).unwrap();
        assert_eq!(i.text, "@!P0 BRA `(.L_x_0)");
        assert_eq!(i.call_site, None);
        let i = l.get("_Z5chainPfi", 0x170).unwrap();
        assert_eq!(i.text, "FFMA R5, R2, R5, 9.9999997473787516356e-05");
        assert_eq!(i.call_site, Some(("/src/kernel.py".to_owned(), 41)));
        assert_eq!(l.get("other", 0).unwrap().text, "EXIT");
        assert!(l.get("_Z5chainPfi", 0x10).is_none());
    }

    #[test]
    fn a_missing_or_failing_tool_is_an_error_naming_it() {
        let e = Disassembler::at("/nonexistent/nvdisasm").disassemble(b"\x7fELF").unwrap_err();
        assert!(e.to_string().contains("/nonexistent/nvdisasm"), "{e}");
        let e = Disassembler::at("/bin/false").disassemble(b"\x7fELF").unwrap_err();
        assert!(matches!(e, SassError::Failed { .. }), "{e}");
    }

    #[test]
    fn an_nvdisasm_refusing_gi_is_asked_for_g() {
        // A test double (no CUDA toolkit in CI) that knows only -g.
        let tool = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/doubles/nvdisasm-without-gi");
        let l = Disassembler::at(tool).disassemble(b"\x7fELF").unwrap();
        assert_eq!(l.get("k", 0x10).map(|i| i.text.as_str()), Some("EXIT"));
    }
}
