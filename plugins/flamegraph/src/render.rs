//! Renders folded lines as an interactive SVG with inferno, GPU frames in their own colours.

use std::io::{self, Write};

use inferno::flamegraph::color::{Color, PaletteMap};
use inferno::flamegraph::{self, Options};

use crate::fold::{FrameClass, FrameInfo};

/// A number from `text`, to vary a colour per frame so neighbours stay apart.
fn vary(text: &str) -> u32 {
    text.bytes().fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)))
}

/// The colour of a frame of `class` named `frame`: GPU work green (kernels), blue (copies),
/// purple (memsets) or teal; Python frames pale yellow; a device runtime's or driver's frames
/// pink; interpreter internals (shown in the "all" view) beige; xpuprof's marker frames grey,
/// its own code in the target (`[xpuprof]`) grey-blue.
/// `None` for native code: inferno's warm palette.
fn class_color(frame: &str, class: FrameClass) -> Option<Color> {
    let rgb = |r, g, b| Some(Color { r, g, b });
    let h = vary(frame);
    match class {
        FrameClass::Gpu => gpu_color(frame),
        FrameClass::Python => {
            rgb(235 + (h % 15) as u8, 215 + (h / 15 % 25) as u8, 110 + (h / 375 % 40) as u8)
        }
        FrameClass::Runtime => {
            rgb(215 + (h % 20) as u8, 130 + (h / 20 % 25) as u8, 165 + (h / 500 % 25) as u8)
        }
        FrameClass::Interpreter | FrameClass::PythonPlumbing => {
            rgb(200 + (h % 15) as u8, 190 + (h / 15 % 15) as u8, 165 + (h / 225 % 15) as u8)
        }
        FrameClass::Marker if frame == "[off-cpu]" => rgb(120, 140, 170),
        FrameClass::Marker => rgb(160, 160, 160),
        FrameClass::Own => rgb(175, 175, 190),
        _ => None,
    }
}

/// The colour of a GPU frame by its kind (`[GPU…_Kernel]`, `_Memcpy`, `_Memset`, other).
fn gpu_color(frame: &str) -> Option<Color> {
    let rgb = |r, g, b| Some(Color { r, g, b });
    let kind = frame.split(']').next().unwrap_or(frame);
    if kind.ends_with("_Kernel") {
        // Greens, varied per kernel so neighbours stay apart.
        let h = vary(frame);
        rgb(40 + (h % 40) as u8, 170 + (h / 40 % 60) as u8, 60 + (h / 2400 % 40) as u8)
    } else if kind.ends_with("_Memcpy") {
        rgb(70, 130, 220)
    } else if kind.ends_with("_Memset") {
        rgb(150, 100, 210)
    } else {
        rgb(0, 170, 170)
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
    /// The unit of the weights, in tooltips (`µs`, `samples`).
    pub count_name: &'static str,
}

/// What an empty flame graph of every view says.
pub const NO_SAMPLES: &str = "no samples: no CPU samples and no GPU work were recorded";

/// Writes the flame graph of `lines` (`stack weight`) to `out`, each frame of `frames` coloured
/// by its class and its tooltip (which the details line shows and the search matches) the
/// frame's text followed by its description, if any (a short kernel name's full name and
/// devices, a shortened C++ name's parameters, the interpreter frames folded into it). The
/// SVG opens scrolled to its bottom, where the roots and the widest frames are. With no lines,
/// writes an SVG that says `ro.empty` and returns `Ok(false)`.
pub fn render(
    lines: &[String],
    frames: &[(String, FrameInfo)],
    ro: &RenderOptions,
    out: &mut dyn Write,
) -> io::Result<bool> {
    if lines.is_empty() {
        empty(ro, out)?;
        return Ok(false);
    }
    let mut palette = PaletteMap::default();
    for (frame, info) in frames {
        if let Some(c) = class_color(frame, info.class) {
            palette.insert(frame, c);
        }
    }
    let mut opts = Options::default();
    opts.title = ro.title.clone();
    opts.subtitle = ro.subtitle.clone();
    opts.image_width = Some(ro.width);
    opts.count_name = ro.count_name.to_owned();
    opts.hash = true;
    opts.deterministic = true;
    opts.palette_map = Some(&mut palette);
    let mut svg = Vec::new();
    flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), &mut svg)?;
    let svg = String::from_utf8(svg).map_err(io::Error::other)?;
    let descriptions: Vec<(&str, &str)> = frames
        .iter()
        .filter(|(_, i)| !i.description.is_empty())
        .map(|(f, i)| (f.as_str(), i.description.as_str()))
        .collect();
    let svg = describe_frames(&svg, &descriptions);
    let svg = match svg.rfind("</svg>") {
        Some(end) => format!("{}{OPEN_AT_ROOTS}{}", &svg[..end], &svg[end..]),
        None => svg,
    };
    out.write_all(svg.as_bytes())?;
    Ok(true)
}

