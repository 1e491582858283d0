//! The host's symbolizer on a module with debug information: every function of a generated C
//! program (built with `-g -O1`) resolved once by a fresh symbolizer, as a recording meets each
//! frame once, with the source file and line read from its DWARF line tables (`code_info`) and
//! without. The ratio of the two is what reading source places adds to the end of a recording.
//! Needs `cc` (CI installs it).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use object::{Object, ObjectSection, ObjectSymbol};
use xpuprof_core::pipeline::symbolizer::Symbolizer;

/// Functions in the generated program (a few MB of DWARF, like a mid-sized user library).
const FUNCTIONS: usize = 4_000;

/// Compiles a program of [`FUNCTIONS`] small functions spread over 40 files' worth of lines.
fn program(dir: &Path) -> PathBuf {
    let mut src = String::from("#include <stdio.h>\n");
    for i in 0..FUNCTIONS {
        let _ = writeln!(
            src,
            "__attribute__((noinline)) int f{i}(int x) {{\n  int y = x * {i} + 1;\n  if (y & 1) y ^= {i};\n  return y;\n}}"
        );
    }
    src.push_str("int main(int argc, char **argv) {\n  int s = 0;\n");
    for i in 0..FUNCTIONS {
        let _ = writeln!(src, "  s += f{i}(argc);");
    }
    src.push_str("  printf(\"%d\\n\", s);\n  return 0;\n}\n");
    let (c, exe) = (dir.join("many.c"), dir.join("many"));
    std::fs::write(&c, src).unwrap();
    let o = Command::new("cc").args(["-g", "-O1", "-o"]).arg(&exe).arg(&c).output();
    assert!(
        o.as_ref().is_ok_and(|o| o.status.success()),
        "failed to compile the benchmark program with cc: {o:?}"
    );
    exe
}

/// The file offset of every `fN` function's second byte.
fn offsets(exe: &Path) -> Vec<u64> {
    let bytes = std::fs::read(exe).unwrap();
    let obj = object::File::parse(&*bytes).unwrap();
    let text = obj.section_by_name(".text").unwrap();
    let (addr, off) = (text.address(), text.file_range().unwrap().0);
    obj.symbols()
        .filter(|s| s.name().is_ok_and(|n| n.starts_with('f') && n[1..].bytes().all(|b| b.is_ascii_digit())))
        .map(|s| s.address() + 1 - addr + off)
        .collect()
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let exe = program(dir.path());
    let offsets = offsets(&exe);
    assert_eq!(offsets.len(), FUNCTIONS);
    let mut g = c.benchmark_group("symbolize");
    g.throughput(Throughput::Elements(offsets.len() as u64));
    g.sample_size(10);
    for (label, code_info) in [("names", false), ("names_and_lines", true)] {
        g.bench_function(label, |b| {
            b.iter(|| {
                let mut s = Symbolizer::new(code_info);
                let mut lines = 0u64;
                for &o in &offsets {
                    lines += u64::from(s.file_offset(&exe, o).expect("resolves").line);
                }
                black_box(lines)
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
