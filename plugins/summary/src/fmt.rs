//! Formatting helpers for the text report: human units and aligned tables.

pub use xpuprof_toolbox::printable::escape;

/// A duration in ns with a unit that keeps 3–4 significant digits (`"912 ns"`, `"1.50 ms"`).
pub use xpuprof_sdk::clock::format_duration as ns;

/// A byte count in binary units (`"512 B"`, `"4.00 MiB"`).
pub fn bytes(v: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if v < 1024 {
        return format!("{v} B");
    }
    let mut f = v as f64 / 1024.0;
    let mut unit = 0;
    while f >= 1024.0 && unit + 1 < UNITS.len() {
        f /= 1024.0;
        unit += 1;
    }
    format!("{f:.2} {}", UNITS[unit])
}

/// A percentage with one decimal (`"78.5%"`).
pub fn pct(v: f64) -> String {
    format!("{v:.1}%")
}

/// Widest a text table is allowed to be: wider tables cut their widest left-aligned columns.
pub const MAX_WIDTH: usize = 160;

/// Narrowest a column is cut to.
const MIN_CUT_WIDTH: usize = 16;

/// A function name for a table: C++ template arguments, parameters and return type dropped
/// (`at::native::launch<...>(...)` → `at::native::launch`); a Python frame with an installed
/// file's path shortened (`forward (transformers/models/qwen3/modeling_qwen3.py:307)`), other
/// names that carry a location in parentheses after a space kept whole.
pub fn function(name: &str) -> String {
    if let Some(p) = crate::python::PyFrame::parse(name) {
        return crate::python::label(&p);
    }
    if name.contains(" (") || !(name.contains('<') || name.contains('(')) {
        return name.to_owned();
    }
    xpuprof_toolbox::kernel_name::short(name)
}

/// A stack as `leaf < caller < ...`, at most `depth` frames, each as [`function`].
pub fn stack(frames: &[String], depth: usize) -> String {
    if frames.is_empty() {
        return "[unknown stack]".to_owned();
    }
    let mut s = frames.iter().take(depth).map(|f| function(f)).collect::<Vec<_>>().join(" < ");
    if frames.len() > depth {
        s.push_str(" < ...");
    }
    s
}

