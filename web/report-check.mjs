// What fails a conformance report (the CLI's --json schema, as the page returns it) besides a
// failing case: no case at all, or fewer results than the suite planned, overall or for any
// format × op × variant. A run that quietly drops cases must not pass as a smaller green run.
// Kept apart from the Rust side's Report::shortfall on purpose: drive.mjs checks the page's
// report itself. Tested by report-check.test.mjs (node --test, run by conformance.sh).
export function shortfall(report) {
  const problems = [];
  const ran = Array.isArray(report.results) ? report.results.length : 0;
  const planned = Number.isInteger(report.planned) ? report.planned : 0;
  if (planned === 0) problems.push('the report plans no case (no `planned` count)');
  if (ran === 0) problems.push('no case ran');
  if (ran !== planned) problems.push(`${ran} of ${planned} planned cases ran`);
  for (const s of report.summary ?? []) {
    if (s.cases !== s.planned) problems.push(`${s.format} ${s.op} ${s.variant}: ${s.cases} of ${s.planned} planned cases ran`);
  }
  return problems;
}
