// The generation page: loads a model's GGUF (llama, qwen2, qwen3, gemma 1-3; dropped, chosen,
// or fetched from this origin, then kept in the browser's cache) in the package's Web Worker
// (loadLlmInWorker), then streams generate()'s tokens into the page with the tokens per second;
// Stop aborts a generation.
// `window.ninferGenerate` is the hook the headless test (web/generate-check.mjs) reads;
// `?model=URL&prompt=TEXT&n=N` loads and generates greedily at once.
import { loadLlmInWorker } from './pkg/index.js';
import { dropZone } from './drop.js';

const $ = (id) => document.getElementById(id);
const hook = (window.ninferGenerate = { loaded: null, result: null, streamed: [], error: null, timings: {} });
let llm = null;

function showError(e) {
  const text = (e && e.message) || String(e);
  const full = globalThis.ninferLastPanic ? `${text}\n${globalThis.ninferLastPanic}` : text;
  $('error').textContent = full;
  $('error').hidden = false;
  hook.error = full;
}

const seconds = (ms) => (ms / 1000).toFixed(2);

const FROM = { network: 'fetched', cache: 'read from the browser\'s cache', file: 'read', stream: 'read', memory: 'read' };

// Loads `source` (a URL or a File) in the worker, showing its progress.
async function load(name, source) {
  $('error').hidden = true;
  $('go').disabled = true;
  if (llm) {
    await llm.free();
    llm = null;
  }
  const onProgress = (p) => {
    $('model-line').textContent =
      p.phase === 'read' ? `Reading ${name}: ${(p.bytes / 1e6).toFixed(1)}${p.total ? ` of ${(p.total / 1e6).toFixed(1)}` : ''} MB…`
      : p.phase === 'validate' ? `Checking ${name}: tensor ${p.done} of ${p.of}…`
      : `Uploading ${name} to the GPU: ${p.done} of ${p.of}…`;
  };
  const started = performance.now();
  llm = await loadLlmInWorker(source, { profile: $('profile').value, onProgress });
  const totalMs = performance.now() - started;
  const info = llm.info;
  hook.loaded = info;
  hook.timings = { fetch_ms: Math.round(info.read_s * 1000), load_ms: Math.round(info.load_s * 1000), total_ms: Math.round(totalMs) };
  $('model-line').textContent =
    `${name}: ${info.blocks} blocks, ${info.vocab} tokens, context ${info.context}, ${info.profile} on ${info.adapter}; ` +
    `${FROM[info.from]} in ${info.read_s.toFixed(2)} s, on the GPU in ${info.load_s.toFixed(2)} s ` +
    `(${(info.device_bytes / 1e6).toFixed(0)} MB of device memory)`;
  $('go').disabled = false;
}

const loadUrl = (url) => load(url, url);
const loadFile = (file) => load(file.name, file);

function options() {
  const number = (id) => ($(id).value.trim() === '' ? undefined : Number($(id).value));
  const o = { maxTokens: number('tokens'), chat: $('chat').checked };
  const temperature = number('temperature');
  if (temperature !== undefined) Object.assign(o, { temperature, topK: number('top-k'), topP: number('top-p'), seed: number('seed') });
  return o;
}

async function generate() {
  $('error').hidden = true;
  $('go').disabled = true;
  $('stop').disabled = false;
  const out = $('output');
  out.textContent = '';
  const prompt = document.createElement('span');
  prompt.className = 'prompt';
  prompt.textContent = $('prompt').value;
  out.append(prompt);
  hook.result = null;
  hook.streamed = [];
  $('rate').textContent = 'Reading the prompt…';
  try {
    let shown = '';
    const result = await llm.generate($('prompt').value, options(), (text, id, count, secs) => {
      out.append(text);
      shown += text;
      hook.streamed.push(id);
      // The first token comes from the prompt's logits: the rate is over the steps after it.
      $('rate').textContent = count > 1 ? `${count} tokens, ${((count - 1) / secs).toFixed(1)} tokens/s` : '1 token';
    });
    // Bytes held back at the very end (an unfinished character) are only in the result.
    out.append(result.text.slice(shown.length));
    hook.result = result;
    $('rate').textContent =
      `prompt: ${result.prompt_tokens} tokens at ${result.prompt_tokens_per_s.toFixed(1)} tokens/s · ` +
      `generated: ${result.tokens.length} tokens at ${result.generation_tokens_per_s.toFixed(1)} tokens/s` +
      (result.context_full ? ' (the context is full)' : '') + (result.stopped ? ' (stopped)' : '') +
      (result.seed !== null ? ` · seed ${result.seed}` : '');
  } finally {
    $('go').disabled = false;
    $('stop').disabled = true;
  }
}

async function main() {
  dropZone($('drop'), (files) => loadFile(files[0]).catch(showError));
  $('pick').addEventListener('change', (e) => e.target.files.length && loadFile(e.target.files[0]).catch(showError));
  $('fetch').addEventListener('click', () => loadUrl($('url').value).catch(showError));
  $('go').addEventListener('click', () => generate().catch(showError));
  $('stop').addEventListener('click', () => llm && llm.abort());

  const q = new URLSearchParams(location.search);
  if (q.get('model')) {
    $('url').value = q.get('model');
    if (q.get('prompt')) $('prompt').value = q.get('prompt');
    if (q.get('n')) $('tokens').value = q.get('n');
    await loadUrl(q.get('model'));
    if (q.get('prompt')) await generate();
  }
}

main().catch(showError);
