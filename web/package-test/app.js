// A scratch app that uses the packed npm package as a user's app would (installed from its
// tarball, imported by its bare name). web/package-check.mjs calls these from headless Chromium.
import init, { NinferGpu, NinferModel, NinferLlm, loadLlmInWorker, cachedModels, clearCachedModels } from 'ninfer-wgpu';

const bytesOf = async (url) => {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
};
// A failure's message, or null where the call resolved (the checks assert which).
const messageOf = async (promise) => {
  try {
    // A promise that never settles is a failure too (the check sees this message).
    await Promise.race([promise, new Promise((_, reject) => setTimeout(() => reject(new Error('no answer in 60 s')), 60_000))]);
    return null;
  } catch (e) {
    return (e && e.message) || String(e);
  }
};

window.app = {
  // One product on the page's thread: y = W x for one column.
  async product(url, tensor, x) {
    const gpu = await NinferGpu.open();
    const model = NinferModel.load(url.split('/').pop(), await bytesOf(url));
    return Array.from(await gpu.matvec(model, tensor, new Float32Array(x), 1));
  },

  // Loads `url` in a worker and generates greedily, keeping what came as it came.
  async generate(url, prompt, n, options = {}) {
    const progress = [];
    const llm = await loadLlmInWorker(url, { ...options, onProgress: (p) => progress.push(p) });
    const streamed = [];
    const result = await llm.generate(prompt, { maxTokens: n }, (text, id) => streamed.push(id));
    const info = llm.info;
    await llm.free();
    const afterFree = await messageOf(llm.generate(prompt, { maxTokens: 1 }));
    return { info, result, streamed, progress, afterFree };
  },

  // The same model handed over as bytes (streamed into the worker's wasm in pieces).
  async fromMemory(url, prompt, n) {
    const llm = await loadLlmInWorker(await bytesOf(url), {});
    const result = await llm.generate(prompt, { maxTokens: n });
    const info = llm.info;
    await llm.free();
    return { info, result };
  },

  // Aborts at the `at`-th token: in the worker, and on the page's thread (NinferLlm itself).
  async abortInWorker(url, prompt, n, at) {
    const llm = await loadLlmInWorker(url, { cache: false });
    const result = await llm.generate(prompt, { maxTokens: n }, (text, id, count) => count === at && llm.abort());
    // The model stays usable: a whole generation after the aborted one.
    const again = await llm.generate(prompt, { maxTokens: n });
    await llm.free();
    return { result, again };
  },
  async abortOnPage(url, prompt, n, at) {
    const llm = await NinferLlm.load(await bytesOf(url), {});
    const result = await llm.generate(prompt, { maxTokens: n }, (text, id, count) => count === at && llm.abort());
    llm.free();
    return result;
  },

  cachedModels,
  clearCachedModels,

  // A model streamed into the package's copy whose wasm memory is capped (capped/, made by
  // web/cap-memory.mjs); then the control: the whole file handed to that copy at once.
  async capped(url, prompt, n) {
    let info, result, error;
    try {
      const llm = await loadLlmInWorker(url, { cache: false, workerUrl: new URL('./capped/worker.js', location.href) });
      result = await llm.generate(prompt, { maxTokens: n });
      info = llm.info;
      await llm.free();
    } catch (e) {
      error = (e && e.message) || String(e);
    }
    const whole = await new Promise((resolve) => {
      const worker = new Worker('./whole-file-worker.js', { type: 'module' });
      const end = (data) => (worker.terminate(), resolve(data));
      worker.onmessage = ({ data }) => end(data);
      worker.onerror = (e) => end({ error: e.message || 'the worker failed' });
      worker.postMessage({ url });
    });
    return { info, result, error, whole };
  },

  // Each failure the page must get as a message (null: it resolved, a failed check).
  async failures(urls) {
    const truncated = await bytesOf(urls.model);
    const cut = truncated.slice(0, truncated.length >> 1);
    const shortStream = new ReadableStream({
      start(c) {
        c.enqueue(cut);
        c.close();
      },
    });
    return {
      corrupt: await messageOf(loadLlmInWorker(urls.junk, { cache: false })),
      missing: await messageOf(loadLlmInWorker(urls.missing, { cache: false })),
      truncatedFile: await messageOf(loadLlmInWorker(new Blob([cut]))),
      truncatedStream: await messageOf(loadLlmInWorker(shortStream, { size: truncated.length })),
      noWorker: await messageOf(loadLlmInWorker(urls.model, { workerUrl: urls.missing })),
      badOptions: await messageOf(loadLlmInWorker(urls.model, { cache: false, profile: 'a16' })),
      // The tiny model's 274 logits (1096 bytes) over a 1024-byte binding.
      tooSmall: await messageOf(loadLlmInWorker(urls.model, { cache: false, maxBinding: 1024 })),
      badLimit: await messageOf(loadLlmInWorker(urls.model, { cache: false, maxBinding: -5 })),
      badSize: await messageOf(loadLlmInWorker(new Blob([cut]), { size: 'lots' })),
      noWebGpu: await messageOf(loadLlmInWorker(urls.model, { cache: false, workerUrl: './no-webgpu-worker.js' })),
      outOfMemory: await messageOf(loadLlmInWorker(urls.model, { cache: false, workerUrl: './oom-worker.js' })),
    };
  },
};

await init();
document.getElementById('status').textContent = 'ready';
window.appReady = true;
