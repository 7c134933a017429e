//! Reports people can share: one self-contained HTML file per conformance or verify run (inline
//! CSS and SVG, no network, no script), with the device facts, the summary, the deviations
//! explained and a chart of worst error/bound per format. The browser page shows the same HTML.

pub mod chart;

use crate::conformance::{summarize, CaseResult, Report, SummaryRow, Verdict, VerifyReport};
use crate::gpu::{Op, Platform};
use chart::Bars;
use std::fmt::Write;

/// Text made safe inside HTML elements and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:75em}\
table{border-collapse:collapse;margin:1em 0;font-size:90%}th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left}\
th{background:#f3f3f3}td.n{text-align:right;font-variant-numeric:tabular-nums}\
.pass{background:#e6f4ea}.fail{background:#fde7e7;font-weight:bold}.deviation{background:#fff4d6}\
code{font-size:90%}.facts td:first-child{font-weight:bold}.k{white-space:nowrap}span[title]{text-decoration:underline dotted}svg{max-width:100%;height:auto}";

/// What a platform deviation is, for readers of a shared report.
const DEVIATION_NOTE: &str = "A <b>platform deviation</b> is a case the device computed differently from the \
oracle in a way WGSL permits: the device flushes f32 subnormal results to zero (its probe multiplies 2<sup>-100</sup> \
by 2<sup>-30</sup> and gets 0), and the affected outputs are within the flush-aware bound. It is reported, never \
counted as a pass; on a device that keeps subnormals the same case must be exact.";

fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "pass",
        Verdict::Fail => "fail",
        Verdict::PlatformDeviation => "deviation",
    }
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Pass => "pass",
        Verdict::Fail => "FAIL",
        Verdict::PlatformDeviation => "platform deviation",
    }
}

fn number(x: f64) -> String {
    match x {
        x if !x.is_finite() => "∞".into(),
        0.0 => "0".into(),
        x => format!("{x:.3e}"),
    }
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>\n{body}</body></html>\n",
        escape(title)
    )
}

/// The device's facts as a two-column table.
fn facts(p: &Platform, producer: &str, seed: u64) -> String {
    let flush = match p.probes.flushes_subnormal_results {
        Some(true) => "yes (subnormal results become zero)".to_string(),
        Some(false) => "no".to_string(),
        None if p.probes.broken.is_empty() => "not probed".to_string(),
        // A wrong product is no flush: nothing is excused as a deviation on this device.
        None => format!("unknown: {}", p.probes.broken.join("; ")),
    };
    let rows = [
        ("device", p.name.clone()),
        ("backend", p.backend.clone()),
        ("type", p.device_type.clone()),
        ("driver", format!("{} {}", p.driver, p.driver_info)),
        ("vendor / device id", format!("{:#06x} / {:#06x}", p.vendor, p.device)),
        ("optional features", if p.features.is_empty() { "none".into() } else { p.features.join(", ") }),
        ("subgroup size", format!("{}..{}", p.subgroup_min_size, p.subgroup_max_size)),
        (
            "max buffer / storage binding",
            format!("{} / {} bytes", p.limits.max_buffer_size, p.limits.max_storage_buffer_binding_size),
        ),
        ("storage buffers per stage", p.limits.max_storage_buffers_per_shader_stage.to_string()),
        ("flushes subnormals", flush),
        ("judged by", producer.to_string()),
        ("seed", format!("{seed} (replay with <code>--seed {seed}</code>)")),
    ];
    let mut out = String::from("<table class=\"facts\">");
    for (k, v) in rows {
        // The seed row carries its own markup; everything else is device text.
        let v = if k == "seed" { v } else { escape(&v) };
        let _ = write!(out, "<tr><td>{k}</td><td>{v}</td></tr>");
    }
    out.push_str("</table>\n");
    out
}

fn summary_table(rows: &[SummaryRow]) -> String {
    let mut out = String::from(
        "<table><tr><th>format</th><th>op</th><th>variant</th><th>criterion</th><th>cases</th><th>pass</th><th>deviation</th><th>fail</th><th>worst error / bound</th><th>verdict</th></tr>\n",
    );
    for s in rows {
        let v = s.verdict();
        let _ = writeln!(
            out,
            "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            verdict_class(v),
            escape(&s.format),
            escape(&s.op),
            escape(&s.variant),
            escape(&s.criterion),
            s.cases,
            s.passed,
            s.platform_deviations,
            s.failed,
            number(s.worst_of_bound),
            verdict_word(v)
        );
    }
    out.push_str("</table>\n");
    out
}

