//! Charts as SVG strings, drawn with plotters (pure functions: no clock, no randomness).

#![allow(missing_docs)] // public items here are documented as they change (the engine warns on missing docs)

use image::ImageEncoder;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::decay::{self, ScoreInput};
use crate::error::{Error, Result};
use crate::model::Tier;
use crate::settings::Settings;
use crate::time::{self, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(rename_all = "lowercase"))]
pub enum Theme {
    Light,
    Dark,
}

impl std::str::FromStr for Theme {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "light" => Ok(Theme::Light),
            "dark" => Ok(Theme::Dark),
            o => Err(Error::invalid(format!("unknown theme {o:?}"))),
        }
    }
}

struct Palette {
    bg: RGBColor,
    fg: RGBColor,
    grid: RGBColor,
    threshold: RGBColor,
}

fn palette(t: Theme) -> Palette {
    match t {
        Theme::Light => Palette {
            bg: RGBColor(255, 255, 255),
            fg: RGBColor(40, 40, 52),
            grid: RGBColor(225, 225, 232),
            threshold: RGBColor(200, 40, 40),
        },
        Theme::Dark => Palette {
            bg: RGBColor(24, 24, 32),
            fg: RGBColor(220, 220, 230),
            grid: RGBColor(60, 60, 72),
            threshold: RGBColor(255, 110, 110),
        },
    }
}

/// The same tier colours as the window's stylesheet (ui/src/styles.css), so a curve and a
/// badge of one tier always match.
pub fn tier_color(t: Tier) -> RGBColor {
    match t {
        Tier::Working => RGBColor(0xe0, 0x7a, 0x2f),
        Tier::Episodic => RGBColor(0x3f, 0x8f, 0xd8),
        Tier::Semantic => RGBColor(0x7a, 0x5b, 0xd1),
        Tier::Procedural => RGBColor(0x2f, 0x9e, 0x6b),
    }
}

/// The recency curve of a tier: (day, R) pairs from 0 to `horizon_days`.
pub fn recency_series(half_life: f64, horizon_days: f64, steps: usize) -> Vec<(f64, f64)> {
    (0..=steps)
        .map(|i| {
            let d = horizon_days * i as f64 / steps as f64;
            (d, decay::recency(d, half_life))
        })
        .collect()
}

/// A memory's projected ForgetScore over the next `horizon_days`.
pub fn projection_series(
    m: &ScoreInput,
    s: &Settings,
    now: Instant,
    horizon_days: f64,
    steps: usize,
) -> Vec<(f64, f64)> {
    (0..=steps)
        .map(|i| {
            let d = horizon_days * i as f64 / steps as f64;
            (d, decay::score_value(m, s, time::add_days(now, d)))
        })
        .collect()
}

/// How the window shows a chart: `width` CSS pixels wide on a screen with `dpr` device pixels
/// per CSS pixel. The chart is drawn at `width × dpr` with every length (text, margins,
/// strokes) times `dpr`, so it is shown 1:1 — crisp, and its text at the size it is written.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    pub width: f64,
    pub dpr: f64,
}

impl Fit {
    /// Widths below 240 or above 4000 CSS px and ratios outside 1–4 are brought into range.
    pub fn new(width: f64, dpr: f64) -> Self {
        let width = if width.is_finite() { width.clamp(240.0, 4000.0) } else { 760.0 };
        let dpr = if dpr.is_finite() { dpr.clamp(1.0, 4.0) } else { 1.0 };
        Fit { width, dpr }
    }

    /// The drawing size for a chart `aspect` (height / width) tall, and the scale of lengths.
    fn size(&self, aspect: f64) -> ((u32, u32), f64) {
        let w = (self.width * self.dpr).round();
        (((w as u32), (w * aspect).round() as u32), self.dpr)
    }
}

/// Sizes of the window's charts at the window's default width (height / width).
const DECAY_ASPECT: f64 = 360.0 / 760.0;
const PROJECTION_ASPECT: f64 = 380.0 / 560.0;
const DISTRIBUTION_ASPECT: f64 = 340.0 / 760.0;

