//! What a conformance check found, in the plugin author's terms.

use std::fmt;

/// How serious a finding is: the conformance kit's type, whose marks start the report's lines
/// (the kit reads them back).
pub use xpuprof_plugin_test::Severity;

/// One finding: the rule, what happened (first occurrence) and how often.
///
/// A problem is its rule and its message with the numbers left out: the same use of an
/// undefined string id twice is one problem seen twice, an undefined device and an undefined
/// stack are two problems, each shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Pass, warning or error.
    pub severity: Severity,
    /// The rule, short ("ids are defined before use").
    pub rule: &'static str,
    /// What was seen, with the fix when known.
    pub message: String,
    /// How many times it happened (1 for passes).
    pub count: u64,
}

/// Every finding of one check run, in the order they were made.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The plugin's name, once it loaded.
    pub plugin: Option<String>,
    /// The findings.
    pub findings: Vec<Finding>,
}

impl Report {
    /// Records a passed check.
    pub fn pass(&mut self, rule: &'static str, message: impl Into<String>) {
        self.push(Severity::Pass, rule, message.into());
    }

    /// Records a warning.
    pub fn warn(&mut self, rule: &'static str, message: impl Into<String>) {
        self.push(Severity::Warning, rule, message.into());
    }

    /// Records an error.
    pub fn error(&mut self, rule: &'static str, message: impl Into<String>) {
        self.push(Severity::Error, rule, message.into());
    }

    /// Records a finding; a repeat of a problem (the same rule, severity and message but for its
    /// numbers: ids, times, counts) only counts, and the first message is kept (it is the one
    /// to fix first). Different problems of one rule are each reported.
    pub fn push(&mut self, severity: Severity, rule: &'static str, message: String) {
        if severity != Severity::Pass {
            let key = problem(&message);
            if let Some(f) = self
                .findings
                .iter_mut()
                .find(|f| f.rule == rule && f.severity == severity && problem(&f.message) == key)
            {
                f.count += 1;
                return;
            }
        }
        self.findings.push(Finding { severity, rule, message, count: 1 });
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
        self.errors().next().is_none()
    }
}

/// A message with its numbers left out: what makes two findings the same problem.
fn problem(message: &str) -> String {
    message.chars().filter(|c| !c.is_ascii_digit()).collect()
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for x in &self.findings {
            let mark = x.severity.mark();
            let times =
                if x.count > 1 { format!(" ({} times; the first shown)", x.count) } else { String::new() };
            writeln!(f, "{mark} {}: {}{times}", x.rule, x.message)?;
        }
        let (e, w) = (self.errors().count(), self.warnings().count());
        let name = self.plugin.as_deref().unwrap_or("the plugin");
        if e == 0 {
            writeln!(f, "{name} passes the conformance check ({w} warnings)")
        } else {
            writeln!(f, "{name} fails the conformance check: {e} errors, {w} warnings")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_are_counted_under_their_first_message() {
        let mut r = Report::default();
        r.error("ids", "string 3 used before its definition");
        r.error("ids", "string 4 used before its definition");
        r.warn("slow", "start took 2 s");
        assert_eq!(r.findings.len(), 2);
        assert_eq!(r.findings[0].count, 2);
        assert!(!r.passed());
        let text = r.to_string();
        assert!(
            text.contains("ERROR   ids: string 3 used before its definition (2 times; the first shown)"),
            "{text}"
        );
        assert!(text.ends_with("fails the conformance check: 1 errors, 1 warnings\n"), "{text}");
    }

    #[test]
    fn different_problems_of_one_rule_are_each_shown() {
        let mut r = Report::default();
        r.error("ids", "DeviceOp uses device 2 in `device` before any DeviceDef defined it");
        r.error("ids", "LaunchSite uses stack 5 in `stack` before any StackDef defined it");
        r.error("ids", "LaunchSite uses stack 6 in `stack` before any StackDef defined it");
        assert_eq!(r.findings.iter().map(|f| f.count).collect::<Vec<_>>(), [1, 2]);
        let text = r.to_string();
        assert!(text.contains("ERROR   ids: DeviceOp uses device 2"), "{text}");
        assert!(text.contains(
            "ERROR   ids: LaunchSite uses stack 5 in `stack` before any StackDef defined it (2 times"
        ));
        assert!(text.ends_with("fails the conformance check: 2 errors, 0 warnings\n"), "{text}");
    }
}
