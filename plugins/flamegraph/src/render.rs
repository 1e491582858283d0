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

/// What an empty flame graph says.
pub const NO_SAMPLES: &str = "no samples: no CPU samples and no GPU work were recorded";

/// Writes the flame graph of `lines` (`stack weight`) to `out`. With no lines, writes an SVG
/// that says so ([`NO_SAMPLES`]) and returns `Ok(false)`.
pub fn render(lines: &[String], ro: &RenderOptions, out: &mut dyn Write) -> io::Result<bool> {
    if lines.is_empty() {
        empty(ro, out)?;
        return Ok(false);
    }
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
    flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), out)?;
    Ok(true)
}

/// The SVG of a session with nothing to draw: its title and [`NO_SAMPLES`] (inferno's own
/// "ERROR: No valid input" would read as xpuprof failing).
fn empty(ro: &RenderOptions, out: &mut dyn Write) -> io::Result<()> {
    let text = |s: &str| s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let subtitle = ro.subtitle.as_deref().map(text).unwrap_or_default();
    write!(
        out,
        "<?xml version=\"1.0\" standalone=\"no\"?>\n\
         <svg version=\"1.1\" width=\"{w}\" height=\"110\" xmlns=\"http://www.w3.org/2000/svg\">\n\
         <rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"rgb(238,238,238)\"/>\n\
         <text x=\"50%\" y=\"26\" text-anchor=\"middle\" font-family=\"Verdana\" font-size=\"17\">{title}</text>\n\
         <text x=\"50%\" y=\"50\" text-anchor=\"middle\" font-family=\"Verdana\" font-size=\"12\" fill=\"rgb(160,160,160)\">{subtitle}</text>\n\
         <text x=\"50%\" y=\"84\" text-anchor=\"middle\" font-family=\"Verdana\" font-size=\"14\">{NO_SAMPLES}</text>\n\
         </svg>\n",
        w = ro.width,
        title = text(&ro.title),
    )
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
