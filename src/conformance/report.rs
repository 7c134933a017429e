//! What a conformance or verify run reports, in one schema for the CLI's `--json`, the HTML
//! report and the browser: the device, the seed, every case, the summary per format × op ×
//! variant, and what the capability table ruled out. Reports read back, so two devices' runs
//! can be compared (`conformance --compare`).

use super::{CaseResult, PlannedCase, TensorReport, Verdict};
use crate::format::Format;
use crate::gpu::capability::{self, Status};
use crate::gpu::Platform;
use serde::{Deserialize, Serialize};

/// Serde for error sizes: an unbounded (infinite or NaN) error is written as JSON `null`, as
/// serde_json does for any non-finite number, and `null` reads back as infinity.
pub mod unbounded {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        match x.is_finite() {
            true => s.serialize_f64(*x),
            false => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
    }
}

/// One line of a conformance summary: every case of a (format, op, variant).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryRow {
    pub format: String,
    pub op: String,
    pub variant: String,
    pub criterion: String,
    pub cases: usize,
    /// The cases the run planned for this row ([`super::plan`]); 0 in a verify report and in
    /// reports written before runs kept count.
    #[serde(default)]
    pub planned: usize,
    pub passed: usize,
    pub platform_deviations: usize,
    pub failed: usize,
    /// The largest `max_error` of its cases (ULPs for bounded dequant, error/bound for A32).
    #[serde(with = "unbounded")]
    pub worst: f64,
    /// The largest error as a fraction of its bound (see [`CaseResult::of_bound`]).
    #[serde(with = "unbounded")]
    pub worst_of_bound: f64,
}

impl SummaryRow {
    /// The row's verdict: failed if any case failed or fewer cases ran than were planned, a
    /// deviation if any deviated.
    pub fn verdict(&self) -> Verdict {
        if self.failed > 0 || self.cases < self.planned {
            Verdict::Fail
        } else if self.platform_deviations > 0 {
            Verdict::PlatformDeviation
        } else {
            Verdict::Pass
        }
    }
}

/// Results grouped by (format, op, variant), in the order they first appear.
pub fn summarize(results: &[CaseResult]) -> Vec<SummaryRow> {
    let mut rows: Vec<SummaryRow> = Vec::new();
    for r in results {
        let at = match rows.iter().position(|s| (&s.format, &s.op, &s.variant) == (&r.format, &r.op, &r.variant)) {
            Some(i) => i,
            None => {
                rows.push(SummaryRow {
                    format: r.format.clone(),
                    op: r.op.clone(),
                    variant: r.variant.clone(),
                    criterion: r.criterion.clone(),
                    cases: 0,
                    planned: 0,
                    passed: 0,
                    platform_deviations: 0,
                    failed: 0,
                    worst: 0.0,
                    worst_of_bound: 0.0,
                });
                rows.len() - 1
            }
        };
        let s = &mut rows[at];
        s.cases += 1;
        match r.verdict {
            Verdict::Pass => s.passed += 1,
            Verdict::PlatformDeviation => s.platform_deviations += 1,
            Verdict::Fail => s.failed += 1,
        }
        s.worst = s.worst.max(r.max_error);
        s.worst_of_bound = s.worst_of_bound.max(r.of_bound);
    }
    rows
}

/// A (format, op, variant) the capability table does not run on this device, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotRun {
    pub format: String,
    pub op: String,
    pub variant: String,
    pub reason: String,
}

/// A whole conformance run: what `conformance --json` prints and the browser returns.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// `ninfer-wgpu VERSION`, so a shared report says which judge produced it.
    #[serde(default)]
    pub producer: String,
    pub platform: Platform,
    pub seed: u64,
    /// The cases the run planned ([`super::plan`]); the run succeeded only if every one ran.
    #[serde(default)]
    pub planned: usize,
    pub passed: usize,
    pub failed: usize,
    pub platform_deviations: usize,
    /// Per (format, op, variant): cases planned and run, and their verdicts. A planned row that
    /// produced no result is here too, with no cases.
    #[serde(default)]
    pub summary: Vec<SummaryRow>,
    #[serde(default)]
    pub not_run: Vec<NotRun>,
    pub results: Vec<CaseResult>,
}

/// This crate as a report's producer.
pub fn producer() -> String {
    format!("ninfer-wgpu {}", env!("CARGO_PKG_VERSION"))
}

