// Drives the generation page (web/generate.html) in headless Chromium (WebGPU on SwiftShader
// here): loads the model from the page's own origin, generates greedily, and checks that the
// tokens equal the native CLI's on the same kind of adapter (`generate --greedy --json`, read
// from EXPECTED) and that each came through onToken as it was generated. Prints the page's load
// time and tokens per second. Usage:
//   node generate-check.mjs URL MODEL-URL PROMPT N EXPECTED.json
import { launch, failures } from './headless.mjs';
import { readFileSync } from 'node:fs';

const [url, model, prompt, n, expectedFile] = process.argv.slice(2);
const expected = JSON.parse(readFileSync(expectedFile, 'utf8'));
const minutes = 15;

const browser = await launch();
const { fail, failed } = failures();
try {
  const page = await browser.newPage();
  // The page's long tasks (over 50 ms on its main thread) from the start: the model runs in a
  // worker, so loading and generating should leave none long.
  await page.addInitScript(() => {
    window.longTasks = [];
    new PerformanceObserver((list) => list.getEntries().forEach((e) => window.longTasks.push(e.duration)))
      .observe({ type: 'longtask', buffered: true });
  });
  page.on('console', (m) => m.type() === 'error' && console.error(`page: ${m.text()}`));
  page.on('pageerror', (e) => fail(`uncaught in the page: ${e.message}`));
  const query = new URLSearchParams({ model, prompt, n });
  const started = Date.now();
  await page.goto(`${url}/generate.html?${query}`);
  await page.waitForFunction(() => window.ninferGenerate && (window.ninferGenerate.result || window.ninferGenerate.error),
    null, { timeout: minutes * 60_000, polling: 500 });
  const hook = await page.evaluate(() => window.ninferGenerate);
  if (hook.error) throw new Error(`the page failed: ${hook.error}`);
  const { result, loaded, timings, streamed } = hook;
  const same = JSON.stringify(result.tokens) === JSON.stringify(expected.tokens);
  console.log(`browser: ${loaded.adapter}, ${loaded.profile}`);
  console.log(`browser tokens: ${JSON.stringify(result.tokens)} ${JSON.stringify(result.text)}`);
  console.log(`native tokens:  ${JSON.stringify(expected.tokens)} (${expected.adapter})`);
  if (!same) fail('the browser\'s greedy tokens differ from the native CLI\'s');
  // Fewer than asked only where the native run stopped there too (an end token).
  if (result.tokens.length > Number(n)) fail(`${result.tokens.length} tokens generated, ${n} asked`);
  if (JSON.stringify(streamed) !== JSON.stringify(result.tokens)) fail(`onToken saw ${JSON.stringify(streamed)}`);
  const shown = await page.evaluate(() => document.getElementById('rate').textContent);
  if (!/tokens\/s/.test(shown)) fail(`the page shows no tokens per second: ${JSON.stringify(shown)}`);
  const loadLine = await page.evaluate(() => document.getElementById('model-line').textContent);
  if (!/ in [0-9.]+ s, on the GPU in [0-9.]+ s/.test(loadLine)) fail(`the page shows no load time: ${JSON.stringify(loadLine)}`);
  console.log(`the page says: ${loadLine} | ${shown}`);
  const longTasks = await page.evaluate(() => window.longTasks);
  console.log(`the page's main thread: ${longTasks.length} long tasks, the longest ${Math.round(Math.max(0, ...longTasks))} ms`);
  console.log(`load: fetch ${timings.fetch_ms} ms, upload and bind ${timings.load_ms} ms (${(loaded.device_bytes / 1e6).toFixed(0)} MB on the device)`);
  console.log(`prompt ${result.prompt_tokens} tokens at ${result.prompt_tokens_per_s.toFixed(2)} tokens/s, ` +
    `${result.tokens.length} generated at ${result.generation_tokens_per_s.toFixed(2)} tokens/s (native: ` +
    `${expected.prompt_tokens_per_s.toFixed(2)} / ${expected.generation_tokens_per_s.toFixed(2)}); wall ${Date.now() - started} ms`);
  console.log(same ? `the browser's ${result.tokens.length} greedy tokens equal the native CLI's` : 'MISMATCH');
} catch (e) {
  fail(e.message);
} finally {
  await browser.close();
}
process.exit(failed() ? 1 : 0);
