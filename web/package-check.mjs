// Drives the scratch app (web/package-test/, with the packed tarball installed in its
// node_modules) in headless Chromium: a product against the CLI's CPU oracle, a greedy
// generation in the worker equal to the CLI's, the cache, abort, and the failures a page must
// get as messages. Usage (web/package-check.sh writes CONFIG):
//   node package-check.mjs APP-URL CONFIG.json
// CONFIG: { product: { url, tensor, x, w, y, n, k }, model: { url, prompt, n, native },
//           junk, missing, large: { url, n, cap, native } | null }  (x, w, y, native: files on
//           this machine)
import { launch, failures } from './headless.mjs';
import { readFileSync } from 'node:fs';

const [appUrl, configFile] = process.argv.slice(2);
const config = JSON.parse(readFileSync(configFile, 'utf8'));
const f32 = (path) => {
  const b = readFileSync(path); // a view into node's pooled buffer: copy out its own bytes
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
};
const { fail, failed } = failures();
const check = (ok, what) => (ok ? console.log(`ok: ${what}`) : fail(what));

// The A32 criterion (../spec criteria): |y - y_ref| <= (K + 2) 2^-24 Σ_k |W[n,k] x[k]| per
// output, all finite, relative L2 over the output at most 1e-5.
function judgeA32(y, { w, x, y: ref, n, k }) {
  const W = f32(w), X = f32(x), R = f32(ref);
  if (y.length !== n) return `${y.length} outputs, ${n} expected`;
  let err2 = 0, ref2 = 0;
  for (let i = 0; i < n; i++) {
    let bound = 0;
    for (let j = 0; j < k; j++) bound += Math.abs(W[i * k + j] * X[j]);
    bound *= (k + 2) * 2 ** -24;
    const d = Math.abs(y[i] - R[i]);
    if (!Number.isFinite(y[i]) || !(d <= bound)) return `output ${i}: ${y[i]} vs ${R[i]} (bound ${bound})`;
    err2 += d * d;
    ref2 += R[i] * R[i];
  }
  const rel = Math.sqrt(err2 / ref2);
  return rel <= 1e-5 ? null : `relative L2 ${rel}`;
}

// Each call into the page, bounded: a promise that never settles is a failure named by its step.
const within = (what, seconds, promise) =>
  Promise.race([promise, new Promise((_, reject) => setTimeout(() => reject(new Error(`${what}: no answer in ${seconds} s`)), seconds * 1000))]);

