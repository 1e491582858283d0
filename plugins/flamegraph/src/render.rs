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
    /// What an empty graph says instead (see [`NO_SAMPLES`]).
    pub empty: String,
}

/// What an empty flame graph of every view says.
pub const NO_SAMPLES: &str = "no samples: no CPU samples and no GPU work were recorded";

/// Writes the flame graph of `lines` (`stack weight`) to `out`, the tooltip (and search text)
/// of each frame named in `descriptions` (`(frame, description)`, e.g. a short kernel name and
/// its full name with its devices) replaced by its description. With no lines, writes an SVG
/// that says `ro.empty` and returns `Ok(false)`.
pub fn render(
    lines: &[String],
    descriptions: &[(String, String)],
    ro: &RenderOptions,
    out: &mut dyn Write,
) -> io::Result<bool> {
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
    let mut svg = Vec::new();
    flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), &mut svg)?;
    let svg = String::from_utf8(svg).map_err(io::Error::other)?;
    out.write_all(describe_frames(&svg, descriptions).as_bytes())?;
    Ok(true)
}

/// XML text as inferno (quick-xml) escapes it.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\'', "&apos;")
        .replace('"', "&quot;")
}

/// Replaces the frame name in each `<title>NAME (N µs, P%)</title>` that `descriptions` names,
/// in one pass over the SVG. The title is the tooltip, the details line and what the
/// flame graph's search matches, so the full kernel name is found there.
fn describe_frames(svg: &str, descriptions: &[(String, String)]) -> String {
    if descriptions.is_empty() {
        return svg.to_owned();
    }
    let map: std::collections::HashMap<String, String> =
        descriptions.iter().map(|(f, d)| (escape(f), escape(d))).collect();
    let mut out = String::with_capacity(svg.len() + svg.len() / 4);
    let mut rest = svg;
    while let Some(start) = rest.find("<title>") {
        let body = start + "<title>".len();
        let Some(len) = rest[body..].find("</title>") else { break };
        let title = &rest[body..body + len];
        out.push_str(&rest[..body]);
        match title.rfind(" (").and_then(|i| map.get(&title[..i]).map(|d| (d, &title[i..]))) {
            Some((description, counts)) => {
                out.push_str(description);
                out.push_str(counts);
            }
            None => out.push_str(title),
        }
        rest = &rest[body + len..];
    }
    out.push_str(rest);
    out
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
         <text x=\"50%\" y=\"84\" text-anchor=\"middle\" font-family=\"Verdana\" font-size=\"14\">{empty}</text>\n\
         </svg>\n",
        w = ro.width,
        title = text(&ro.title),
        empty = text(&ro.empty),
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

    #[test]
    fn described_frames_keep_their_counts() {
        let svg = "<g><title>[GPU_Kernel]k (120 µs, 50.00%)</title></g><g><title>main (240 µs, 100.00%)</title></g>";
        let d = [("[GPU_Kernel]k".to_owned(), "kernel void k<float>(float*) on GPU 0".to_owned())];
        assert_eq!(
            describe_frames(svg, &d),
            "<g><title>kernel void k&lt;float&gt;(float*) on GPU 0 (120 µs, 50.00%)</title></g>\
             <g><title>main (240 µs, 100.00%)</title></g>"
        );
    }
}
