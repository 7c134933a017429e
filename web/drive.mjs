// Drives the conformance page in headless Chromium (Debian's /usr/bin/chromium, whose WebGPU
// runs on SwiftShader here): fails when no WebGPU adapter appears, checks that bad files are
// refused with the CLI's messages and that a GGUF verifies in the page, then runs the whole
// conformance suite and prints its summary line; a failing case, a run of zero cases or fewer
// cases than the suite planned fails. Usage:
//   node drive.mjs URL [--json OUT] [--formats a,b] [--fixtures DIR-URL] [--expect-errors FILE]
import { launch, failures } from './headless.mjs';
import { readFileSync, writeFileSync } from 'node:fs';
import { shortfall } from './report-check.mjs';

const args = process.argv.slice(2);
const url = args[0];
const opt = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const minutes = 25;

const browser = await launch();
const { fail, failed } = failures();
try {
  const page = await browser.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error') console.error(`page: ${m.text()}`);
  });
  page.on('pageerror', (e) => fail(`uncaught in the page: ${e.message}`));
  const formats = opt('--formats');
  const started = Date.now();
  await page.goto(`${url}/?run=conformance${formats ? '&formats=' + formats : ''}`);
  await page.waitForFunction(() => window.ninfer && (window.ninfer.api || window.ninfer.done), null, { timeout: 120_000 });
  const opened = await page.evaluate(() => ({ error: window.ninfer.error, platform: window.ninfer.platform }));
  if (!opened.platform) {
    throw new Error(`no WebGPU adapter appeared: ${opened.error}`);
  }
  console.log(`WebGPU adapter: ${opened.platform.name || '(no name)'} (${opened.platform.backend}, ${opened.platform.device_type}); features: ${opened.platform.features.join(', ') || 'none'}`);

  // Bad input: refused with exactly the CLI's message (drive.sh wrote both files and the
  // CLI's messages), never a panic.
  const expected = opt('--expect-errors');
  const fixtures = opt('--fixtures');
  if (expected && fixtures) {
    for (const [name, cli] of Object.entries(JSON.parse(readFileSync(expected, 'utf8')))) {
      const got = await page.evaluate(async ([base, name]) => {
        const bytes = new Uint8Array(await (await fetch(`${base}/${name}`)).arrayBuffer());
        try {
          window.ninfer.api.loadBytes(name, bytes, null);
          return { ok: true };
        } catch (e) {
          return { ok: false, message: e.message, panic: globalThis.ninferLastPanic || null };
        }
      }, [fixtures, name]);
      if (got.ok) fail(`${name} was accepted`);
      else if (got.panic) fail(`${name} panicked: ${got.panic}`);
      else if (got.message !== cli) fail(`${name}: the page says ${JSON.stringify(got.message)}, the CLI ${JSON.stringify(cli)}`);
      else console.log(`refused as the CLI does: ${name}: ${got.message}`);
    }
    // A GGUF dropped on the page: listed and verified on this GPU.
    const verified = await page.evaluate(async (base) => {
      const bytes = new Uint8Array(await (await fetch(`${base}/fixture.gguf`)).arrayBuffer());
      const rows = window.ninfer.api.loadBytes('fixture.gguf', bytes, null);
      const report = await window.ninfer.api.verifyModel();
      return { listed: rows.length, tensors: report.tensors.length, failed: report.failed, verdicts: report.tensors.map((t) => `${t.name}: ${t.verdict}${t.error ? ' ' + t.error : ''}`) };
    }, fixtures);
    console.log(`fixture.gguf in the page: ${verified.listed} listed, ${verified.tensors} verified, ${verified.failed} failed`);
    if (verified.failed !== 0 || verified.tensors === 0) fail(`verify in the page: ${verified.verdicts.join('; ')}`);
    // The engine API: a bound product, the page's own kernel after it, one read-back.
    const step = await page.evaluate(async () => {
      try {
        return await window.ninfer.api.engineStep();
      } catch (e) {
        return { error: e.message, panic: globalThis.ninferLastPanic || null };
      }
    });
    if (step.error) fail(`engine step in the page: ${step.error}${step.panic ? ' ' + step.panic : ''}`);
    else if (step.mismatches !== 0 || step.outputs === 0) fail(`engine step: ${step.mismatches} of ${step.outputs} outputs differ from the host-slice matvec`);
    else console.log(`engine step in the page: ${step.format} ${step.n}x${step.k}, ${step.columns} columns bound, the page's kernel after it: ${step.outputs} outputs bit for bit`);
  }

  await page.waitForFunction(() => window.ninfer.done, null, { timeout: minutes * 60_000, polling: 1000 });
  const { result, error, timings } = await page.evaluate(() => window.ninfer);
  if (!result) throw new Error(`the conformance run did not finish: ${error}`);
  const out = opt('--json');
  if (out) writeFileSync(out, JSON.stringify(result, null, 2));
  const bad = result.results.filter((r) => r.verdict !== 'pass');
  for (const r of bad) console.log(`${r.verdict}: ${r.format} ${r.op} ${r.variant} ${JSON.stringify(r.shape)}: ${r.detail}`);
  const formatsRun = new Set(result.results.map((r) => r.format)).size;
  console.log(`timings: wasm ready ${timings.wasm_ready_ms} ms, GPU ready ${timings.gpu_ready_ms} ms, first result ${timings.first_result_ms} ms, suite ${timings.conformance_ms} ms (wall ${Date.now() - started} ms)`);
  console.log(`${formatsRun} formats, ${result.results.length} cases`);
  console.log(`${result.passed} passed, ${result.failed} failed, ${result.platform_deviations} platform deviations, ${result.results.length} of ${result.planned} planned cases ran`);
  if (result.failed > 0) fail(`${result.failed} cases failed`);
  for (const problem of shortfall(result)) fail(problem);
} catch (e) {
  fail(e.message);
} finally {
  await browser.close();
}
process.exit(failed() ? 1 : 0);
