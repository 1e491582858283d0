//! Rendering a comparison as an aligned text table or a Markdown table. Names are the profiled
//! programs' text: every cell holding one is escaped ([`escape`]), and Markdown cells also
//! escape `|` and backticks ([`markdown_cell`]).

use super::compare::{Entry, RowStats, Status};
use super::{Comparison, Metric};
use xpuprof_sdk::clock::format_duration as ns;
use xpuprof_toolbox::printable::{escape, markdown_cell};

pub(super) fn status_name(s: Status) -> &'static str {
    match s {
        Status::Regressed => "regressed",
        Status::Improved => "improved",
        Status::Unchanged => "unchanged",
        Status::Added => "added",
        Status::Removed => "removed",
        Status::NotCompared => "not_compared",
    }
}

/// The time metric shown next to the counts (`total` when judging counts).
fn time_metric(cmp: &Comparison) -> Metric {
    match Metric::parse(cmp.metric) {
        Ok(Metric::Count) | Err(_) => Metric::Total,
        Ok(m) => m,
    }
}

/// The cells of one row: kind, name, count base/current/change, time base/current/change, status.
fn cells(e: &Entry, time: Metric) -> [String; 9] {
    let count = |s: Option<RowStats>| s.map_or("-".to_owned(), |s| s.count.to_string());
    let t = |s: Option<RowStats>| s.and_then(|s| s.metric(time)).map_or("-".to_owned(), ns);
    let count_change = match (e.base, e.current) {
        (Some(b), Some(c)) => format!("{:+}", c.count as i128 - b.count as i128),
        _ => "-".to_owned(),
    };
    let time_change = match (e.base.and_then(|b| b.metric(time)), e.current.and_then(|c| c.metric(time))) {
        (Some(0), Some(0)) => "+0.0%".to_owned(),
        (Some(0), Some(_)) => "new".to_owned(),
        (Some(b), Some(c)) => format!("{:+.1}%", (c as f64 - b as f64) * 100.0 / b as f64),
        _ => "-".to_owned(),
    };
    let mut name = e.name.clone();
    if let Some(site) = &e.launch_site {
        name = format!(
            "{name} @ {}",
            if site.is_empty() { "[unknown launch site]".into() } else { site.join(" < ") }
        );
    }
    let name = escape(&name).into_owned();
    [
        e.kind.to_owned(),
        name,
        count(e.base),
        count(e.current),
        count_change,
        t(e.base),
        t(e.current),
        time_change,
        status_name(e.status).replace('_', " "),
    ]
}

fn headline(cmp: &Comparison) -> String {
    let n = |s: &str| cmp.counts.get(s).copied().unwrap_or(0);
    format!(
        "{} regressed, {} improved, {} unchanged, {} added, {} removed (metric {}, threshold {}%)",
        n("regressed"),
        n("improved"),
        n("unchanged"),
        n("added"),
        n("removed"),
        cmp.metric,
        cmp.threshold_pct
    )
}

pub(super) fn render_text(cmp: &Comparison) -> String {
    let time = time_metric(cmp);
    let t = time.name();
    let headers = [
        "Kind",
        "Name",
        "Count base",
        "Count now",
        "Change",
        &format!("{t} base"),
        &format!("{t} now"),
        "Change",
        "Status",
    ]
    .map(str::to_owned);
    let rows: Vec<[String; 9]> = cmp.entries.iter().map(|e| cells(e, time)).collect();
    let mut widths = headers.clone().map(|h| h.chars().count());
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = format!("xpuprof diff: {} -> {}\n", cmp.base.display(), cmp.current.display());
    for r in std::iter::once(&headers).chain(&rows) {
        let mut line = String::new();
        for (i, (c, w)) in r.iter().zip(widths).enumerate() {
            let pad = " ".repeat(w - c.chars().count());
            let cell = if i < 2 || i == 8 { format!("{c}{pad}") } else { format!("{pad}{c}") };
            line.push_str("  ");
            line.push_str(&cell);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str(&headline(cmp));
    out.push('\n');
    out
}

pub(super) fn render_markdown(cmp: &Comparison) -> String {
    let time = time_metric(cmp);
    let t = time.name();
    let verdict = if cmp.regressed { ":x: regression" } else { ":white_check_mark: no regression" };
    let mut out = format!("### xpuprof diff: {verdict}\n\n{}\n\n", headline(cmp));
    out.push_str(&format!(
        "| Kind | Name | Count base | Count now | Change | {t} base | {t} now | Change | Status |\n"
    ));
    out.push_str("|---|---|---:|---:|---:|---:|---:|---:|---|\n");
    for e in &cmp.entries {
        let mut c = cells(e, time);
        c[1] = format!("`{}`", markdown_cell(&c[1]));
        if e.status == Status::Regressed {
            c[8] = format!("**{}**", c[8]);
        }
        out.push_str(&format!("| {} |\n", c.join(" | ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// A comparison of one kernel whose name sets the terminal's title, clears the screen,
    /// forges a line and holds Markdown's `|` and backtick.
    fn comparison() -> Comparison {
        let stats =
            RowStats { count: 3, total_ns: 3000, mean_ns: 1000, p50_ns: Some(1000), p99_ns: Some(1000) };
        Comparison {
            schema_version: 1,
            base: "base.json".into(),
            current: "current.json".into(),
            metric: "total",
            threshold_pct: 10.0,
            regressed: false,
            counts: BTreeMap::new(),
            entries: vec![Entry {
                kind: "kernel",
                name: "evil\x1b]0;pwned\x07|`x`\nxpuprof diff: 0 regressed".into(),
                launch_site: Some(vec!["main\r".into()]),
                status: Status::Unchanged,
                base: Some(stats),
                current: Some(stats),
                change_pct: Some(0.0),
            }],
        }
    }

    fn assert_clean(text: &str) {
        assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "a control character:\n{text:?}");
        assert!(!text.lines().any(|l| l.starts_with("xpuprof diff: 0 regressed")), "a forged line:\n{text}");
    }

    #[test]
    fn text_tables_print_names_escaped() {
        let text = render_text(&comparison());
        assert_clean(&text);
        assert!(
            text.contains("evil\\u{1b}]0;pwned\\u{7}|`x`\\nxpuprof diff: 0 regressed @ main\\r"),
            "{text}"
        );
    }

    #[test]
    fn markdown_tables_print_names_escaped_in_one_cell() {
        let md = render_markdown(&comparison());
        assert_clean(&md);
        let row = md.lines().find(|l| l.starts_with("| kernel |")).expect(&md);
        assert!(
            row.contains("| `evil\\u{1b}]0;pwned\\u{7}\\|'x'\\nxpuprof diff: 0 regressed @ main\\r` |"),
            "{row}"
        );
        assert_eq!(row.matches(" | ").count(), 8, "nine cells: {row}");
    }
}
