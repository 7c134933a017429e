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
// ArrayBuffer. Whatever it is, its bytes are pushed into a NinferLlmStream as they come, each
// chunk awaited (the read waits for the GPU, so nothing piles up): the file is never whole in
// wasm memory. A URL is read from the browser's Cache Storage when it holds it (cache.js),
// otherwise fetched and written to the cache as it streams, kept only if the model loads.
import init, { NinferLlm } from './ninfer_wgpu.js';
import { openCached, storing } from './cache.js';

const ready = init();
let llm = null;

const post = (message) => self.postMessage(message);
const messageOf = (e) => {
  const text = (e && e.message) || String(e);
  // A panic reports itself before the instance traps (src/web/mod.rs).
  return globalThis.ninferLastPanic ? `${text}\n${globalThis.ninferLastPanic}` : text;
};

// An ArrayBuffer is pushed in pieces of this many bytes: wasm memory holds one at a time.
const PIECE = 8 << 20;

// Pushes a stream's chunks into `sink` in order, reporting bytes as they come. A body shorter
// than its announced length is an error here, not a truncated model handed on; with `atLeast`,
// a longer one is not (a cross-origin compressed response may announce its compressed length).
async function pump(stream, total, sink, report, atLeast = false) {
  const reader = stream.getReader();
  let bytes = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.length;
      report(bytes);
      await sink(value);
    }
  } catch (e) {
    reader.cancel().catch(() => {});
    throw e;
  }
  if (total !== null && (bytes < total || (bytes > total && !atLeast))) {
    throw new Error(`the model's stream ended after ${bytes} of its ${total} bytes`);
  }
  return bytes;
}

// Pushes the source's bytes into `sink`; resolves to where they came from, how many there were
// and, for a fetched URL, the cache entry being written (or why there is none).
async function feed(source, options, sink, report) {
  if (typeof source === 'string') {
    const cached = options.cache === false ? null : await openCached(source);
    if (cached) {
      const bytes = await pump(cached.body, cached.size, sink, (n) => report(n, cached.size, 'cache'));
      return { from: 'cache', bytes };
    }
    const response = await fetch(source);
    if (!response.ok) throw new Error(`${source}: HTTP ${response.status} ${response.statusText}`.trim());
    // A compressed response's length is not the body's.
    const length = response.headers.get('content-encoding') ? null : response.headers.get('content-length');
    const total = length === null ? null : Number(length);
    const entry = options.cache === false ? 'off' : storing(source, total);
    const write = typeof entry === 'string' ? sink : (chunk) => (entry.write(chunk), sink(chunk));
    try {
      const bytes = await pump(response.body, total, write, (n) => report(n, total, 'network'), true);
      if (typeof entry !== 'string') entry.close(bytes);
      return { from: 'network', bytes, entry };
    } catch (e) {
      if (typeof entry !== 'string') entry.abort(e);
      throw e;
    }
  }
  if (source instanceof Blob) {
    const bytes = await pump(source.stream(), source.size, sink, (n) => report(n, source.size, 'file'));
    return { from: 'file', bytes };
  }
  if (source instanceof ReadableStream) {
    const total = options.size ?? null;
    return { from: 'stream', bytes: await pump(source, total, sink, (n) => report(n, total, 'stream')) };
  }
  if (source instanceof ArrayBuffer) {
    const all = new Uint8Array(source);
    for (let at = 0; at < all.length; at += PIECE) {
      const piece = all.subarray(at, at + PIECE);
      report(at + piece.length, all.length, 'memory');
      await sink(piece);
    }
    return { from: 'memory', bytes: all.length };
  }
  throw new Error('a model source is a URL, a Blob or File, a ReadableStream or an ArrayBuffer');
}

async function load(id, source, options) {
  const wasm = await ready;
  if (llm) {
    llm.free();
    llm = null;
  }
  let from = null;
  const report = (bytes, total, source) => {
    from = source;
    post({ id, kind: 'progress', phase: 'read', bytes, total, from });
  };
  const started = performance.now();
  const { profile, context, maxBufferSize, maxBinding } = options;
  const onProgress = (phase, done, of) => post({ id, kind: 'progress', phase, done, of, from });
  const stream = await NinferLlm.stream({ profile, context, maxBufferSize, maxBinding, onProgress });
  let fed;
  try {
    fed = await feed(source, options, (chunk) => stream.push(chunk), report);
  } finally {
    // A failed push has already dropped the load; this frees the handle either way.
    if (!fed) stream.free();
  }
  const read_s = (performance.now() - started) / 1000;
  let cached = fed.entry === undefined ? null : fed.entry;
  try {
    llm = await stream.finish();
  } catch (e) {
    if (cached !== null && typeof cached !== 'string') cached.drop();
    throw e;
  } finally {
    stream.free();
  }
  if (cached !== null && typeof cached !== 'string') cached = await cached.done;
  // The module's memory never shrinks: its size now is the load's peak.
  const wasm_memory_bytes = wasm.memory.buffer.byteLength;
  return { ...llm.info(), from: fed.from, cached, bytes: fed.bytes, read_s, wasm_memory_bytes };
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