const browser = await launch();
try {
  const page = await browser.newPage();
  page.on('console', (m) => m.type() === 'error' && console.error(`page: ${m.text()}`));
  page.on('pageerror', (e) => fail(`uncaught in the page: ${e.message}`));
  await page.goto(`${appUrl}/index.html`);
  await page.waitForFunction(() => window.appReady, null, { timeout: 60_000 });

  const p = config.product;
  const y = await within('product', 120, page.evaluate(([url, tensor, x]) => window.app.product(url, tensor, x), [p.url, p.tensor, Array.from(f32(p.x))]));
  const verdict = judgeA32(y, p);
  check(verdict === null, `the package's product of ${p.tensor} (${p.n} × ${p.k}) meets A32 against the CLI's CPU oracle${verdict ? `: ${verdict}` : ''}`);

  const m = config.model;
  const native = JSON.parse(readFileSync(m.native, 'utf8'));
  await page.evaluate(() => window.app.clearCachedModels());
  const first = await within('generate in the worker', 300, page.evaluate(([url, prompt, n]) => window.app.generate(url, prompt, n), [m.url, m.prompt, m.n]));
  const same = JSON.stringify(first.result.tokens) === JSON.stringify(native.tokens);
  check(same, `the worker's greedy tokens ${JSON.stringify(first.result.tokens)} equal the CLI's ${JSON.stringify(native.tokens)}`);
  check(JSON.stringify(first.streamed) === JSON.stringify(first.result.tokens), 'each token came through onToken, in order');
  const reads = first.progress.filter((x) => x.phase === 'read');
  const steps = (phase) => first.progress.filter((x) => x.phase === phase);
  const counted = (list) => list.length > 0 && list.every((x, i) => x.done === i + 1 && x.of === list.length);
  check(reads.length > 0 && reads.at(-1).bytes === first.info.bytes && counted(steps('validate')) && counted(steps('upload')) &&
    first.progress.at(-1).phase === 'upload',
    `load progress: ${reads.length} read reports up to ${first.info.bytes} bytes, ${steps('validate').length} tensors validated, ` +
    `${steps('upload').length} uploads`);
  check(first.info.from === 'network' && first.info.cached === 'stored', `first load from the network, stored (${first.info.from}, ${first.info.cached})`);
  check(/freed/.test(first.afterFree || ''), `generate after free is refused: ${first.afterFree}`);

  const listed = await page.evaluate(() => window.app.cachedModels());
  check(listed.length === 1 && listed[0].url.endsWith(m.url) && listed[0].bytes === first.info.bytes, `cachedModels: ${JSON.stringify(listed)}`);
  // A new page (a reload) reads it from the cache, and generates the same.
  await page.reload();
  await page.waitForFunction(() => window.appReady, null, { timeout: 60_000 });
  const second = await within('generate from the cache', 300, page.evaluate(([url, prompt, n]) => window.app.generate(url, prompt, n), [m.url, m.prompt, m.n]));
  check(second.info.from === 'cache', `after a reload the model comes from the cache (${second.info.from})`);
  check(JSON.stringify(second.result.tokens) === JSON.stringify(native.tokens), 'and generates the same tokens');
  // The bytes are checked and uploaded as they come: the last is read before the load ends.
  console.log(`load: network ${first.info.read_s.toFixed(3)} s to the last byte, ${first.info.load_s.toFixed(3)} s to the bound model; ` +
    `cache ${second.info.read_s.toFixed(3)} s, ${second.info.load_s.toFixed(3)} s (${first.info.bytes} bytes); ` +
    `wasm memory after the load ${first.info.wasm_memory_bytes} bytes`);
  const memory = await within('generate from bytes', 300, page.evaluate(([url, prompt, n]) => window.app.fromMemory(url, prompt, n), [m.url, m.prompt, m.n]));
  check(memory.info.from === 'memory' && JSON.stringify(memory.result.tokens) === JSON.stringify(native.tokens),
    `handed over as bytes (${memory.info.from}), it generates the same tokens`);
  const dropped = await page.evaluate(() => window.app.clearCachedModels());
  const left = await page.evaluate(() => window.app.cachedModels());
  check(dropped === 1 && left.length === 0, `clearCachedModels dropped ${dropped}, ${left.length} left`);

  // Abort at the second token. On the page's thread the flag is read right after onToken, so
  // exactly two tokens; in the worker the abort message arrives while a step runs, so the
  // generation stops at the token after it at the latest.
  const at = 2, room = 12;
  const onPage = await within('abort on the page', 300, page.evaluate(([url, prompt, n, at]) => window.app.abortOnPage(url, prompt, n, at), [m.url, m.prompt, room, at]));
  check(onPage.stopped && onPage.tokens.length === at, `abort on the page: ${onPage.tokens.length} tokens, stopped ${onPage.stopped}`);
  const inWorker = await within('abort in the worker', 300, page.evaluate(([url, prompt, n, at]) => window.app.abortInWorker(url, prompt, n, at), [m.url, m.prompt, room, at]));
  const got = inWorker.result.tokens.length;
  check(inWorker.result.stopped && got >= at && got <= at + 2, `abort in the worker: ${got} tokens of ${room}, stopped ${inWorker.result.stopped}`);
  check(!inWorker.again.stopped && inWorker.again.tokens.length > got, `a generation after the abort runs whole (${inWorker.again.tokens.length} tokens)`);

  const errors = await within('the failures', 300, page.evaluate((urls) => window.app.failures(urls), { model: m.url, junk: config.junk, missing: config.missing }));
  const expect = {
    corrupt: /GGUF|magic|not a/i,
    missing: /HTTP 404/,
    truncatedFile: /lies inside the file|truncat/i,
    truncatedStream: /stream ended after \d+ of its \d+ bytes/,
    noWorker: /worker failed/,
    badOptions: /unknown profile `a16`/,
    noWebGpu: /no WebGPU adapter/,
    badLimit: /maxBinding -5 is not a whole number of bytes/,
    badSize: /size lots is not a whole number of bytes/,
    tooSmall: /logits is over this adapter's 1024-byte storage binding/,
    outOfMemory: /the device is out of memory/,
  };
  for (const [what, pattern] of Object.entries(expect)) {
    check(typeof errors[what] === 'string' && pattern.test(errors[what]), `${what} is refused: ${errors[what]}`);
  }

  // A file larger than the heap: streamed, it loads and generates the CLI's tokens; whole, it
  // cannot even be handed over.
  const L = config.large;
  if (L) {
    const got = await within('the capped heap', 600, page.evaluate(([url, prompt, n]) => window.app.capped(url, prompt, n), [L.url, m.prompt, L.n]));
    const want = JSON.parse(readFileSync(L.native, 'utf8')).tokens;
    if (got.error) fail(`a ${L.cap}-byte heap: the streamed load failed: ${got.error}`);
    else {
      const { bytes, wasm_memory_bytes: peak, load_s, read_s } = got.info;
      check(bytes > L.cap && peak <= L.cap, `a ${bytes}-byte model streamed into a heap capped at ${L.cap} bytes: wasm memory ${peak} bytes ` +
        `(read ${read_s.toFixed(2)} s, loaded ${load_s.toFixed(2)} s)`);
      check(JSON.stringify(got.result.tokens) === JSON.stringify(want), `and it generates the CLI's tokens ${JSON.stringify(want)}: ${JSON.stringify(got.result.tokens)}`);
    }
    check(typeof got.whole.error === 'string', `the whole file in the same heap fails (a control): ${got.whole.error ?? 'it loaded'}`);
  }
} catch (e) {
  fail(e.stack || e.message);
} finally {
  await browser.close();
}
process.exit(failed() ? 1 : 0);