impl Report {
    /// Counts, summarizes against the plan the results came from and lists the capability
    /// table's refusals for `formats`.
    pub fn new(
        platform: &Platform,
        seed: u64,
        formats: &[Format],
        planned: &[PlannedCase],
        results: Vec<CaseResult>,
    ) -> Report {
        let count = |v: Verdict| results.iter().filter(|r| r.verdict == v).count();
        let mut summary = summarize(&results);
        for p in planned {
            let key = (p.format.name(), p.op.name(), p.variant.name());
            match summary.iter_mut().find(|s| (s.format.as_str(), s.op.as_str(), s.variant.as_str()) == key) {
                Some(row) => row.planned += 1,
                None => summary.push(SummaryRow {
                    format: key.0.into(),
                    op: key.1.into(),
                    variant: key.2.into(),
                    criterion: "not run".into(),
                    cases: 0,
                    planned: 1,
                    passed: 0,
                    platform_deviations: 0,
                    failed: 0,
                    worst: 0.0,
                    worst_of_bound: 0.0,
                }),
            }
        }
        let not_run = capability::table(Some(platform))
            .into_iter()
            .filter(|r| formats.iter().any(|f| f.name() == r.format))
            .filter_map(|r| match r.status {
                Status::Unsupported(reason) => {
                    Some(NotRun { format: r.format.into(), op: r.op.into(), variant: r.variant.into(), reason })
                }
                Status::Supported => None,
            })
            .collect();
        Report {
            producer: producer(),
            platform: platform.clone(),
            seed,
            planned: planned.len(),
            passed: count(Verdict::Pass),
            failed: count(Verdict::Fail),
            platform_deviations: count(Verdict::PlatformDeviation),
            summary,
            not_run,
            results,
        }
    }

    /// The cases that did not pass, in run order.
    pub fn exceptions(&self) -> impl Iterator<Item = &CaseResult> {
        self.results.iter().filter(|r| r.verdict != Verdict::Pass)
    }

    /// The (format, op, variant) rows whose number of results differs from the plan, each
    /// saying how many ran: a case the runner dropped must fail the run, not shrink it.
    pub fn shortfall(&self) -> Vec<String> {
        self.summary
            .iter()
            .filter(|s| s.cases != s.planned)
            .map(|s| format!("{} {} {}: {} of {} planned cases ran", s.format, s.op, s.variant, s.cases, s.planned))
            .collect()
    }

    /// Whether the run passes: cases were planned, each of them ran, and none failed.
    pub fn succeeded(&self) -> bool {
        self.failed == 0 && self.planned > 0 && self.results.len() == self.planned && self.shortfall().is_empty()
    }

    /// `N passed, M failed, D platform deviations, R of P planned cases ran (seed S)`.
    pub fn summary_line(&self) -> String {
        format!(
            "{} passed, {} failed, {} platform deviations, {} of {} planned cases ran (seed {})",
            self.passed,
            self.failed,
            self.platform_deviations,
            self.results.len(),
            self.planned,
            self.seed
        )
    }
}

/// One tensor of a verified file: its report, or the error that stopped it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TensorOutcome {
    pub name: String,
    /// `pass`, `deviation`, `FAIL`, `error`, or `unsupported` (a type the registry lacks: not
    /// checked, and said so).
    pub verdict: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<TensorReport>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Wall time of the checks, measured by the caller (a browser has no `Instant`).
    pub seconds: f64,
}

impl TensorOutcome {
    pub fn new(name: String, report: crate::Result<TensorReport>, seconds: f64) -> TensorOutcome {
        match report {
            Ok(t) => {
                let verdict = if t.failed() {
                    "FAIL"
                } else if t.results.iter().any(|c| c.verdict == Verdict::PlatformDeviation) {
                    "deviation"
                } else {
                    "pass"
                };
                TensorOutcome { name, verdict: verdict.into(), report: Some(t), error: None, seconds }
            }
            Err(e) => {
                TensorOutcome { name, verdict: "error".into(), report: None, error: Some(e.to_string()), seconds }
            }
        }
    }

    /// A tensor of a type the registry lacks: listed with the reason, never left out.
    pub fn unsupported(name: String, reason: String) -> TensorOutcome {
        TensorOutcome { name, verdict: "unsupported".into(), report: None, error: Some(reason), seconds: 0.0 }
    }

    pub fn failed(&self) -> bool {
        matches!(self.verdict.as_str(), "FAIL" | "error")
    }

    /// The largest error/bound of its checks (0 when none ran).
    pub fn worst_of_bound(&self) -> f64 {
        self.report.iter().flat_map(|t| &t.results).map(|c| c.of_bound).fold(0.0, f64::max)
    }
}

/// A whole `verify` run: what `verify --json` prints and the browser returns.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VerifyReport {
    #[serde(default)]
    pub producer: String,
    pub file: String,
    pub platform: Platform,
    pub seed: u64,
    pub tensors: Vec<TensorOutcome>,
    pub failed: usize,
    /// Tensors not checked because the registry lacks their type (verdict `unsupported`).
    #[serde(default)]
    pub unsupported: usize,
}

