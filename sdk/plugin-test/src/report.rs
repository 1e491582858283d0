//! The report of a check, read back from what `xpuprof check-plugin` prints: one line per
//! finding (its [`Severity::mark`], a space, `RULE: MESSAGE`), then a verdict line naming the
//! plugin.

use std::fmt;

/// How serious a finding is. xpuprof's checker uses this same type, so the marks it prints are
/// the marks read back here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// A check that passed (shown so the author sees what was covered).
    Pass,
    /// Works today but is fragile or surprising (a slow call, no records at all).
    Warning,
    /// Breaks the contract: the host would refuse it, lose data or show wrong results.
    Error,
}

impl Severity {
    /// Every severity.
    pub const ALL: [Self; 3] = [Self::Pass, Self::Warning, Self::Error];

    /// The 7 characters that start a finding's line in the report, before a space and the rule.
    pub const fn mark(self) -> &'static str {
        match self {
            Self::Pass => "ok     ",
            Self::Warning => "warning",
            Self::Error => "ERROR  ",
        }
    }
}

/// One finding of the check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// How it counts.
    pub severity: Severity,
    /// The rule, in the plugin author's terms ("every id is defined before its first use").
    pub rule: String,
    /// What was seen, and what to do about it.
    pub message: String,
}

/// What `xpuprof check-plugin` found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The plugin's name, when the library loaded far enough to say it.
    pub plugin: Option<String>,
    /// Every finding, in the order of the check.
    pub findings: Vec<Finding>,
    /// The report as xpuprof printed it.
    pub text: String,
    /// Whether `xpuprof check-plugin` passed the plugin (its exit status).
    pub passed: bool,
}

impl Report {
    /// Reads the printed report; `passed` is the check's verdict (its exit status).
    pub fn parse(text: &str, passed: bool) -> Self {
        let mut r = Self { text: text.to_owned(), passed, ..Self::default() };
        for line in text.lines() {
            let finding = Severity::ALL
                .into_iter()
                .find_map(|s| line.strip_prefix(s.mark()).and_then(|r| r.strip_prefix(' ')).map(|r| (s, r)));
            let Some((severity, rest)) = finding else {
                if let Some((name, _)) = line
                    .split_once(" passes the conformance check")
                    .or_else(|| line.split_once(" fails the conformance check"))
                {
                    r.plugin = Some(name.to_owned()).filter(|n| n != "the plugin");
                }
                continue;
            };
            let (rule, message) = rest.split_once(": ").unwrap_or((rest, ""));
            r.findings.push(Finding { severity, rule: rule.to_owned(), message: message.to_owned() });
        }
        // A report without a verdict (the child died before it) never passes.
        let clean = r.errors().next().is_none();
        r.passed &= clean;
        r
    }

    /// The errors.
    pub fn errors(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.severity == Severity::Error)
    }

    /// The warnings.
    pub fn warnings(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.severity == Severity::Warning)
    }

    /// True when nothing breaks the contract.
    pub fn passed(&self) -> bool {
        self.passed
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_findings_and_the_verdict() {
        let text = "ok      the library loads as an xpuprof plugin: source `acme`, ABI 1\n\
                    warning calls return in time: start took 2 s\n\
                    ERROR   ids: string 3 used before its definition: define it first (2 times; the first shown)\n\
                    acme fails the conformance check: 1 errors, 1 warnings\n";
        let r = Report::parse(text, false);
        assert_eq!(r.plugin.as_deref(), Some("acme"));
        assert_eq!(r.findings.len(), 3);
        assert_eq!((r.errors().count(), r.warnings().count()), (1, 1));
        assert_eq!(r.findings[2].rule, "ids");
        assert!(r.findings[2].message.starts_with("string 3 used before its definition: define"));
        assert!(!r.passed());
        assert_eq!(r.to_string(), text);
    }

    #[test]
    fn an_error_line_fails_even_with_a_zero_exit() {
        let r = Report::parse("ERROR   the plugin does not crash: signal 11\n", true);
        assert!(!r.passed() && r.plugin.is_none());
    }
}
