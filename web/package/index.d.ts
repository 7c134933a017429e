export * from './ninfer_wgpu.js';
export { default } from './ninfer_wgpu.js';
import type { LlmGenerateOptions, LlmGenerated, LlmInfo, LlmLoadOptions, LlmOnToken } from './ninfer_wgpu.js';

/** Where a model's bytes came from. */
export type ModelFrom = 'network' | 'cache' | 'file' | 'stream' | 'memory';

/** Reported while a model loads: its bytes as they are read (`bytes` of `total`, null where
 *  unknown), then each tensor checked (`validate`: types, shapes, every weight finite) and each
 *  upload bound (`upload`: the token table, each block, the head), `done` of `of`. */
export type LoadProgress =
  | { phase: 'read'; bytes: number; total: number | null; from: ModelFrom }
  | { phase: 'validate' | 'upload'; done: number; of: number; from: ModelFrom };

export interface WorkerLoadOptions extends Omit<LlmLoadOptions, 'onProgress'> {
  onProgress?: (progress: LoadProgress) => void;
  /** Read a URL from the browser's Cache Storage and keep it there (default true). */
  cache?: boolean;
  /** A ReadableStream's length in bytes, where known: a shorter stream is then refused. */
  size?: number;
  /** The worker script, where a bundler moves the package's worker.js. */
  workerUrl?: string | URL;
}

/** NinferLlm's info, and how the load went. */
export interface WorkerLlmInfo extends LlmInfo {
  from: ModelFrom;
  /** For a fetched URL: 'stored', 'off', 'unavailable' or why the browser refused; else null. */
  cached: string | null;
  bytes: number;
  /** Seconds until the last byte was read: the tensors are checked and uploaded as the bytes
   *  come, so this includes all but the last of them (`load_s` runs to the bound model). */
  read_s: number;
  /** The worker's wasm memory after the load: its peak, since wasm memory never shrinks. */
  wasm_memory_bytes: number;
}

/** A model loaded in its own Web Worker. */
export interface WorkerLlm {
  readonly info: WorkerLlmInfo;
  /** As NinferLlm.generate: `onToken` is called as each token arrives from the worker (one that
   *  throws ends the generation, which rejects with its error). */
  generate(prompt: string, options?: LlmGenerateOptions, onToken?: LlmOnToken): Promise<LlmGenerated>;
  /** Ends the running generation after the token being made: it resolves with `stopped: true`. */
  abort(): void;
  /** Frees the model's device memory and ends the worker; a generate still running rejects
   *  with "this model was freed". */
  free(): Promise<void>;
}

/** Loads a model's GGUF in a dedicated Web Worker (see the package's README). */
export function loadLlmInWorker(
  source: string | URL | Blob | ReadableStream<Uint8Array> | ArrayBuffer | Uint8Array,
  options?: WorkerLoadOptions,
): Promise<WorkerLlm>;

/** The models in the browser's Cache Storage. */
export function cachedModels(): Promise<{ url: string; bytes: number }[]>;

/** Drops one cached model (by URL) or all of them; resolves to how many were dropped. */
export function clearCachedModels(url?: string): Promise<number>;