/// A text table: first column left-aligned, the others right-aligned unless marked.
#[derive(Debug)]
pub struct Table {
    headers: Vec<&'static str>,
    left: Vec<bool>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers; columns whose header starts with `<` are
    /// left-aligned, those starting with `>` right-aligned (the mark is not printed). The first
    /// column is left-aligned unless marked `>`, the others right-aligned unless marked `<`.
    pub fn new(headers: &[&'static str]) -> Self {
        let left = headers
            .iter()
            .enumerate()
            .map(|(i, h)| (i == 0 && !h.starts_with('>')) || h.starts_with('<'))
            .collect();
        let headers = headers.iter().map(|h| h.trim_start_matches(['<', '>'])).collect();
        Self { headers, left, rows: Vec::new() }
    }

    /// Adds a row (as many cells as headers), each cell [`escape`]d: names are the profiled
    /// program's text.
    pub fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.headers.len());
        self.rows.push(cells.into_iter().map(|c| escape(&c).into_owned()).collect());
    }

    /// Renders the table, each line indented by two spaces, with trailing spaces trimmed, at
    /// most [`MAX_WIDTH`] columns: the widest left-aligned columns (names, stacks) are cut,
    /// their cells ending in `...` (the JSON report has every name whole).
    pub fn render(&self, out: &mut String) {
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for r in &self.rows {
            for (w, c) in widths.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        self.fit(&mut widths);
        let header: Vec<String> = self.headers.iter().map(|h| (*h).to_owned()).collect();
        for r in std::iter::once(&header).chain(&self.rows) {
            let mut line = String::from(" ");
            for ((c, w), left) in r.iter().zip(&widths).zip(&self.left) {
                let c = cut(c, *w);
                let pad = w - c.chars().count();
                line.push(' ');
                if *left {
                    line.push_str(&c);
                    line.extend(std::iter::repeat_n(' ', pad));
                } else {
                    line.extend(std::iter::repeat_n(' ', pad));
                    line.push_str(&c);
                }
                line.push(' ');
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
}

impl Table {
    /// Narrows the widest left-aligned columns until a line fits in [`MAX_WIDTH`].
    fn fit(&self, widths: &mut [usize]) {
        let total = |w: &[usize]| 1 + w.iter().map(|w| w + 2).sum::<usize>();
        while total(widths) > MAX_WIDTH {
            let widest = (0..widths.len())
                .filter(|&i| self.left[i] && widths[i] > MIN_CUT_WIDTH)
                .max_by_key(|&i| (widths[i], std::cmp::Reverse(i)));
            let Some(i) = widest else { return };
            let excess = total(widths) - MAX_WIDTH;
            // Cut the widest column down to the next widest (or by the excess), one step at a time.
            let next =
                (0..widths.len()).filter(|&j| j != i && self.left[j]).map(|j| widths[j]).max().unwrap_or(0);
            let step = excess.min(widths[i] - MIN_CUT_WIDTH).min((widths[i] - next).max(1));
            widths[i] -= step;
        }
    }
}

/// `cell` cut to `width` characters, ending in `...` when cut. A cell that starts with a frame
/// holding a location (`step (/home/u/proj/train.py:52) < main (…)`) loses the start of that
/// path first (`step (…/proj/train.py:52) < ...`): which line it names is what the reader needs.
fn cut(cell: &str, width: usize) -> std::borrow::Cow<'_, str> {
    if cell.chars().count() <= width {
        return std::borrow::Cow::Borrowed(cell);
    }
    // The first frame needs its whole width, and a stack `" < ..."` after it.
    let first_end = cell.find(" < ").unwrap_or(cell.len());
    let need = cell[..first_end].chars().count() + if first_end < cell.len() { 6 } else { 0 };
    let cell = match need.checked_sub(width).filter(|&n| n > 0) {
        Some(excess) => located_first_frame_cut(cell, excess).unwrap_or_else(|| cell.to_owned()),
        None => cell.to_owned(),
    };
    if cell.chars().count() <= width {
        return std::borrow::Cow::Owned(cell);
    }
    let mut s: String = cell.chars().take(width.saturating_sub(3)).collect();
    s.push_str("...");
    std::borrow::Cow::Owned(s)
}

/// `cell` with up to `excess` characters taken from the start of its first frame's path (its
/// `(path:line)` location), replaced by `…`; the file name and line always stay. `None` when the
/// first frame has no location.
fn located_first_frame_cut(cell: &str, excess: usize) -> Option<String> {
    let first_end = cell.find(" < ").unwrap_or(cell.len());
    let first = &cell[..first_end];
    let open = first.rfind(" (")? + 2;
    let location = first.strip_suffix(')')?.get(open..)?;
    let (path, line) = location.rsplit_once(':')?;
    if line.is_empty() || !line.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let file_start = path.rfind('/').map_or(0, |i| i + 1);
    let droppable = path[..file_start].chars().count();
    if droppable <= 1 {
        return None;
    }
    // One character more to make room for the `…`.
    let drop = (excess + 1).min(droppable);
    // Cut at a directory: the kept part starts at a `/` (or is the file name).
    let mut kept: String = path.chars().skip(drop).collect();
    if !kept.starts_with('/') && drop < droppable {
        let to_slash = kept.find('/').unwrap_or(0);
        kept.drain(..to_slash);
    }
    Some(format!("{}…{kept}:{line}){}", &first[..open], &cell[first_end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(ns(999), "999 ns");
        assert_eq!(ns(1500), "1.50 µs");
        assert_eq!(ns(15_300_000), "15.30 ms");
        assert_eq!(ns(2_000_000_000), "2.000 s");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(4 << 20), "4.00 MiB");
    }

    #[test]
    fn table_aligns_columns() {
        let mut t = Table::new(&["Name", "Calls", "<Note"]);
        t.row(vec!["gpuMalloc".into(), "3".into(), "x".into()]);
        t.row(vec!["f".into(), "100".into(), "long".into()]);
        let mut s = String::new();
        t.render(&mut s);
        assert_eq!(s, "  Name       Calls  Note\n  gpuMalloc      3  x\n  f            100  long\n");
    }

    #[test]
    fn cells_holding_escapes_and_line_breaks_print_escaped() {
        let mut t = Table::new(&["Name", "Calls"]);
        t.row(vec!["evil\x1b[2J\nforged".into(), "1".into()]);
        let mut s = String::new();
        t.render(&mut s);
        assert_eq!(s, "  Name                   Calls\n  evil\\u{1b}[2J\\nforged      1\n");
    }

    #[test]
    fn wide_tables_cut_their_widest_text_columns_to_fit() {
        let mut t = Table::new(&["Kernel", "Launches", "<Launched from"]);
        t.row(vec!["k".repeat(120), "3".into(), "s".repeat(200)]);
        t.row(vec!["short".into(), "12".into(), "main".into()]);
        let mut s = String::new();
        t.render(&mut s);
        for line in s.lines() {
            assert!(line.chars().count() <= MAX_WIDTH, "{} columns: {line}", line.chars().count());
        }
        assert!(s.contains("kkk...") && s.contains("sss...") && s.contains("  short "), "{s}");
    }

    #[test]
    fn a_cut_frame_keeps_its_file_and_line() {
        let cell =
            "train_step.<locals>.step (/work/main/tests/workloads/torch/real_bench.py:52) < main (/w/x.py:9)";
        assert_eq!(
            cut(cell, 90),
            "train_step.<locals>.step (/work/main/tests/workloads/torch/real_bench.py:52) < main (/w..."
        );
        assert_eq!(cut(cell, 60), "train_step.<locals>.step (…/torch/real_bench.py:52) < mai...");
        assert_eq!(cut(cell, 50), "train_step.<locals>.step (…real_bench.py:52) < ...");
        assert_eq!(cut(cell, 30), "train_step.<locals>.step (…...", "the file name is not cut");
        let line = "train_step.<locals>.step (/work/main/tests/workloads/torch/real_bench.py:52)";
        assert_eq!(cut(line, 63), "train_step.<locals>.step (…/workloads/torch/real_bench.py:52)");
        assert_eq!(cut("a_kernel_name_that_is_long", 10), "a_kerne...");
        assert_eq!(cut("f (x.py:3) < g (y.py:1)", 12), "f (x.py:3...", "no directory to drop");
    }

    #[test]
    fn functions_lose_templates_and_parameters_but_not_locations() {
        assert_eq!(function("at::native::launch<float, 4>(int, float*)"), "at::native::launch");
        assert_eq!(function("forward (model.py:12)"), "forward (model.py:12)");
        assert_eq!(
            function("f (/usr/lib/python3.12/site-packages/torch/nn/functional.py:7)"),
            "f (torch/nn/functional.py:7)"
        );
        assert_eq!(function("libgpu.so.1+0x340855"), "libgpu.so.1+0x340855");
    }
}