/// Scrolls a tall graph to its bottom when it opens: a bottom-up flame graph's roots and widest
/// frames are there, and the top of a graph thousands of pixels tall is blank.
const OPEN_AT_ROOTS: &str = "<script type=\"text/ecmascript\"><![CDATA[window.addEventListener(\"load\", \
    function () { window.scrollTo(0, document.documentElement.getAttribute(\"height\") | 0); });]]></script>\n";

/// XML text as inferno (quick-xml) escapes it.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('\'', "&apos;")
        .replace('"', "&quot;")
}

/// Adds its description after the frame name in each `<title>NAME (N µs, P%)</title>` that
/// `descriptions` names, in one pass over the SVG: `NAME — description (N µs, P%)`. The title
/// is the tooltip, the details line and what the flame graph's search matches, so both the
/// label's text and the full kernel name are found there.
fn describe_frames(svg: &str, descriptions: &[(&str, &str)]) -> String {
    if descriptions.is_empty() {
        return svg.to_owned();
    }
    let map: std::collections::HashMap<String, String> =
        descriptions.iter().map(|(f, d)| (escape(f), escape(d))).collect();
    const DASH: &str = " — ";
    let mut out = String::with_capacity(svg.len() + svg.len() / 4);
    let mut rest = svg;
    while let Some(start) = rest.find("<title>") {
        let body = start + "<title>".len();
        let Some(len) = rest[body..].find("</title>") else { break };
        let title = &rest[body..body + len];
        out.push_str(&rest[..body]);
        match title.rfind(" (").and_then(|i| map.get(&title[..i]).map(|d| (d, &title[i..]))) {
            Some((description, counts)) => {
                out.push_str(&title[..title.len() - counts.len()]);
                out.push_str(DASH);
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
    fn frames_get_their_class_colours() {
        let k = class_color("[GPU_Kernel]gemm", FrameClass::Gpu).unwrap();
        assert!(k.g > k.r && k.g > k.b, "{k:?}");
        assert_eq!(
            class_color("[GPU0_S7_Memcpy]HtoD", FrameClass::Gpu),
            Some(Color { r: 70, g: 130, b: 220 })
        );
        assert_eq!(class_color("main", FrameClass::Native), None, "native code: inferno's warm palette");
        let py = class_color("forward (m.py:3)", FrameClass::Python).unwrap();
        let rt = class_color("launchKernel", FrameClass::Runtime).unwrap();
        assert!(py.r > 230 && py.g > 210 && py.b >= 110, "pale yellow: {py:?}");
        assert!(rt.r > 210 && rt.b > rt.g, "pink: {rt:?}");
        assert_eq!(
            class_color("[partial stack]", FrameClass::Marker),
            Some(Color { r: 160, g: 160, b: 160 })
        );
    }

    #[test]
    fn described_frames_keep_their_counts() {
        let svg = "<g><title>[GPU_Kernel]k (120 µs, 50.00%)</title></g><g><title>main (240 µs, 100.00%)</title></g>";
        let d = [("[GPU_Kernel]k", "kernel void k<float>(float*) on GPU 0")];
        assert_eq!(
            describe_frames(svg, &d),
            "<g><title>[GPU_Kernel]k — kernel void k&lt;float&gt;(float*) on GPU 0 (120 µs, 50.00%)</title></g>\
             <g><title>main (240 µs, 100.00%)</title></g>"
        );
    }
}
