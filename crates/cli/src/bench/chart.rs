//! Throughput over time as a picture: one chart per workload, one coloured
//! line per engine, written as PNG (to look at) and SVG (to scale and to
//! put in documents). It is the chart the TokuDB benchmarks were known by.
//!
//! Text is laid out by `plotters`' pure-Rust `ab_glyph` backend with DejaVu
//! Sans compiled into the program, not by the system's font libraries: the
//! charts then look the same on every machine, and building needs no
//! fontconfig or FreeType headers. The SVG names the font family
//! `sans-serif` and leaves drawing the glyphs to the viewer.

use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle, RGBColor};

use crate::error::{Error, Result};

/// Pixels of both files (the SVG's are nominal).
const SIZE: (u32, u32) = (1100, 640);
/// The family the embedded font is registered under, and the only one used.
const FONT: &str = "sans-serif";
/// Line colours, picked by [`Line::colour`]: the first five are the
/// engines' (fractaldb, RocksDB, tuned RocksDB, SQLite, fractaldb-sql, in
/// `EngineKind::ALL` order), told apart by hue and by lightness, so they
/// survive a grey-scale print.
const PALETTE: [RGBColor; 6] = [
    RGBColor(0x1f, 0x5f, 0xbf), // blue
    RGBColor(0xe6, 0x7e, 0x00), // orange
    RGBColor(0x2c, 0x9c, 0x3c), // green
    RGBColor(0xc0, 0x20, 0x30), // red
    RGBColor(0x80, 0x40, 0xa0), // purple
    RGBColor(0x60, 0x60, 0x60), // grey
];
/// A line with fewer points than this also marks each point, so that a
/// short workload (one or two intervals) still shows.
const MARK_POINTS_BELOW: usize = 40;

/// One engine's line: `(seconds since the workload started, rows/s)` at the
/// end of each interval, in time order.
#[derive(Clone, Debug)]
pub struct Line {
    pub label: String,
    /// Index into the palette; the same engine keeps its colour in every chart.
    pub colour: usize,
    pub points: Vec<(f64, f64)>,
}

/// A chart ready to draw.
#[derive(Clone, Debug)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub lines: Vec<Line>,
}

/// Draws `chart` into a PNG file and an SVG file.
pub fn draw(chart: &Chart, png: &Path, svg: &Path) -> Result<()> {
    register_embedded_font()?;
    render(chart, BitMapBackend::new(png, SIZE).into_drawing_area())
        .map_err(|e| Error::new(format!("drawing {}: {e}", png.display())))?;
    render(chart, SVGBackend::new(svg, SIZE).into_drawing_area())
        .map_err(|e| Error::new(format!("drawing {}: {e}", svg.display())))
}

/// Registers DejaVu Sans as [`FONT`], once per process.
fn register_embedded_font() -> Result<()> {
    static REGISTERED: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            register_font(FONT, FontStyle::Normal, dejavu::sans::regular())
                .map_err(|_| "the embedded DejaVu Sans font does not load".to_string())
        })
        .clone()
        .map_err(Error::new)
}

/// The largest x and y of any point, with floors so that an empty or flat
/// chart still has axes of some length.
fn extent(lines: &[Line]) -> (f64, f64) {
    let points = || lines.iter().flat_map(|l| l.points.iter());
    let x = points().map(|p| p.0).fold(0.0, f64::max);
    let y = points().map(|p| p.1).fold(0.0, f64::max);
    (if x > 0.0 { x } else { 1.0 }, if y > 0.0 { y } else { 1.0 })
}

fn render<DB: DrawingBackend>(
    chart: &Chart,
    root: DrawingArea<DB, Shift>,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let (max_x, max_y) = extent(&chart.lines);
    // Headroom above the highest point keeps the legend off the lines' tops.
    let mut plot = ChartBuilder::on(&root)
        .caption(&chart.title, (FONT, 24))
        .margin(16)
        .x_label_area_size(56)
        .y_label_area_size(96)
        .build_cartesian_2d(0.0..max_x, 0.0..max_y * 1.25)?;
    plot.configure_mesh()
        .x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .axis_desc_style((FONT, 18))
        .label_style((FONT, 15))
        .x_label_formatter(&|x| seconds_label(*x, max_x))
        .y_label_formatter(&|y| rate_label(*y))
        .bold_line_style(BLACK.mix(0.15))
        .light_line_style(BLACK.mix(0.04))
        .draw()?;
    for line in &chart.lines {
        let colour = PALETTE[line.colour % PALETTE.len()];
        let style = colour.stroke_width(2);
        plot.draw_series(LineSeries::new(line.points.iter().copied(), style))?
            .label(line.label.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], colour.stroke_width(3)));
        if line.points.len() < MARK_POINTS_BELOW {
            plot.draw_series(line.points.iter().map(|&p| Circle::new(p, 3, colour.filled())))?;
        }
    }
    plot.configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font((FONT, 17))
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.4))
        .draw()?;
    root.present()
}

/// An x tick: short counts ("250k") on a long axis (rows inserted), whole
/// seconds when the axis spans more than a few, else enough decimals to differ.
fn seconds_label(x: f64, max_x: f64) -> String {
    if max_x >= 10_000.0 {
        rate_label(x)
    } else if max_x >= 5.0 {
        format!("{x:.0}")
    } else if max_x >= 0.5 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// A y tick in rows per second, short: "950", "12k", "1.5M".
fn rate_label(y: f64) -> String {
    let trim = |v: f64, suffix: &str| {
        let text = format!("{v:.1}");
        format!("{}{suffix}", text.strip_suffix(".0").unwrap_or(&text))
    };
    if y >= 1e6 {
        trim(y / 1e6, "M")
    } else if y >= 1e3 {
        trim(y / 1e3, "k")
    } else {
        format!("{y:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(rate_label(950.0), "950");
        assert_eq!(rate_label(12_000.0), "12k");
        assert_eq!(rate_label(1_500_000.0), "1.5M");
        assert_eq!(rate_label(0.0), "0");
        assert_eq!(seconds_label(120.0, 600.0), "120");
        assert_eq!(seconds_label(0.25, 2.0), "0.2");
        assert_eq!(seconds_label(0.05, 0.2), "0.05");
    }

    #[test]
    fn a_chart_is_written_as_png_and_svg() {
        let dir = std::env::temp_dir().join(format!("fractaldb-chart-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let chart = Chart {
            title: "insert: a test".into(),
            x_label: "seconds".into(),
            y_label: "rows/s".into(),
            lines: vec![
                Line { label: "fractaldb".into(), colour: 0, points: vec![(1.0, 100.0), (2.0, 120.0)] },
                Line { label: "sqlite".into(), colour: 2, points: vec![(1.5, 50.0)] },
            ],
        };
        let (png, svg) = (dir.join("insert.png"), dir.join("insert.svg"));
        draw(&chart, &png, &svg).unwrap();
        let png_bytes = std::fs::read(&png).unwrap();
        assert!(png_bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
        let svg_text = std::fs::read_to_string(&svg).unwrap();
        assert!(svg_text.starts_with("<svg") && svg_text.trim_end().ends_with("</svg>"));
        assert!(svg_text.contains("fractaldb") && svg_text.contains("insert: a test"));
        // An empty chart still draws (axes only).
        draw(&Chart { lines: Vec::new(), ..chart }, &png, &svg).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
