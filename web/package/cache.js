// Models kept in the browser's Cache Storage, keyed by their URL, each with its size in bytes
// (the `x-ninfer-bytes` header), so that a reload reads the file locally. Cache Storage needs a
// secure context (https, or localhost); where there is none, nothing is cached and loads fetch.
const NAME = 'ninfer-wgpu-models';
const SIZE = 'x-ninfer-bytes';

const available = () => typeof caches !== 'undefined';

// The cached body of `url` and its size, or null. An entry whose size header is missing is
// not ours and is ignored.
export async function openCached(url) {
  if (!available()) return null;
  const response = await (await caches.open(NAME)).match(url);
  const size = response && response.headers.get(SIZE);
  if (!response || size === null) return null;
  return { body: response.body, size: Number(size) };
}

// Keeps `bytes` under `url`. Resolves to 'stored', or to why not ('unavailable', or the
// browser's refusal, such as a full quota): a model that could not be cached still loads.
export async function store(url, bytes) {
  if (!available()) return 'unavailable';
  try {
    const headers = { 'content-type': 'application/octet-stream', [SIZE]: String(bytes.length) };
    await (await caches.open(NAME)).put(url, new Response(bytes, { headers }));
    return 'stored';
  } catch (e) {
    return `not stored: ${(e && e.message) || e}`;
  }
}

/** The cached models: `[{ url, bytes }]`. */
export async function cachedModels() {
  if (!available()) return [];
  const cache = await caches.open(NAME);
  const out = [];
  for (const request of await cache.keys()) {
    const response = await cache.match(request);
    const size = response && response.headers.get(SIZE);
    if (size != null) out.push({ url: request.url, bytes: Number(size) });
  }
  return out;
}

/** Drops `url`'s cached model, or every one without `url`; resolves to how many were dropped. */
export async function clearCachedModels(url) {
  if (!available()) return 0;
  if (url === undefined) {
    const n = (await cachedModels()).length;
    await caches.delete(NAME);
    return n;
  }
  return (await (await caches.open(NAME)).delete(new URL(url, globalThis.location.href).href)) ? 1 : 0;
}
