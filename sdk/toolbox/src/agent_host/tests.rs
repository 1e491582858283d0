use std::io::Write;
use std::os::unix::net::UnixStream;

use xpuprof_sdk::{Emitter, Logger};

use super::*;

/// Keeps complete lines per connection; the connections it saw end.
#[derive(Default)]
struct Lines {
    lines: Vec<(u64, String)>,
    ended: Vec<u64>,
}

impl StreamDecoder for Lines {
    type Stats = (Vec<(u64, String)>, Vec<u64>);

    fn feed(&mut self, conn: u64, buf: &[u8], _: &mut Emitter) -> usize {
        let used = buf.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        for l in buf[..used].split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            self.lines.push((conn, String::from_utf8_lossy(l).into_owned()));
        }
        used
    }

    fn end(&mut self, conn: u64, _: &mut Emitter) {
        self.ended.push(conn);
    }

    fn finish(self, _: &mut Emitter) -> Self::Stats {
        (self.lines, self.ended)
    }
}

#[test]
fn every_connection_is_read_whole_and_ended_and_the_folder_goes() {
    let mut host = AgentHost::<Lines>::new("test", "test", Logger::stderr());
    let sock = host.listen().unwrap();
    let dir = sock.parent().unwrap().to_path_buf();
    host.start(Lines::default(), Emitter::detached()).unwrap();
    let mut a = UnixStream::connect(&sock).unwrap();
    // A message split across writes is decoded once whole.
    a.write_all(b"one\ntw").unwrap();
    a.flush().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    a.write_all(b"o\n").unwrap();
    drop(a);
    let mut b = UnixStream::connect(&sock).unwrap();
    b.write_all(b"three\n").unwrap();
    drop(b);
    let (mut lines, mut ended) = host.stop().unwrap().unwrap();
    lines.sort();
    ended.sort();
    assert_eq!(lines, [(1, "one".to_string()), (1, "two".into()), (2, "three".into())]);
    assert_eq!(ended, [1, 2]);
    assert!(!dir.exists(), "{} is left behind", dir.display());
}

#[test]
fn start_before_listen_is_refused_and_stop_without_start_is_empty() {
    let mut host = AgentHost::<Lines>::new("test", "test", Logger::stderr());
    let err = host.start(Lines::default(), Emitter::detached()).unwrap_err();
    assert_eq!(err.to_string(), "test: start called before prepare");
    assert!(host.stop().unwrap().is_none());
}

#[test]
fn a_named_agent_that_does_not_exist_is_refused_by_name() {
    let loc = AgentLocator {
        file: "libnothing.so",
        env_var: "XPUPROF_TEST_NO_SUCH_AGENT",
        config_key: "[source.test] agent",
        package: "nothing",
        what: "test agent",
    };
    let err = loc.find(Some("/nonexistent/libnothing.so")).unwrap_err().to_string();
    assert!(err.contains("/nonexistent/libnothing.so named by [source.test] agent: no such file"), "{err}");
    let err = loc.find(None).unwrap_err().to_string();
    assert!(err.contains("cargo build -p nothing"), "{err}");
}

#[test]
fn loadable_tells_libraries_from_missing_ones() {
    assert!(loadable("libc.so.6"));
    assert!(!loadable("libxpuprof-no-such-library.so.9"));
}
