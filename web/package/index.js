// The package's entry: the wasm module's own API (init, NinferGpu, NinferModel, NinferLlm, …)
// and a language model in a dedicated Web Worker (worker.js), behind promises that mirror
// NinferLlm's, so the page's thread never runs an upload or a step.
export * from './ninfer_wgpu.js';
export { default } from './ninfer_wgpu.js';
export { cachedModels, clearCachedModels } from './cache.js';

// Where a source given as a string or URL points, resolved against the page (the worker's own
// base is the package's folder).
const absolute = (url) => new URL(url, globalThis.location.href).href;

class WorkerLlm {
  #worker;
  #pending = new Map();
  #next = 0;
  #failure = null;
  info = null;

  constructor(worker) {
    this.#worker = worker;
    worker.onmessage = ({ data }) => {
      const waiting = this.#pending.get(data.id);
      if (!waiting) return;
      switch (data.kind) {
        case 'progress':
          waiting.onProgress?.(data);
          break;
        case 'token':
          waiting.onToken?.(data.text, data.token, data.count, data.seconds);
          break;
        case 'done':
          this.#pending.delete(data.id);
          waiting.resolve(data.value);
          break;
        case 'error':
          this.#pending.delete(data.id);
          waiting.reject(new Error(data.message));
          break;
      }
    };
    // The worker could not start or died (its script failed to load, an uncaught error): every
    // waiting request fails with why, and later ones at once.
    const die = (why) => {
      this.#failure = new Error(`the model's worker failed: ${why}`);
      for (const waiting of this.#pending.values()) waiting.reject(this.#failure);
      this.#pending.clear();
    };
    worker.onerror = (e) => die(e.message || 'its script did not load');
    worker.onmessageerror = () => die('a message could not be read');
  }

  #request(message, handlers = {}, transfer = []) {
    if (this.#failure) return Promise.reject(this.#failure);
    if (!this.#worker) return Promise.reject(new Error('this model was freed'));
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, ...handlers });
      this.#worker.postMessage({ id, ...message }, transfer);
    });
  }

  async _load(source, options) {
    const { onProgress, workerUrl, ...rest } = options;
    let transfer = [];
    if (typeof source === 'string' || source instanceof URL) source = absolute(source);
    else if (source instanceof Uint8Array) source = source.slice().buffer;
    if (source instanceof ArrayBuffer || source instanceof ReadableStream) transfer = [source];
    this.info = await this.#request({ op: 'load', source, options: rest }, { onProgress }, transfer);
    return this;
  }

  /** As NinferLlm.generate, in the worker: `onToken` is called as each token arrives. */
  generate(prompt, options = {}, onToken) {
    return this.#request({ op: 'generate', prompt, options }, { onToken });
  }

  /** Ends the running generation after the token being made: its promise resolves with the
   *  tokens so far and `stopped: true`. */
  abort() {
    if (this.#worker) this.#worker.postMessage({ op: 'abort' });
  }

  /** Frees the model's device memory and ends the worker. */
  async free() {
    if (!this.#worker) return;
    try {
      await this.#request({ op: 'free' });
    } finally {
      this.#worker.terminate();
      this.#worker = null;
    }
  }
}

/**
 * Loads a model's GGUF in a dedicated Web Worker. `source`: a URL (read from the browser's
 * cache when it holds it, else fetched and cached), a File or Blob, a ReadableStream of bytes
 * (`options.size`: its length, where known) or an ArrayBuffer / Uint8Array (copied). Resolves to
 * a model whose `info` is NinferLlm's plus where the bytes came from.
 */
export function loadLlmInWorker(source, options = {}) {
  const url = options.workerUrl ?? new URL('./worker.js', import.meta.url);
  const llm = new WorkerLlm(new Worker(url, { type: 'module' }));
  return llm._load(source, options).catch((e) => {
    llm.free().catch(() => {});
    throw e;
  });
}
