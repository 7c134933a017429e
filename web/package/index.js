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
  #freeing = null;
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
          // As NinferLlm's: an onToken that throws ends the generation, which then fails with it.
          try {
            waiting.onToken?.(data.text, data.token, data.count, data.seconds);
          } catch (e) {
            waiting.threw ??= new Error(`onToken threw: ${(e && e.message) || e}`);
            this.abort();
          }
          break;
        case 'done':
          this.#pending.delete(data.id);
          if (waiting.threw) waiting.reject(waiting.threw);
          else waiting.resolve(data.value);
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
      try {
        this.#worker.postMessage({ id, ...message }, transfer);
      } catch (e) {
        // An option that cannot be cloned, a stream this browser cannot transfer.
        this.#pending.delete(id);
        reject(e);
      }
    });
  }

  async _load(source, options) {
    const { onProgress, workerUrl, ...rest } = options;
    if (rest.size !== undefined && !(Number.isSafeInteger(rest.size) && rest.size >= 0)) {
      throw new Error(`size ${rest.size} is not a whole number of bytes`);
    }
    if (onProgress !== undefined && typeof onProgress !== 'function') throw new Error('onProgress is not a function');
    let transfer = [];
    if (typeof source === 'string' || source instanceof URL) source = absolute(source);
    // Copied, so the caller's bytes stay usable (a transfer would empty them).
    else if (source instanceof Uint8Array) source = source.slice().buffer;
    else if (source instanceof ArrayBuffer) source = source.slice(0);
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

  /** Frees the model's device memory and ends the worker; a request still waiting (a running
   *  generate) fails with "this model was freed". Calling it again gives the same promise. */
  free() {
    this.#freeing ??= this.#free();
    return this.#freeing;
  }

  async #free() {
    try {
      // A worker that died holds no device memory to free.
      if (!this.#failure) await this.#request({ op: 'free' });
    } finally {
      this.#worker.terminate();
      this.#worker = null;
      const freed = new Error('this model was freed');
      for (const waiting of this.#pending.values()) waiting.reject(freed);
      this.#pending.clear();
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
  // Written out literally where no URL is given: the form bundlers recognise and bundle.
  const worker = options.workerUrl
    ? new Worker(options.workerUrl, { type: 'module' })
    : new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
  const llm = new WorkerLlm(worker);
  return llm._load(source, options).catch((e) => {
    llm.free().catch(() => {});
    throw e;
  });
}
