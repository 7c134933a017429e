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

// An entry for `url` written as its bytes stream past: `write` each chunk, then `close(bytes)`
// once the last came (or `abort(error)`); `done` resolves to 'stored', or to why not (the
// browser's refusal, such as a full quota): a model that could not be cached still loads.
// `drop()` removes the entry again (the model it holds did not load). Where Cache Storage is
// missing, 'unavailable' instead of an entry.
export function storing(url, size) {
  if (!available()) return 'unavailable';
  let controller;
  const body = new ReadableStream({ start: (c) => (controller = c) });
  const headers = (bytes) => ({ 'content-type': 'application/octet-stream', [SIZE]: String(bytes) });
  let counted;
  const counting = new Promise((resolve) => (counted = resolve));
  const put = async () => {
    const cache = await caches.open(NAME);
    if (size !== null) return cache.put(url, new Response(body, { headers: headers(size) }));
    // A size known only at the end (a compressed response): written, then rewritten with it,
    // a stream from the cache into the entry that replaces it.
    await cache.put(url, new Response(body));
    const bytes = await counting;
    const written = await cache.match(url);
    await cache.put(url, new Response(written.body, { headers: headers(bytes) }));
  };
  const done = put().then(
    () => 'stored',
    (e) => `not stored: ${(e && e.message) || e}`,
  );
  return {
    write: (chunk) => controller.enqueue(chunk),
    close: (bytes) => (counted(bytes), controller.close()),
    abort: (e) => controller.error(e),
    done,
    drop: () => done.then(() => caches.open(NAME)).then((cache) => cache.delete(url)),
  };
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