/// An axis number that never reads "-0.0": a value that rounds to zero is written as zero.
fn axis_num(v: f64, decimals: usize) -> String {
    let t = format!("{v:.decimals$}");
    if t.trim_start_matches('-').chars().all(|c| c == '0' || c == '.') {
        t.trim_start_matches('-').to_string()
    } else {
        t
    }
}

fn plot_err<E: std::fmt::Debug>(e: E) -> Error {
    Error::Io(std::io::Error::other(format!("chart rendering failed: {e:?}")))
}

/// Per-tier recency curves over `horizon_days`, with half-life markers and the 0.5 line.
pub fn render_decay(s: &Settings, horizon_days: f64, size: (u32, u32), theme: Theme) -> Result<String> {
    let mut svg = String::new();
    draw_decay(SVGBackend::with_string(&mut svg, size).into_drawing_area(), s, horizon_days, theme, 1.0)?;
    Ok(svg)
}

/// [`render_decay`] at the size the window shows it.
pub fn render_decay_fit(s: &Settings, horizon_days: f64, fit: Fit, theme: Theme) -> Result<String> {
    let (size, k) = fit.size(DECAY_ASPECT);
    let mut svg = String::new();
    draw_decay(SVGBackend::with_string(&mut svg, size).into_drawing_area(), s, horizon_days, theme, k)?;
    Ok(svg)
}

/// A length (pixels at scale 1) at scale `k`.
fn px(v: f64, k: f64) -> u32 {
    (v * k).round().max(1.0) as u32
}

fn draw_decay<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    s: &Settings,
    horizon_days: f64,
    theme: Theme,
    k: f64,
) -> Result<()> {
    if !(horizon_days.is_finite() && horizon_days > 0.0 && horizon_days <= 3650.0) {
        return Err(Error::invalid("horizon must be in (0, 3650] days"));
    }
    let p = palette(theme);
    {
        root.fill(&p.bg).map_err(plot_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption("Recency R = exp(−ln2 · age / half-life)", ("sans-serif", 16.0 * k).into_font().color(&p.fg))
            .margin(px(12.0, k))
            .x_label_area_size(px(34.0, k))
            .y_label_area_size(px(44.0, k))
            .build_cartesian_2d(0.0..horizon_days, 0.0..1.0)
            .map_err(plot_err)?;
        // No minor grid: at this density it shimmers (moiré) on a dark background.
        chart
            .configure_mesh()
            .x_desc("age (days)")
            .x_label_formatter(&|d| axis_num(*d, 0))
            .y_label_formatter(&|y| axis_num(*y, 1))
            .y_desc("recency")
            .axis_desc_style(("sans-serif", 13.0 * k).into_font().color(&p.fg))
            .label_style(("sans-serif", 12.0 * k).into_font().color(&p.fg))
            .max_light_lines(0)
            .bold_line_style(p.grid.stroke_width(px(1.0, k)))
            .axis_style(p.fg.stroke_width(px(1.0, k)))
            .draw()
            .map_err(plot_err)?;
        chart
            .draw_series(LineSeries::new([(0.0, 0.5), (horizon_days, 0.5)], p.grid.stroke_width(px(2.0, k))))
            .map_err(plot_err)?;
        for t in Tier::ALL {
            let h = s.half_life_days.get(t);
            let c = tier_color(t);
            chart
                .draw_series(LineSeries::new(recency_series(h, horizon_days, 240), c.stroke_width(px(2.0, k))))
                .map_err(plot_err)?
                .label(format!("{t} (half-life {h} d)"))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + px(16.0, k) as i32, y)], c.stroke_width(px(2.0, k)))
                });
            if h <= horizon_days {
                chart.draw_series(std::iter::once(Circle::new((h, 0.5), px(4.0, k), c.filled()))).map_err(plot_err)?;
            }
        }
        chart
            .configure_series_labels()
            .background_style(p.bg.mix(0.85))
            .border_style(p.grid)
            .legend_area_size(px(24.0, k))
            .label_font(("sans-serif", 12.0 * k).into_font().color(&p.fg))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(plot_err)?;
        root.present().map_err(plot_err)?;
    }
    Ok(())
}

