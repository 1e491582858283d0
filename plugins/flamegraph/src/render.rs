//! Renders folded lines as an interactive SVG with inferno, GPU frames in their own colours.

use std::io::{self, Write};

use inferno::flamegraph::color::{Color, PaletteMap};
use inferno::flamegraph::{self, Options};

/// Fixed colours of the marker frames and GPU work.
fn special_color(frame: &str) -> Option<Color> {
    let rgb = |r, g, b| Some(Color { r, g, b });
    if frame.starts_with("[GPU") {
        let kind = frame.split(']').next().unwrap_or(frame);
        return if kind.ends_with("_Kernel") {
            // Greens, varied per kernel so neighbours stay apart.
            let h = frame.bytes().fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
            rgb(40 + (h % 40) as u8, 170 + (h / 40 % 60) as u8, 60 + (h / 2400 % 40) as u8)
        } else if kind.ends_with("_Memcpy") {
            rgb(70, 130, 220)
        } else if kind.ends_with("_Memset") {
            rgb(150, 100, 210)
        } else {
            rgb(0, 170, 170)
        };
    }
    match frame {
        "[unknown launch site]" | "[no launch stack]" | "[unknown stack]" => rgb(160, 160, 160),
        "[off-cpu]" => rgb(120, 140, 170),
        _ => None,
    }
}

/// What the SVG says about itself.
#[derive(Debug, Clone)]
pub struct RenderOptions {
    /// Title at the top.
    pub title: String,
    /// Subtitle (the profiled command).
    pub subtitle: Option<String>,
    /// Image width in pixels.
    pub width: usize,
}

/// Writes the flame graph of `lines` (`stack weight`) to `out`. With no lines, writes inferno's
/// "no valid input" SVG and returns `Ok(false)`.
pub fn render(lines: &[String], ro: &RenderOptions, out: &mut dyn Write) -> io::Result<bool> {
    let mut palette = PaletteMap::default();
    for line in lines {
        for frame in line.rsplit_once(' ').map_or(line.as_str(), |(s, _)| s).split(';') {
            if let Some(c) = special_color(frame) {
                palette.insert(frame, c);
            }
        }
    }
    let mut opts = Options::default();
    opts.title = ro.title.clone();
    opts.subtitle = ro.subtitle.clone();
    opts.image_width = Some(ro.width);
    opts.count_name = "µs".to_owned();
    opts.hash = true;
    opts.deterministic = true;
    opts.palette_map = Some(&mut palette);
    match flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), out) {
        Ok(()) => Ok(true),
        Err(e) if lines.is_empty() && e.kind() == io::ErrorKind::InvalidData => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_frames_get_gpu_colours() {
        let k = special_color("[GPU_Kernel]gemm").unwrap();
        assert!(k.g > k.r && k.g > k.b, "{k:?}");
        assert_eq!(special_color("[GPU0_S7_Memcpy]HtoD"), Some(Color { r: 70, g: 130, b: 220 }));
        assert_eq!(special_color("main"), None);
    }
}