/// Every case that did not pass, with the judge's words, and what a deviation means.
fn exceptions<'a>(cases: impl Iterator<Item = (String, &'a CaseResult)>) -> String {
    let mut list = String::new();
    let mut any_deviation = false;
    for (who, r) in cases.filter(|(_, r)| r.verdict != Verdict::Pass) {
        any_deviation |= r.verdict == Verdict::PlatformDeviation;
        let _ = writeln!(
            list,
            "<li class=\"{}\"><b>{}</b> {} — {} {} {} {:?}: {}</li>",
            verdict_class(r.verdict),
            verdict_word(r.verdict),
            escape(&who),
            escape(&r.format),
            escape(&r.op),
            escape(&r.variant),
            r.shape,
            escape(&r.detail)
        );
    }
    if list.is_empty() {
        return "<p>Every case passed its criterion.</p>\n".into();
    }
    let note = if any_deviation { format!("<p>{DEVIATION_NOTE}</p>\n") } else { String::new() };
    format!("<h2>Cases that did not pass</h2>\n{note}<ul>\n{list}</ul>\n")
}

/// The chart of worst error/bound per format, one bar per op (the worst of its variants).
fn error_chart(rows: &[SummaryRow]) -> String {
    let mut formats: Vec<String> = Vec::new();
    for r in rows {
        if !formats.contains(&r.format) {
            formats.push(r.format.clone());
        }
    }
    let series = Op::ALL
        .iter()
        .map(|op| {
            let values = formats
                .iter()
                .map(|f| {
                    rows.iter()
                        .filter(|r| &r.format == f && r.op == op.name())
                        .map(|r| r.worst_of_bound)
                        .reduce(f64::max)
                })
                .collect();
            (op.name().to_string(), values)
        })
        .collect();
    let bars = Bars {
        title: "Worst error as a fraction of its bound (log scale; bar past the red line = over the bound)".into(),
        axis: "error / bound".into(),
        categories: formats,
        series,
        log: Some((1e-6, 10.0)),
        marker: Some((1.0, "bound".into())),
    };
    match chart::svg(&[bars], 900) {
        Ok(svg) => format!("<h2>Chart</h2>\n{svg}\n"),
        Err(e) => format!("<p>chart not drawn: {}</p>\n", escape(&e.to_string())),
    }
}

/// A conformance run as one HTML page.
pub fn conformance_html(r: &Report) -> String {
    let mut body = format!(
        "<h1>ninfer-wgpu conformance</h1>\n<p><b>{}</b> on {}</p>\n{}",
        escape(&r.summary_line()),
        escape(&r.platform.summary()),
        facts(&r.platform, &r.producer, r.seed)
    );
    body.push_str("<h2>Summary per format × op × variant</h2>\n");
    body.push_str("<p>Criteria from NInfer's criteria.md: <i>exact</i> = bit for bit; <i>bounded</i> = within the named ULPs; <i>A32</i> = per-output bound of an f32 dot product over exact weights, and relative L2 ≤ 1e-5.</p>\n");
    body.push_str(&summary_table(&r.summary));
    body.push_str(&exceptions(r.results.iter().map(|c| (String::new(), c))));
    if !r.not_run.is_empty() {
        body.push_str("<h2>Not run on this device (capability table)</h2>\n<ul>\n");
        for n in &r.not_run {
            let _ = writeln!(
                body,
                "<li>{} {} {}: {}</li>",
                escape(&n.format),
                escape(&n.op),
                escape(&n.variant),
                escape(&n.reason)
            );
        }
        body.push_str("</ul>\n");
    }
    body.push_str(&error_chart(&r.summary));
    page(&format!("conformance on {}", r.platform.name), &body)
}

