//! Horizontal bar charts as SVG text (plotters' SVG backend, no fonts or files needed): one
//! row per category, one bar per series, optionally on a log axis with a marked reference
//! value. Reports embed them inline; `bench --plot` writes one to a file.

use crate::error::{Error, Result};
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One panel: categories down the side, a bar per series and category.
pub struct Bars {
    pub title: String,
    /// What the x axis measures.
    pub axis: String,
    pub categories: Vec<String>,
    /// A name and one value per category; `None` draws no bar (not run), 0 on a log axis
    /// draws the word `exact`, infinity draws a bar to the edge marked `∞`.
    pub series: Vec<(String, Vec<Option<f64>>)>,
    /// Log x axis from `lo` to `hi` (else linear from 0 to the largest finite value).
    pub log: Option<(f64, f64)>,
    /// A reference value drawn as a vertical line, with its label (the bound, the copy speed).
    pub marker: Option<(f64, String)>,
}

const COLORS: [RGBColor; 4] =
    [RGBColor(0x1f, 0x77, 0xb4), RGBColor(0xff, 0x7f, 0x0e), RGBColor(0x2c, 0xa0, 0x2c), RGBColor(0x94, 0x67, 0xbd)];
const ROW_GAP: f64 = 0.25;
const LABEL_WIDTH: u32 = 170;

fn fail(e: impl std::fmt::Display) -> Error {
    Error::Io(format!("drawing a chart: {e}"))
}

/// Pixels a panel needs for its rows.
fn panel_height(b: &Bars) -> u32 {
    let rows = b.categories.len().max(1) as u32;
    100 + rows * (11 * b.series.len().max(1) as u32 + 12)
}

/// Panels side by side, each `width` pixels wide, as one `<svg>` element.
pub fn svg(panels: &[Bars], width: u32) -> Result<String> {
    let height = panels.iter().map(panel_height).max().unwrap_or(100);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (width * panels.len().max(1) as u32, height)).into_drawing_area();
        root.fill(&WHITE).map_err(fail)?;
        let areas = root.split_evenly((1, panels.len().max(1)));
        for (area, bars) in areas.iter().zip(panels) {
            match bars.log {
                Some((lo, hi)) => panel(area, bars, (lo..hi).log_scale(), lo)?,
                None => {
                    let top = bars.series.iter().flat_map(|(_, v)| v.iter().flatten()).copied();
                    let top = top.chain(bars.marker.iter().map(|m| m.0)).filter(|v| v.is_finite()).fold(0.0, f64::max);
                    panel(area, bars, 0.0..(top * 1.1).max(1e-9), 0.0)?
                }
            }
        }
        root.present().map_err(fail)?;
    }
    Ok(out)
}

fn panel<X>(area: &DrawingArea<SVGBackend, plotters::coord::Shift>, b: &Bars, x: X, floor: f64) -> Result<()>
where
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
{
    let rows = b.categories.len().max(1) as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(&b.title, ("sans-serif", 15))
        .margin(8)
        .x_label_area_size(34)
        .y_label_area_size(LABEL_WIDTH)
        .build_cartesian_2d(x, RangedCoordf64::from(rows..0.0))
        .map_err(fail)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_desc(b.axis.as_str())
        .label_style(("sans-serif", 12))
        .draw()
        .map_err(fail)?;
    let (x_lo, x_hi) = {
        let r = chart.x_range();
        (r.start, r.end)
    };
    let n = b.series.len().max(1) as f64;
    let h = (1.0 - ROW_GAP) / n;
    let small = ("sans-serif", 11).into_font();
    for (s, (name, values)) in b.series.iter().enumerate() {
        let color = COLORS[s % COLORS.len()];
        for (i, v) in values.iter().enumerate() {
            let Some(v) = *v else { continue };
            let y0 = i as f64 + ROW_GAP / 2.0 + s as f64 * h;
            let base = x_lo.max(floor);
            let end = if v.is_finite() { v.clamp(base, x_hi) } else { x_hi };
            if end > base {
                chart
                    .draw_series(std::iter::once(Rectangle::new([(base, y0), (end, y0 + h)], color.filled())))
                    .map_err(fail)?;
            }
            let note = match v {
                v if !v.is_finite() => Some("∞"),
                v if v == 0.0 && b.log.is_some() => Some("exact"),
                _ => None,
            };
            if let Some(note) = note {
                let at = if v.is_finite() { base } else { x_hi };
                let pos = if v.is_finite() {
                    Pos::new(HPos::Left, VPos::Center)
                } else {
                    Pos::new(HPos::Right, VPos::Center)
                };
                chart
                    .draw_series(std::iter::once(Text::new(
                        note,
                        (at, y0 + h / 2.0),
                        small.clone().color(&color).pos(pos),
                    )))
                    .map_err(fail)?;
            }
        }
        if !name.is_empty() {
            chart
                .draw_series(std::iter::empty::<Rectangle<(f64, f64)>>())
                .map_err(fail)?
                .label(name.as_str())
                .legend(move |(x, y)| Rectangle::new([(x, y - 4), (x + 10, y + 4)], color.filled()));
        }
    }
    if let Some((at, label)) = &b.marker {
        chart
            .draw_series(LineSeries::new([(*at, 0.0), (*at, rows)], RED.stroke_width(1)))
            .map_err(fail)?
            .label(label.as_str())
            .legend(|(x, y)| PathElement::new([(x, y), (x + 10, y)], RED));
    }
    // Category names beside their rows, in pixels (the y axis is numeric).
    let label = ("sans-serif", 13).into_font().color(&BLACK).pos(Pos::new(HPos::Right, VPos::Center));
    for (i, name) in b.categories.iter().enumerate() {
        let (_, py) = chart.backend_coord(&(x_lo, i as f64 + 0.5));
        let (px, _) = chart.backend_coord(&(x_lo, 0.0));
        let (ax, ay) = area.get_base_pixel();
        area.draw(&Text::new(name.clone(), (px - ax - 6, py - ay), label.clone())).map_err(fail)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .label_font(("sans-serif", 12))
        .draw()
        .map_err(fail)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_names_every_category_and_marks_exact_and_unbounded_bars() {
        let bars = Bars {
            title: "worst error / bound".into(),
            axis: "error / bound".into(),
            categories: vec!["bf16".into(), "q4_g64_fp16".into(), "nvfp4".into()],
            series: vec![
                ("dequant".into(), vec![Some(0.0), Some(0.0), Some(0.4)]),
                ("matmul".into(), vec![Some(0.01), Some(f64::INFINITY), None]),
            ],
            log: Some((1e-4, 10.0)),
            marker: Some((1.0, "bound".into())),
        };
        let svg = svg(&[bars], 600).expect("draws");
        assert!(svg.starts_with("<svg"), "{}", &svg[..80.min(svg.len())]);
        for text in ["bf16", "q4_g64_fp16", "nvfp4", "exact", "∞", "bound", "dequant", "matmul"] {
            assert!(svg.contains(text), "{text} missing");
        }
        // Two exact dequant bars, one unbounded matmul bar, and nothing for the one not run.
        assert_eq!(svg.matches("exact").count(), 2);
    }
}
