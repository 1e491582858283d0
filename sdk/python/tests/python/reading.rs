//! Reading a live interpreter's frames from outside (the path eBPF samples take) and merging
//! them: a script blocked at a known line of a known call path.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};

use xpuprof_python::chain::{self, RawFrame};
use xpuprof_python::target::{Labels, Target};

use crate::interpreters::{self, fixture};

struct Blocked(Child);

impl Blocked {
    fn start(python: &std::path::Path) -> Blocked {
        let mut child = Command::new(python)
            .arg(fixture("nested.py"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start python");
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
        assert_eq!(line, "ready\n");
        // "ready" comes a line before the read it blocks in: wait until the main thread is in
        // that read(2) (syscall 0 on x86-64), or a loaded machine can catch it on line 8.
        let syscall = format!("/proc/{}/syscall", child.id());
        let start = std::time::Instant::now();
        while !std::fs::read_to_string(&syscall).is_ok_and(|s| s.starts_with("0 ")) {
            assert!(start.elapsed().as_secs() < 30, "the script never blocked in its read");
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        Blocked(child)
    }
}

impl Drop for Blocked {
    fn drop(&mut self) {
        let _ = self.0.stdin.take().map(|mut s| s.write_all(b"\n"));
        let _ = self.0.wait();
    }
}

#[test]
fn reads_the_call_path_and_lines_of_a_blocked_script_in_every_interpreter() {
    let script = fixture("nested.py").display().to_string();
    for python in interpreters::all() {
        let child = Blocked::start(&python);
        let pid = child.0.id();
        let target = Target::find(pid)
            .unwrap()
            .unwrap_or_else(|| panic!("{} not found in pid {pid}", python.display()));
        let threads = target.threads().unwrap();
        assert_eq!(threads.len(), 1, "{threads:?}");
        if target.layout.tstate_native_thread_id.is_some() {
            assert_eq!(threads[0].tid, pid, "the main thread's tid");
        }
        let mut raw = [RawFrame::default(); 32];
        let mem = xpuprof_python::memory::ProcessMemory { pid };
        let (n, more) =
            chain::walk(&mem, target.layout, threads[0].state, Some(target.code_type), &mut raw).unwrap();
        assert!(!more);
        let mut labels = Labels::default();
        let got: Vec<String> =
            raw[..n].iter().map(|f| labels.label(&target, f).unwrap().to_owned()).collect();
        let want = [
            format!("inner ({script}:9)"),
            format!("middle ({script}:13)"),
            format!("outer ({script}:17)"),
            format!("<module> ({script}:20)"),
        ];
        assert_eq!(got, want, "{} ({})", python.display(), target.layout.version);
        // One eval-loop call runs the whole path from 3.11 on; one per frame before.
        let entries: Vec<bool> = raw[..n].iter().map(|f| f.entry).collect();
        let per_frame = target.layout.version.minor < 11;
        assert_eq!(entries, [per_frame, per_frame, per_frame, true], "{}", target.layout.version);
        // From 3.11 on, the entry frame carries its eval-loop call's marker: a local of that
        // call, so an address in the main thread's stack.
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
        let stack = xpuprof_wire::maps::parse(&maps).into_iter().find(|m| m.path == "[stack]").unwrap();
        let marker = raw[n - 1].marker;
        if per_frame {
            assert_eq!(marker, 0, "{}: no marker before 3.11", target.layout.version);
        } else {
            assert!(
                (stack.start..stack.end).contains(&marker),
                "{}: marker {marker:#x} outside the stack {:#x}..{:#x}",
                target.layout.version,
                stack.start,
                stack.end
            );
        }
    }
}
