//! Names are the profiled program's text: a symbol or command holding a terminal escape and a
//! line break prints escaped in the stderr digest and in `summary.txt`, never raw.

use xpuprof_plugin_summary::config::SummaryConfig;
use xpuprof_plugin_summary::{digest, text, SummarySink};
use xpuprof_sdk::model::*;
use xpuprof_sdk::{Logger, SessionInfo};

/// A function name that sets the terminal's title, clears the screen and forges a line.
const EVIL: &str = "evil\x1b]0;pwned\x07\x1b[2J\nxpuprof: all good";
const SHOWN: &str = "evil\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\nxpuprof: all good";

fn session() -> xpuprof_plugin_summary::Summary {
    let info = SessionInfo { command: vec!["prog\x1b[31m".into(), "a\nb".into()], ..SessionInfo::default() };
    let mut s = SummarySink::new(SummaryConfig::default(), info, Logger::stderr());
    let mut recs = vec![
        Record::Str(StrDef::default().id(StrId(1)).text(EVIL.into())),
        Record::Frame(FrameDef::default().id(FrameId(1)).kind(FrameKind::Synthetic).pid(1).name(StrId(1))),
        Record::Stack(StackDef::default().id(StackId(1)).frames(vec![FrameId(1)])),
    ];
    recs.push(Record::CpuSample(
        CpuSample::default()
            .pid(1)
            .tid(1)
            .time(1_000)
            .kind(SampleKind::OnCpu)
            .weight(10_000_000)
            .stack(StackId(1)),
    ));
    s.add(&recs);
    s.report()
}

/// No control character but the line breaks between lines, and no line forged by a name.
fn assert_clean(text: &str, what: &str) {
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "{what} holds a control character:\n{text:?}"
    );
    assert!(
        !text.lines().any(|l| l.starts_with("xpuprof: all good")),
        "{what}: a name forged a line:\n{text}"
    );
}

#[test]
fn the_digest_prints_names_escaped() {
    let lines = digest::lines(&session(), &[]);
    for l in &lines {
        assert_clean(l, "the digest");
        assert!(!l.contains('\n'), "{l:?}");
    }
    assert!(lines[2].starts_with("top CPU functions (self): evil\\u{1b}]0;pwned"), "{}", lines[2]);
}

#[test]
fn summary_txt_prints_names_and_the_command_escaped() {
    let text = text::render(&session(), 10);
    assert_clean(&text, "summary.txt");
    assert!(text.contains(SHOWN), "{text}");
    assert!(text.contains("command:  prog\\u{1b}[31m a\\nb"), "{text}");
}