/// A verify run as one HTML page: the tensors, then the summary per format.
pub fn verify_html(r: &VerifyReport) -> String {
    let unchecked = match r.unsupported {
        0 => String::new(),
        u => format!(", {u} not checked (type not registered)"),
    };
    let mut body = format!(
        "<h1>ninfer-wgpu verify: {}</h1>\n<p><b>{} tensors, {} failed{unchecked}</b> on {}</p>\n{}",
        escape(&r.file),
        r.tensors.len(),
        r.failed,
        escape(&r.platform.summary()),
        facts(&r.platform, &r.producer, r.seed)
    );
    // Summary and chart first: a shared report is read from the top.
    let cases: Vec<CaseResult> = r.results().cloned().collect();
    let summary = summarize(&cases);
    body.push_str("<h2>Summary per format × op</h2>\n");
    body.push_str(&summary_table(&summary));
    body.push_str(&error_chart(&summary));
    body.push_str(&exceptions(
        r.tensors
            .iter()
            .flat_map(|t| t.report.iter())
            .flat_map(|rep| rep.results.iter().map(move |c| (rep.name.clone(), c))),
    ));
    body.push_str("<h2>Tensors</h2>\n<p>A check not run says why on hover.</p>\n<table><tr><th>tensor</th><th>format</th><th>shape</th><th>bytes</th><th>verdict</th><th>worst error / bound</th><th>time</th><th>checks</th></tr>\n");
    for t in &r.tensors {
        let class = match t.verdict.as_str() {
            "pass" => "pass",
            "deviation" => "deviation",
            _ => "fail",
        };
        let (format, shape, bytes, checks) = match (&t.report, &t.error) {
            (Some(rep), _) => {
                let checks: Vec<String> = rep
                    .results
                    .iter()
                    .map(|c| format!("{} {}", escape(&c.op), verdict_word(c.verdict)))
                    .chain(
                        rep.not_run
                            .iter()
                            .map(|(op, why)| format!("<span title=\"{}\">{} —</span>", escape(why), escape(op))),
                    )
                    .collect();
                (rep.format.clone(), format!("{:?}", rep.shape), rep.bytes.to_string(), checks.join(" · "))
            }
            (None, e) => (String::new(), String::new(), String::new(), escape(e.as_deref().unwrap_or_default())),
        };
        let _ = writeln!(
            body,
            "<tr class=\"{class}\"><td>{}</td><td>{}</td><td class=\"k\">{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n k\">{:.2} s</td><td class=\"k\">{checks}</td></tr>",
            escape(&t.name),
            escape(&format),
            escape(&shape),
            bytes,
            escape(&t.verdict),
            number(t.worst_of_bound()),
            t.seconds,
        );
    }
    body.push_str("</table>\n");
    page(&format!("verify {} on {}", r.file, r.platform.name), &body)
}

#[cfg(not(target_arch = "wasm32"))]
/// `bench --plot`: effective GB/s per format (the device's copy bandwidth marked) beside the
/// ratio to that bandwidth, one bar per op × J × shape.
pub fn bench_svg(rows: &[crate::bench::BenchRow], copy_gb_per_s: f64, device: &str) -> crate::Result<String> {
    let mut formats: Vec<String> = Vec::new();
    let mut cases: Vec<String> = Vec::new();
    for r in rows {
        let case = format!("{}×{} {}x{}", r.op, r.columns, r.n, r.k);
        if !formats.iter().any(|f| f == r.format) {
            formats.push(r.format.to_string());
        }
        if !cases.contains(&case) {
            cases.push(case);
        }
    }
    let series = |value: &dyn Fn(&crate::bench::BenchRow) -> f64| -> Vec<(String, Vec<Option<f64>>)> {
        cases
            .iter()
            .map(|case| {
                let values = formats
                    .iter()
                    .map(|f| {
                        rows.iter()
                            .find(|r| r.format == f && format!("{}×{} {}x{}", r.op, r.columns, r.n, r.k) == *case)
                            .map(value)
                    })
                    .collect();
                (case.clone(), values)
            })
            .collect()
    };
    let speed = Bars {
        title: format!("GB/s of encoded weights on {device}"),
        axis: "GB/s".into(),
        categories: formats.clone(),
        series: series(&|r| r.gb_per_s),
        log: None,
        marker: Some((copy_gb_per_s, format!("buffer copy {copy_gb_per_s:.1} GB/s"))),
    };
    let ratio_series = series(&|r| 100.0 * r.copy_ratio);
    let ratio = Bars {
        title: "Ratio to the device's buffer-copy bandwidth".into(),
        axis: "% of copy bandwidth".into(),
        categories: formats,
        series: ratio_series,
        log: None,
        marker: Some((100.0, "copy bandwidth".into())),
    };
    chart::svg(&[speed, ratio], 700)
}
