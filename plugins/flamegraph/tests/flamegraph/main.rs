//! Integration tests of the flamegraph sink: the files it writes (golden SVGs of both views,
//! colours, tooltips, empty sessions) and what a browser shows of them (headless Chromium).

mod screenshot;
mod sink;