/// A memory's ForgetScore from now on, the threshold line, the moment it would be forgotten,
/// and what one more cite or a pin would change.
pub fn render_projection(
    m: &ScoreInput,
    s: &Settings,
    now: Instant,
    horizon_days: f64,
    size: (u32, u32),
    theme: Theme,
) -> Result<String> {
    let mut svg = String::new();
    draw_projection(SVGBackend::with_string(&mut svg, size).into_drawing_area(), m, s, now, horizon_days, theme, 1.0)?;
    Ok(svg)
}

/// [`render_projection`] at the size the window shows it.
pub fn render_projection_fit(
    m: &ScoreInput,
    s: &Settings,
    now: Instant,
    horizon_days: f64,
    fit: Fit,
    theme: Theme,
) -> Result<String> {
    let (size, k) = fit.size(PROJECTION_ASPECT);
    let mut svg = String::new();
    draw_projection(SVGBackend::with_string(&mut svg, size).into_drawing_area(), m, s, now, horizon_days, theme, k)?;
    Ok(svg)
}

/// One entry of a legend drawn under a chart: its text and how its line is drawn.
struct LegendEntry {
    text: String,
    color: RGBColor,
    width: f64,
}

/// A legend under the plot, never over it: the entries left to right, wrapping to another row
/// when the width runs out. Returns the rows' height in pixels for a drawing `width` wide.
fn legend_rows(entries: &[LegendEntry], width: f64, k: f64) -> Vec<Vec<usize>> {
    // A generous estimate of a sans-serif 11 px character's width, so that nothing overlaps.
    let entry_w = |e: &LegendEntry| (22.0 + 6.6 * e.text.chars().count() as f64 + 18.0) * k;
    let mut rows: Vec<Vec<usize>> = vec![Vec::new()];
    let mut used = 10.0 * k;
    for (i, e) in entries.iter().enumerate() {
        let w = entry_w(e);
        if used + w > width && !rows.last().is_some_and(|r| r.is_empty()) {
            rows.push(Vec::new());
            used = 10.0 * k;
        }
        rows.last_mut().expect("one row at least").push(i);
        used += w;
    }
    rows
}

fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[LegendEntry],
    rows: &[Vec<usize>],
    fg: RGBColor,
    k: f64,
) -> Result<()> {
    let row_h = 20.0 * k;
    for (r, row) in rows.iter().enumerate() {
        let y = (row_h * (r as f64 + 0.5)).round() as i32;
        let mut x = 10.0 * k;
        for &i in row {
            let e = &entries[i];
            let x0 = x.round() as i32;
            area.draw(&PathElement::new(
                vec![(x0, y), (x0 + px(16.0, k) as i32, y)],
                e.color.stroke_width(px(e.width, k)),
            ))
            .map_err(plot_err)?;
            let style = ("sans-serif", 11.0 * k).into_font().color(&fg).pos(plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Left,
                plotters::style::text_anchor::VPos::Center,
            ));
            area.draw(&Text::new(e.text.clone(), (x0 + px(22.0, k) as i32, y), style)).map_err(plot_err)?;
            x += (22.0 + 6.6 * e.text.chars().count() as f64 + 18.0) * k;
        }
    }
    Ok(())
}