impl VerifyReport {
    pub fn new(file: String, platform: &Platform, seed: u64, tensors: Vec<TensorOutcome>) -> VerifyReport {
        let failed = tensors.iter().filter(|t| t.failed()).count();
        let unsupported = tensors.iter().filter(|t| t.verdict == "unsupported").count();
        VerifyReport { producer: producer(), file, platform: platform.clone(), seed, tensors, failed, unsupported }
    }

    /// Every check of every tensor, for the per-format summary.
    pub fn results(&self) -> impl Iterator<Item = &CaseResult> {
        self.tensors.iter().flat_map(|t| t.report.iter()).flat_map(|r| &r.results)
    }
}

/// Where two reports differ, for one (format, op, variant).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    pub format: String,
    pub op: String,
    pub variant: String,
    /// The row in each report (`None`: not run there).
    pub a: Option<SummaryRow>,
    pub b: Option<SummaryRow>,
    /// Whether the verdicts differ (or only the size of the error).
    pub verdicts_differ: bool,
    pub what: String,
}

/// Errors closer than this factor are not called different: with different seeds the inputs
/// differ, and a rounding error's size varies from draw to draw.
const ERROR_FACTOR: f64 = 4.0;
/// Errors below this fraction of the bound are never called different (noise far inside it).
const ERROR_FLOOR: f64 = 0.05;

