// The model's own thread: a dedicated module Web Worker that holds one NinferLlm, so the page's
// thread never runs the upload or a generation step. index.js starts it and speaks the protocol
// below; each request carries an `id` that every answer to it repeats.
//
//   page → worker                                   worker → page
//   { id, op: 'load', source, options }             { id, kind: 'progress', phase: 'read', bytes, total, from }
//                                                   { id, kind: 'progress', phase: 'validate' | 'upload', done, of, from }
//                                                   { id, kind: 'done', value: info }
//   { id, op: 'generate', prompt, options }         { id, kind: 'token', text, token, count, seconds }
//                                                   { id, kind: 'done', value: generated }
//   { op: 'abort' }                                 (the running generate's 'done' comes with stopped: true)
//   { id, op: 'free' }                              { id, kind: 'done', value: null }
//   any request that fails                          { id, kind: 'error', message }
//
// `source` is an absolute URL string, a Blob (a File), a ReadableStream of bytes or an
// ArrayBuffer. A URL is read from the browser's Cache Storage when it holds it (cache.js),
// otherwise fetched, and stored there once the model has loaded.
import init, { NinferLlm } from './ninfer_wgpu.js';
import { openCached, store } from './cache.js';

const ready = init();
let llm = null;

const post = (message) => self.postMessage(message);
const messageOf = (e) => {
  const text = (e && e.message) || String(e);
  // A panic reports itself before the instance traps (src/web/mod.rs).
  return globalThis.ninferLastPanic ? `${text}\n${globalThis.ninferLastPanic}` : text;
};

// Reads a whole body, reporting bytes as they come. A body shorter than its announced length
// is an error here, not a truncated model handed on; with `atLeast`, a longer one is not (a
// cross-origin compressed response may announce its compressed length).
async function readAll(stream, total, report, atLeast = false) {
  const reader = stream.getReader();
  const chunks = [];
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    bytes += value.length;
    report(bytes);
  }
  if (total !== null && (bytes < total || (bytes > total && !atLeast))) {
    throw new Error(`the model's stream ended after ${bytes} of its ${total} bytes`);
  }
  if (chunks.length === 1) return chunks[0];
  const all = new Uint8Array(bytes);
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.length;
  }
  return all;
}

// The source's bytes, where they came from, and whether they are now cached.
async function bytesOf(source, options, report) {
  if (typeof source === 'string') {
    const cached = options.cache === false ? null : await openCached(source);
    if (cached) {
      return { bytes: await readAll(cached.body, cached.size, (n) => report(n, cached.size, 'cache')), from: 'cache' };
    }
    const response = await fetch(source);
    if (!response.ok) throw new Error(`${source}: HTTP ${response.status} ${response.statusText}`.trim());
    // A compressed response's length is not the body's.
    const length = response.headers.get('content-encoding') ? null : response.headers.get('content-length');
    const total = length === null ? null : Number(length);
    const bytes = await readAll(response.body, total, (n) => report(n, total, 'network'), true);
    // Stored by load() once the model has loaded: a bad file is never cached.
    return { bytes, from: 'network', cached: options.cache === false ? 'off' : 'pending' };
  }
  if (source instanceof Blob) {
    return { bytes: await readAll(source.stream(), source.size, (n) => report(n, source.size, 'file')), from: 'file' };
  }
  if (source instanceof ReadableStream) {
    return { bytes: await readAll(source, options.size ?? null, (n) => report(n, options.size ?? null, 'stream')), from: 'stream' };
  }
  if (source instanceof ArrayBuffer) {
    report(source.byteLength, source.byteLength, 'memory');
    return { bytes: new Uint8Array(source), from: 'memory' };
  }
  throw new Error('a model source is a URL, a Blob or File, a ReadableStream or an ArrayBuffer');
}

async function load(id, source, options) {
  const wasm = await ready;
  if (llm) {
    llm.free();
    llm = null;
  }
  const report = (bytes, total, from) => post({ id, kind: 'progress', phase: 'read', bytes, total, from });
  const started = performance.now();
  const { bytes, from, cached } = await bytesOf(source, options, report);
  const read_s = (performance.now() - started) / 1000;
  const { profile, context, maxBufferSize, maxBinding } = options;
  const onProgress = (phase, done, of) => post({ id, kind: 'progress', phase, done, of, from });
  llm = await NinferLlm.load(bytes, { profile, context, maxBufferSize, maxBinding, onProgress });
  const stored = cached === 'pending' ? await store(source, bytes) : cached;
  // The module's memory never shrinks: its size now is the load's peak.
  const wasm_memory_bytes = wasm.memory.buffer.byteLength;
  return { ...llm.info(), from, cached: stored ?? null, bytes: bytes.length, read_s, wasm_memory_bytes };
}

async function generate(id, prompt, options) {
  if (!llm) throw new Error('no model is loaded in this worker');
  return llm.generate(prompt, options, (text, token, count, seconds) =>
    post({ id, kind: 'token', text, token, count, seconds }));
}

self.onmessage = async ({ data }) => {
  const { id, op } = data;
  if (op === 'abort') {
    if (llm) llm.abort();
    return;
  }
  try {
    let value;
    switch (op) {
      case 'load':
        value = await load(id, data.source, data.options || {});
        break;
      case 'generate':
        value = await generate(id, data.prompt, data.options || {});
        break;
      case 'free':
        if (llm) llm.free();
        llm = null;
        value = null;
        break;
      default:
        throw new Error(`unknown request '${op}'`);
    }
    post({ id, kind: 'done', value });
  } catch (e) {
    post({ id, kind: 'error', message: messageOf(e) });
  }
};