fn draw_projection<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    m: &ScoreInput,
    s: &Settings,
    now: Instant,
    horizon_days: f64,
    theme: Theme,
    k: f64,
) -> Result<()> {
    let p = palette(theme);
    let base = projection_series(m, s, now, horizon_days, 200);
    let mut cited = m.clone();
    cited.cites += 1;
    cited.last_accessed = Some(now);
    let mut pinned = m.clone();
    pinned.pinned = true;
    let with_cite = projection_series(&cited, s, now, horizon_days, 200);
    let with_pin = projection_series(&pinned, s, now, horizon_days, 200);
    let all = base.iter().chain(&with_cite).chain(&with_pin).map(|(_, y)| *y);
    let (lo, hi) = all.fold((s.threshold, s.threshold), |(a, b), y| (a.min(y), b.max(y)));
    let (lo, hi) = ((lo - 0.05).min(0.0), (hi + 0.05).max(1.0));
    let blue = RGBColor(52, 152, 219);
    let green = RGBColor(39, 174, 96);
    let legend = [
        LegendEntry { text: "as is".into(), color: p.fg, width: 2.0 },
        LegendEntry { text: "one more cite today".into(), color: blue, width: 1.5 },
        LegendEntry { text: "if pinned".into(), color: green, width: 1.5 },
        LegendEntry { text: format!("threshold {}", axis_num(s.threshold, 2)), color: p.threshold, width: 2.0 },
    ];
    let (w, h) = root.dim_in_pixel();
    let rows = legend_rows(&legend, f64::from(w), k);
    let legend_h = (20.0 * k * rows.len() as f64 + 4.0 * k).round() as u32;
    root.fill(&p.bg).map_err(plot_err)?;
    let (plot, under) = root.split_vertically(h.saturating_sub(legend_h));
    {
        let mut chart = ChartBuilder::on(&plot)
            .caption("Projected ForgetScore", ("sans-serif", 14.0 * k).into_font().color(&p.fg))
            .margin(px(10.0, k))
            .margin_right(px(18.0, k))
            .x_label_area_size(px(38.0, k))
            .y_label_area_size(px(52.0, k))
            .build_cartesian_2d(0.0..horizon_days, lo..hi)
            .map_err(plot_err)?;
        // Few labels on each axis, so that they never run into each other at a narrow width.
        let x_labels = ((f64::from(w) / k / 90.0).floor() as usize).clamp(3, 8);
        chart
            .configure_mesh()
            .x_desc("days from now (d)")
            .y_desc("ForgetScore (0–1)")
            .x_labels(x_labels)
            .y_labels(6)
            .x_label_formatter(&|d| axis_num(*d, 0))
            .y_label_formatter(&|y| axis_num(*y, 1))
            .axis_desc_style(("sans-serif", 12.0 * k).into_font().color(&p.fg))
            .label_style(("sans-serif", 11.0 * k).into_font().color(&p.fg))
            .max_light_lines(0)
            .bold_line_style(p.grid.stroke_width(px(1.0, k)))
            .axis_style(p.fg.stroke_width(px(1.0, k)))
            .draw()
            .map_err(plot_err)?;
        chart
            .draw_series(LineSeries::new(
                [(0.0, s.threshold), (horizon_days, s.threshold)],
                p.threshold.stroke_width(px(2.0, k)),
            ))
            .map_err(plot_err)?;
        chart.draw_series(LineSeries::new(with_cite, blue.stroke_width(px(1.5, k)))).map_err(plot_err)?;
        chart.draw_series(LineSeries::new(with_pin, green.stroke_width(px(1.5, k)))).map_err(plot_err)?;
        chart.draw_series(LineSeries::new(base, p.fg.stroke_width(px(2.0, k)))).map_err(plot_err)?;
        if let Some(at) = decay::projected_forget_at(m, s, now) {
            let d = time::days_between(now, at);
            if d <= horizon_days {
                chart
                    .draw_series(std::iter::once(Circle::new((d, s.threshold), px(5.0, k), p.threshold.filled())))
                    .map_err(plot_err)?;
            }
        }
    }
    draw_legend(&under, &legend, &rows, p.fg, k)?;
    root.present().map_err(plot_err)?;
    Ok(())
}

/// Bins of the ForgetScore distribution: `BINS` of width 0.05 from −0.5 to 1.0.
pub const BIN_LO: f64 = -0.5;
pub const BIN_WIDTH: f64 = 0.05;
pub const BINS: usize = 30;

