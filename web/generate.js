// The generation page: loads a model's GGUF (llama, qwen2, qwen3, gemma 1-3; dropped, chosen,
// or fetched from this origin) with NinferLlm.load, then streams generate()'s tokens into the
// page with the tokens per second.
// `window.ninferGenerate` is the hook the headless test (web/generate-check.mjs) reads;
// `?model=URL&prompt=TEXT&n=N` loads and generates greedily at once.
import init, { NinferLlm } from './pkg/ninfer_wgpu.js';
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

// Loads `bytes`; `fetchMs` is what reading them took (the file's fetch or read).
async function load(name, bytes, fetchMs) {
  $('error').hidden = true;
  $('go').disabled = true;
  if (llm) {
    llm.free();
    llm = null;
  }
  $('model-line').textContent = `Uploading ${name} (${(bytes.length / 1e6).toFixed(1)} MB)…`;
  const started = performance.now();
  llm = await NinferLlm.load(bytes, { profile: $('profile').value });
  const uploadMs = performance.now() - started;
  const info = llm.info();
  hook.loaded = info;
  hook.timings = { fetch_ms: Math.round(fetchMs), load_ms: Math.round(uploadMs), total_ms: Math.round(fetchMs + uploadMs) };
  $('model-line').textContent =
    `${name}: ${info.blocks} blocks, ${info.vocab} tokens, context ${info.context}, ${info.profile} on ${info.adapter}; ` +
    `read in ${seconds(fetchMs)} s, on the GPU in ${seconds(uploadMs)} s (${(info.device_bytes / 1e6).toFixed(0)} MB of device memory)`;
  $('go').disabled = false;
}

async function loadUrl(url) {
  const started = performance.now();
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  const bytes = new Uint8Array(await response.arrayBuffer());
  await load(url, bytes, performance.now() - started);
}

async function loadFile(file) {
  const started = performance.now();
  const bytes = new Uint8Array(await file.arrayBuffer());
  await load(file.name, bytes, performance.now() - started);
}

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
      (result.context_full ? ' (the context is full)' : '') + (result.seed !== null ? ` · seed ${result.seed}` : '');
  } finally {
    $('go').disabled = false;
  }
}

async function main() {
  await init();
  dropZone($('drop'), (files) => loadFile(files[0]).catch(showError));
  $('pick').addEventListener('change', (e) => e.target.files.length && loadFile(e.target.files[0]).catch(showError));
  $('fetch').addEventListener('click', () => loadUrl($('url').value).catch(showError));
  $('go').addEventListener('click', () => generate().catch(showError));

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