/// Every (format, op, variant) whose verdict differs between `a` and `b`, that one ran and the
/// other did not, or whose worst error/bound differs by more than a factor of 4 (above 5 % of
/// the bound). Verdict differences come first.
pub fn compare(a: &Report, b: &Report) -> Vec<Difference> {
    let key = |s: &SummaryRow| (s.format.clone(), s.op.clone(), s.variant.clone());
    let mut keys: Vec<(String, String, String)> = a.summary.iter().map(key).collect();
    for s in &b.summary {
        if !keys.contains(&key(s)) {
            keys.push(key(s));
        }
    }
    let find = |r: &Report, k: &(String, String, String)| r.summary.iter().find(|s| key(s) == *k).cloned();
    let why_not = |r: &Report, k: &(String, String, String)| {
        r.not_run
            .iter()
            .find(|n| (&n.format, &n.op, &n.variant) == (&k.0, &k.1, &k.2))
            .map(|n| n.reason.clone())
            .unwrap_or_else(|| "not in the run".into())
    };
    let mut out = Vec::new();
    for k in keys {
        let (ra, rb) = (find(a, &k), find(b, &k));
        let (verdicts_differ, what) = match (&ra, &rb) {
            (Some(x), Some(y)) if x.verdict() != y.verdict() => {
                (true, format!("{:?} on A, {:?} on B", x.verdict(), y.verdict()))
            }
            (Some(x), Some(y)) => {
                let (lo, hi) = (x.worst_of_bound.min(y.worst_of_bound), x.worst_of_bound.max(y.worst_of_bound));
                if hi > ERROR_FLOOR && hi > ERROR_FACTOR * lo {
                    (false, format!("worst error/bound {:.3} on A, {:.3} on B", x.worst_of_bound, y.worst_of_bound))
                } else {
                    continue;
                }
            }
            (Some(_), None) => (true, format!("not run on B: {}", why_not(b, &k))),
            (None, Some(_)) => (true, format!("not run on A: {}", why_not(a, &k))),
            (None, None) => continue,
        };
        out.push(Difference { format: k.0, op: k.1, variant: k.2, a: ra, b: rb, verdicts_differ, what });
    }
    out.sort_by_key(|d| !d.verdicts_differ);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::{Op, Variant};

    fn case(format: Format, op: Op, verdict: Verdict, of_bound: f64) -> CaseResult {
        CaseResult {
            verdict,
            max_error: of_bound,
            of_bound,
            ..super::super::blank(format, op, Variant::Workgroup, &[2, 3])
        }
    }

    #[test]
    fn summaries_count_every_case_once_under_its_format_op_and_variant() {
        let results = [
            case(Format::Bf16, Op::Dequant, Verdict::Pass, 0.0),
            case(Format::Q4G64Fp16, Op::Matmul, Verdict::Pass, 0.25),
            case(Format::Bf16, Op::Dequant, Verdict::Fail, 3.0),
            case(Format::Q4G64Fp16, Op::Matmul, Verdict::PlatformDeviation, 0.5),
        ];
        let rows = summarize(&results);
        assert_eq!(rows.len(), 2);
        let (a, b) = (&rows[0], &rows[1]);
        assert_eq!(
            (a.format.as_str(), a.op.as_str(), a.cases, a.passed, a.failed, a.worst),
            ("bf16", "dequant", 2, 1, 1, 3.0)
        );
        assert_eq!(a.verdict(), Verdict::Fail);
        assert_eq!(
            (b.format.as_str(), b.cases, b.passed, b.platform_deviations, b.worst_of_bound),
            ("q4_g64_fp16", 2, 1, 1, 0.5)
        );
        assert_eq!(b.verdict(), Verdict::PlatformDeviation);
    }

    fn platform() -> Platform {
        serde_json::from_value(serde_json::json!({
            "name": "test", "backend": "vulkan", "device_type": "Cpu", "vendor": 0, "device": 0, "driver": "",
            "driver_info": "", "features": [], "has_subgroups": false, "has_shader_f16": false,
            "subgroup_min_size": 0, "subgroup_max_size": 0,
            "limits": { "max_buffer_size": 1, "max_storage_buffer_binding_size": 1, "min_storage_buffer_offset_alignment": 256,
                "max_compute_workgroups_per_dimension": 1, "max_compute_invocations_per_workgroup": 256,
                "max_storage_buffers_per_shader_stage": 8, "max_compute_workgroup_storage_size": 16384 },
            "probes": {} }))
        .expect("platform literal")
    }

    fn planned(format: Format, op: Op) -> PlannedCase {
        PlannedCase { format, op, variant: Variant::Workgroup, shape: vec![2, 3], columns: 1, records: Vec::new() }
    }

    /// A report whose plan is exactly its results.
    fn report(results: Vec<CaseResult>) -> Report {
        let plan: Vec<PlannedCase> = results
            .iter()
            .map(|r| {
                let op = Op::ALL.into_iter().find(|op| op.name() == r.op).expect("an op name");
                planned(r.format.parse().expect("a format name"), op)
            })
            .collect();
        Report::new(&platform(), 7, &[Format::Bf16, Format::Q4G64Fp16], &plan, results)
    }

    #[test]
    fn a_run_with_fewer_results_than_planned_cases_fails() {
        let plan = [
            planned(Format::Bf16, Op::Dequant),
            planned(Format::Bf16, Op::Dequant),
            planned(Format::Q4G64Fp16, Op::Matmul),
        ];
        let pass = |format, op| case(format, op, Verdict::Pass, 0.0);
        let formats = [Format::Bf16, Format::Q4G64Fp16];
        let all =
            vec![pass(Format::Bf16, Op::Dequant), pass(Format::Bf16, Op::Dequant), pass(Format::Q4G64Fp16, Op::Matmul)];
        let full = Report::new(&platform(), 7, &formats, &plan, all.clone());
        assert!(full.succeeded() && full.shortfall().is_empty(), "{:?}", full.shortfall());
        assert!(full.summary_line().contains("3 of 3 planned cases ran"), "{}", full.summary_line());

        let dropped = Report::new(&platform(), 7, &formats, &plan, all[1..].to_vec());
        assert!(!dropped.succeeded(), "a dropped case fails the run although every result passed");
        assert_eq!(dropped.shortfall(), ["bf16 dequant workgroup: 1 of 2 planned cases ran"]);
        assert_eq!(dropped.summary[0].verdict(), Verdict::Fail);

        let no_row = Report::new(&platform(), 7, &formats, &plan, all[..2].to_vec());
        assert_eq!(no_row.shortfall(), ["q4_g64_fp16 matmul workgroup: 0 of 1 planned cases ran"]);
        let back: Report =
            serde_json::from_str(&serde_json::to_string(&no_row).expect("serializes")).expect("reads back");
        assert_eq!((back.planned, back.shortfall()), (3, no_row.shortfall()), "the plan travels with the report");

        let nothing = Report::new(&platform(), 7, &formats, &[], Vec::new());
        assert!(!nothing.succeeded(), "a run of zero cases is no pass");
    }

    #[test]
    fn reports_read_back_and_compare_by_verdict_then_by_error_size() {
        let a = report(vec![
            case(Format::Bf16, Op::Dequant, Verdict::Pass, 0.0),
            case(Format::Q4G64Fp16, Op::Matmul, Verdict::Pass, 0.02),
            case(Format::Q4G64Fp16, Op::Gather, Verdict::Pass, 0.0),
        ]);
        let b = report(vec![
            case(Format::Bf16, Op::Dequant, Verdict::Fail, f64::INFINITY),
            case(Format::Q4G64Fp16, Op::Matmul, Verdict::Pass, 0.5),
        ]);
        let text = serde_json::to_string(&b).expect("serializes");
        // Infinity is not JSON: it is written as null and reads back as infinity.
        assert!(text.contains("\"worst\":null"), "{text}");
        let back: Report = serde_json::from_str(&text).expect("reads back");
        assert_eq!(back.summary, b.summary);
        let d = compare(&a, &back);
        let ops: Vec<(&str, &str, bool)> =
            d.iter().map(|d| (d.format.as_str(), d.op.as_str(), d.verdicts_differ)).collect();
        assert_eq!(ops, [("bf16", "dequant", true), ("q4_g64_fp16", "gather", true), ("q4_g64_fp16", "matmul", false)]);
        assert!(compare(&a, &a).is_empty());
    }
}