/// Counts per tier and bin of active memories' scores (scores outside the range are clamped
/// into the first or last bin).
pub fn score_histogram(scores: &[(Tier, f64)]) -> Vec<(Tier, Vec<usize>)> {
    Tier::ALL
        .iter()
        .map(|t| {
            let mut bins = vec![0usize; BINS];
            for (_, sc) in scores.iter().filter(|(tt, _)| tt == t) {
                // The tiny epsilon keeps scores that sit exactly on a bin edge (−0.45) in the
                // bin that starts there despite binary rounding.
                let i = ((sc - BIN_LO) / BIN_WIDTH + 1e-9).floor().clamp(0.0, (BINS - 1) as f64) as usize;
                bins[i] += 1;
            }
            (*t, bins)
        })
        .collect()
}

/// The ForgetScore distribution per tier, with the threshold and the review band marked.
pub fn render_distribution(scores: &[(Tier, f64)], s: &Settings, size: (u32, u32), theme: Theme) -> Result<String> {
    let mut svg = String::new();
    draw_distribution(SVGBackend::with_string(&mut svg, size).into_drawing_area(), scores, s, theme, 1.0)?;
    Ok(svg)
}

/// [`render_distribution`] at the size the window shows it.
pub fn render_distribution_fit(scores: &[(Tier, f64)], s: &Settings, fit: Fit, theme: Theme) -> Result<String> {
    let (size, k) = fit.size(DISTRIBUTION_ASPECT);
    let mut svg = String::new();
    draw_distribution(SVGBackend::with_string(&mut svg, size).into_drawing_area(), scores, s, theme, k)?;
    Ok(svg)
}

fn draw_distribution<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    scores: &[(Tier, f64)],
    s: &Settings,
    theme: Theme,
    k: f64,
) -> Result<()> {
    let p = palette(theme);
    let hist = score_histogram(scores);
    // Bars stacked per bin: the tallest stack sets the height.
    let top = (0..BINS).map(|i| hist.iter().map(|(_, b)| b[i]).sum::<usize>()).max().unwrap_or(0).max(1) as f64 * 1.15;
    let x_hi = BIN_LO + BIN_WIDTH * BINS as f64;
    root.fill(&p.bg).map_err(plot_err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "ForgetScore distribution per tier (active memories)",
            ("sans-serif", 15.0 * k).into_font().color(&p.fg),
        )
        .margin(px(10.0, k))
        .x_label_area_size(px(30.0, k))
        .y_label_area_size(px(44.0, k))
        .build_cartesian_2d(BIN_LO..x_hi, 0.0..top)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc("ForgetScore")
        .y_desc("memories")
        .x_label_formatter(&|x| axis_num(*x, 1))
        .y_label_formatter(&|y| axis_num(*y, 0))
        .axis_desc_style(("sans-serif", 12.0 * k).into_font().color(&p.fg))
        .label_style(("sans-serif", 11.0 * k).into_font().color(&p.fg))
        .max_light_lines(0)
        .bold_line_style(p.grid.stroke_width(px(1.0, k)))
        .axis_style(p.fg.stroke_width(px(1.0, k)))
        .draw()
        .map_err(plot_err)?;
    let band = p.threshold.mix(0.12);
    chart
        .draw_series(std::iter::once(Rectangle::new([(s.review_band_low, 0.0), (s.threshold, top)], band.filled())))
        .map_err(plot_err)?;
    let th = p.threshold;
    chart
        .draw_series(LineSeries::new([(s.threshold, 0.0), (s.threshold, top)], th.stroke_width(px(2.0, k))))
        .map_err(plot_err)?
        .label(format!("threshold {}", s.threshold))
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + px(16.0, k) as i32, y)], th.stroke_width(px(2.0, k))));
    // A histogram as bars: per bin, the tiers stacked in their usual order.
    let mut below = vec![0usize; BINS];
    let gap = BIN_WIDTH * 0.08;
    for (t, bins) in &hist {
        let c = tier_color(*t);
        let bars: Vec<_> = bins
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(i, n)| {
                let x0 = BIN_LO + BIN_WIDTH * i as f64;
                Rectangle::new([(x0 + gap, below[i] as f64), (x0 + BIN_WIDTH - gap, (below[i] + n) as f64)], c.filled())
            })
            .collect();
        for (i, n) in bins.iter().enumerate() {
            below[i] += n;
        }
        let side = px(10.0, k) as i32;
        chart
            .draw_series(bars)
            .map_err(plot_err)?
            .label(t.to_string())
            .legend(move |(x, y)| Rectangle::new([(x, y - side / 2), (x + side, y + side / 2)], c.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(p.bg.mix(0.85))
        .border_style(p.grid)
        .legend_area_size(px(24.0, k))
        .label_font(("sans-serif", 11.0 * k).into_font().color(&p.fg))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(plot_err)?;
    root.present().map_err(plot_err)?;
    Ok(())
}

/// What to draw, for exports.
pub enum ChartSpec<'a> {
    Decay { settings: &'a Settings, horizon_days: f64 },
    Projection { input: &'a ScoreInput, settings: &'a Settings, now: Instant, horizon_days: f64 },
    Distribution { scores: &'a [(Tier, f64)], settings: &'a Settings },
}

/// The file formats a chart exports to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChartFormat {
    Svg,
    Png,
}

impl ChartFormat {
    /// The format a file name asks for, by its extension (`.svg` or `.png`, any case).
    pub fn from_path(path: &std::path::Path) -> Result<Self> {
        match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("svg") => Ok(ChartFormat::Svg),
            Some("png") => Ok(ChartFormat::Png),
            _ => Err(Error::invalid("export path must end in .svg or .png")),
        }
    }
}

/// A chart as the bytes of an SVG or PNG file. The caller writes them: where and how a file
/// may be written (never through a symlink, for instance) is the caller's rule, not the chart's.
pub fn encode(spec: &ChartSpec<'_>, format: ChartFormat, size: (u32, u32), theme: Theme) -> Result<Vec<u8>> {
    match format {
        ChartFormat::Svg => {
            let svg = match spec {
                ChartSpec::Decay { settings, horizon_days } => render_decay(settings, *horizon_days, size, theme)?,
                ChartSpec::Projection { input, settings, now, horizon_days } => {
                    render_projection(input, settings, *now, *horizon_days, size, theme)?
                }
                ChartSpec::Distribution { scores, settings } => render_distribution(scores, settings, size, theme)?,
            };
            Ok(svg.into_bytes())
        }
        ChartFormat::Png => {
            let mut rgb = vec![0u8; size.0 as usize * size.1 as usize * 3];
            {
                let area = BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area();
                match spec {
                    ChartSpec::Decay { settings, horizon_days } => {
                        draw_decay(area, settings, *horizon_days, theme, 1.0)?
                    }
                    ChartSpec::Projection { input, settings, now, horizon_days } => {
                        draw_projection(area, input, settings, *now, *horizon_days, theme, 1.0)?
                    }
                    ChartSpec::Distribution { scores, settings } => {
                        draw_distribution(area, scores, settings, theme, 1.0)?
                    }
                }
            }
            let mut png = Vec::new();
            image::codecs::png::PngEncoder::new(&mut png)
                .write_image(&rgb, size.0, size.1, image::ColorType::Rgb8)
                .map_err(plot_err)?;
            Ok(png)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tier_curve_crosses_half_at_its_half_life() {
        let s = Settings::default();
        for t in Tier::ALL {
            let h = s.half_life_days.get(t);
            // 360 steps over 2h puts a sample exactly at h.
            let series = recency_series(h, 2.0 * h, 360);
            let (d, r) = series[180];
            assert!((d - h).abs() < 1e-9 && (r - 0.5).abs() < 1e-12, "{t}: R({d}) = {r}");
            assert!(series.windows(2).all(|w| w[1].1 < w[0].1), "{t}: strictly decreasing");
        }
    }

    #[test]
    fn exports_encode_svg_and_png_by_extension() {
        let s = Settings::default();
        let spec = ChartSpec::Decay { settings: &s, horizon_days: 365.0 };
        let fmt = |p: &str| ChartFormat::from_path(std::path::Path::new(p));
        assert_eq!(fmt("/tmp/a.SVG").unwrap(), ChartFormat::Svg, "the extension decides, in any case");
        assert!(fmt("/tmp/a.jpg").is_err() && fmt("/tmp/svg").is_err(), "only .svg and .png");
        let svg = encode(&spec, ChartFormat::Svg, (640, 360), Theme::Light).unwrap();
        assert_eq!(
            svg,
            render_decay(&s, 365.0, (640, 360), Theme::Light).unwrap().into_bytes(),
            "the SVG is the one the window shows"
        );
        let png = encode(&spec, ChartFormat::Png, (64, 32), Theme::Light).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "a PNG file signature");
        // IHDR follows the signature: width and height big-endian at bytes 16..24.
        assert_eq!(
            (&png[16..20], &png[20..24]),
            (&64u32.to_be_bytes()[..], &32u32.to_be_bytes()[..]),
            "the requested size"
        );
    }

    #[test]
    fn decay_chart_renders_deterministically() {
        let s = Settings::default();
        let a = render_decay(&s, 365.0, (640, 360), Theme::Light).unwrap();
        let b = render_decay(&s, 365.0, (640, 360), Theme::Light).unwrap();
        assert_eq!(a, b, "no clock, no randomness");
        assert!(a.starts_with("<svg") && a.contains("semantic (half-life 180 d)"));
        assert!(render_decay(&s, 365.0, (640, 360), Theme::Dark).unwrap() != a, "themes differ");
        assert!(render_decay(&s, -1.0, (640, 360), Theme::Light).is_err());
    }

    #[test]
    fn histogram_counts_each_score_once_in_its_bin() {
        let scores = [(Tier::Working, 0.61), (Tier::Working, 0.62), (Tier::Semantic, -0.45), (Tier::Semantic, 5.0)];
        let h = score_histogram(&scores);
        let working = &h.iter().find(|(t, _)| *t == Tier::Working).unwrap().1;
        assert_eq!(working[22], 2, "0.61 and 0.62 fall in [0.60, 0.65)");
        let semantic = &h.iter().find(|(t, _)| *t == Tier::Semantic).unwrap().1;
        assert_eq!((semantic[1], semantic[BINS - 1]), (1, 1), "−0.45 in bin 1, 5.0 clamped into the last");
        let svg = render_distribution(&scores, &Settings::default(), (600, 300), Theme::Dark).unwrap();
        assert!(svg.contains("threshold 0.6"));
    }

    #[test]
    fn a_fitted_chart_is_drawn_at_width_times_dpr_with_text_scaled_and_no_minor_grid() {
        let s = Settings::default();
        let svg = render_decay_fit(&s, 365.0, Fit::new(500.0, 2.0), Theme::Dark).unwrap();
        assert!(svg.contains(r#"width="1000""#), "drawn 1000 px wide for 500 CSS px at dpr 2");
        assert!(svg.contains(r#"height="474""#), "the window's aspect: 1000 × 360/760");
        let plain = render_decay(&s, 365.0, (760, 360), Theme::Dark).unwrap();
        let lines = |svg: &str| svg.matches("<line").count() + svg.matches("<polyline").count();
        assert!(lines(&svg) <= lines(&plain), "the fitted chart draws no more lines than before (no minor grid)");
        assert_eq!(Fit::new(10.0, 9.0), Fit { width: 240.0, dpr: 4.0 }, "sizes are kept in range");
        assert_eq!(Fit::new(f64::NAN, f64::INFINITY), Fit { width: 760.0, dpr: 1.0 });
    }

    #[test]
    fn axis_numbers_never_read_minus_zero() {
        assert_eq!(axis_num(-0.0, 1), "0.0");
        assert_eq!(axis_num(-0.00001, 1), "0.0");
        assert_eq!(axis_num(-0.04, 0), "0");
        assert_eq!(axis_num(-0.25, 1), "-0.2");
        assert_eq!(axis_num(0.5, 1), "0.5");
    }

    #[test]
    fn the_distribution_is_drawn_as_bars() {
        let scores = [(Tier::Working, 0.61), (Tier::Semantic, 0.1), (Tier::Semantic, 0.12)];
        let svg = render_distribution_fit(&scores, &Settings::default(), Fit::new(600.0, 1.0), Theme::Light).unwrap();
        // One bar per tier and non-empty bin, in the tier's colour (#7a5bd1 is semantic).
        assert!(svg.to_lowercase().contains("#7a5bd1"), "semantic bar drawn");
        assert!(svg.matches("<rect").count() >= 3, "bars are rectangles");
    }

    #[test]
    fn projection_has_threshold_line_at_point_six() {
        let s = Settings::default();
        let now = time::parse("2026-01-01T00:00:00Z").unwrap();
        let m = ScoreInput {
            tier: Tier::Episodic,
            created_at: now,
            last_accessed: None,
            views: 0,
            cites: 0,
            edits: 0,
            importance: 0.0,
            pinned: false,
            duplication: 0.5,
            duplicate_of: None,
            duplicate_kind: None,
            task_log: false,
        };
        let svg = render_projection(&m, &s, now, 120.0, (600, 300), Theme::Light).unwrap();
        assert!(svg.contains("threshold 0.60"), "the threshold is labelled at 0.6");
        let series = projection_series(&m, &s, now, 120.0, 120);
        let crossing = series.iter().find(|(_, y)| *y >= 0.6 - decay::EPS).map(|(d, _)| *d).unwrap();
        assert!((crossing - 30.0 * 3.5f64.log2()).abs() < 1.0, "crosses 0.6 near day 54, got {crossing}");
    }

    #[test]
    fn the_projection_is_readable_axes_with_units_and_the_legend_under_the_plot() {
        let s = Settings::default();
        let now = time::parse("2026-01-01T00:00:00Z").unwrap();
        let m = ScoreInput {
            tier: Tier::Semantic,
            created_at: time::add_days(now, -100.0),
            last_accessed: None,
            views: 0,
            cites: 0,
            edits: 0,
            importance: 0.2,
            pinned: false,
            duplication: 0.0,
            duplicate_of: None,
            duplicate_kind: None,
            task_log: false,
        };
        let svg = render_projection_fit(&m, &s, now, 365.0, Fit::new(400.0, 1.0), Theme::Light).unwrap();
        assert!(svg.contains("days from now (d)"), "the x axis says its unit");
        assert!(svg.contains("ForgetScore (0–1)"), "the y axis says what it is");
        assert!(svg.contains(r#"height="271""#), "taller than before (400 × 380/560): {}", &svg[..120]);
        // The legend wraps to another row rather than running into itself or over the lines.
        let entries = ["as is", "one more cite today", "if pinned", "threshold 0.60"].map(|t| LegendEntry {
            text: t.into(),
            color: RGBColor(0, 0, 0),
            width: 1.0,
        });
        assert_eq!(legend_rows(&entries, 760.0, 1.0).len(), 1, "one row at the default width");
        let narrow = legend_rows(&entries, 300.0, 1.0);
        assert!(narrow.len() >= 2, "wrapped at 300 px: {narrow:?}");
        assert_eq!(narrow.concat(), vec![0, 1, 2, 3], "each entry once, in order");
        for row in &narrow {
            let w: f64 = row.iter().map(|&i| 22.0 + 6.6 * entries[i].text.chars().count() as f64 + 18.0).sum();
            assert!(w + 10.0 <= 300.0 || row.len() == 1, "a row fits its width: {w}");
        }
    }
}
