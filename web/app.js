// The page: opens WebGPU through the wasm package, runs the conformance suite on the visitor's
// GPU, and lists and verifies a dropped GGUF/.ninfer file. `window.ninfer` is the hook the
// headless test (web/drive.mjs) reads; `?run=conformance[&formats=a,b]` starts the suite at once.
import init, { NinferGpu, NinferModel, NinferStep, conformanceHtml, verifyHtml } from './pkg/ninfer_wgpu.js';
import { engineStep } from './engine-check.js';
import { dropZone } from './drop.js';

const $ = (id) => document.getElementById(id);
const hook = (window.ninfer = { done: false, result: null, error: null, timings: {}, api: null });
const state = { gpu: null, model: null, file: '' };

// A rejected call's message, with the panic report when the wasm instance trapped.
function message(e) {
  const text = (e && e.message) || String(e);
  return globalThis.ninferLastPanic ? `${text}\n${globalThis.ninferLastPanic}` : text;
}

function showError(e) {
  const text = message(e);
  $('error').textContent = text;
  $('error').hidden = false;
  return text;
}

function clearError() {
  $('error').hidden = true;
}

function since(start) {
  return Math.round(performance.now() - start);
}

function describe(p) {
  const features = p.features.length ? p.features.join(', ') : 'no optional features';
  // null: not probed, or the probe got a wrong product (listed in probes.broken), not a flush.
  const flush = p.probes.flushes_subnormal_results === true ? 'flushes f32 subnormals'
    : p.probes.flushes_subnormal_results === false ? 'keeps f32 subnormals'
    : `subnormals unknown${p.probes.broken ? ': ' + p.probes.broken.join('; ') : ''}`;
  return `${p.name || 'unnamed adapter'} (${p.backend}, ${p.device_type}${p.driver ? ', ' + p.driver : ''}) — ${features}; ` +
    `max buffer ${p.limits.max_buffer_size} B, storage binding ${p.limits.max_storage_buffer_binding_size} B; ${flush}`;
}

function showPage(frame, html) {
  frame.srcdoc = html;
  frame.hidden = false;
}

function link(id, text, type) {
  const a = $(id);
  if (a.href) URL.revokeObjectURL(a.href);
  a.href = URL.createObjectURL(new Blob([text], { type }));
}

async function runConformance(formats) {
  clearError();
  $('run').disabled = true;
  const start = performance.now();
  try {
    const report = await state.gpu.conformance(formats, null, (done) => {
      if (hook.timings.first_result_ms === undefined) hook.timings.first_result_ms = since(0);
      $('progress').textContent = `${done} cases judged…`;
    });
    hook.timings.conformance_ms = since(start);
    const line = `${report.passed} passed, ${report.failed} failed, ${report.platform_deviations} platform deviations (seed ${report.seed})`;
    $('summary').textContent = line;
    $('progress').textContent = `${report.results.length} cases in ${(hook.timings.conformance_ms / 1000).toFixed(1)} s`;
    const html = conformanceHtml(report);
    showPage($('report'), html);
    link('download-html', html, 'text/html');
    link('download-json', JSON.stringify(report, null, 2), 'application/json');
    $('downloads').hidden = false;
    return report;
  } finally {
    $('run').disabled = false;
  }
}

function tensorTable(rows) {
  const table = document.createElement('table');
  const head = table.insertRow();
  for (const h of ['tensor', 'format', 'shape', 'bytes', 'dequant', 'matmul', 'gather']) {
    const th = document.createElement('th');
    th.textContent = h;
    head.appendChild(th);
  }
  for (const t of rows) {
    const tr = table.insertRow();
    const cells = [t.name, t.format, JSON.stringify(t.shape), String(t.bytes)];
    cells.forEach((c, i) => {
      const td = tr.insertCell();
      td.textContent = c;
      if (i === 3) td.className = 'n';
    });
    if (t.error) {
      const td = tr.insertCell();
      td.colSpan = 3;
      td.className = 'no';
      td.textContent = t.error;
      continue;
    }
    for (const [, status] of t.ops) {
      const td = tr.insertCell();
      td.className = status === 'supported' ? 'ok' : 'no';
      td.textContent = status === 'supported' ? 'yes' : 'no';
      if (status !== 'supported') td.title = status;
    }
  }
  return table;
}

// Files dropped or picked: a GGUF, or a .ninfer entry with its parts (matched by name).
async function loadFiles(files) {
  clearError();
  const list = [...files];
  const isPart = (f) => /\.part-\d{4}$/.test(f.name);
  const entry = list.find((f) => !isPart(f));
  if (!entry) throw new Error('no entry file: drop the .gguf or .ninfer file itself (with its parts, if any)');
  const parts = new Map();
  for (const f of list.filter(isPart)) parts.set(f.name, new Uint8Array(await f.arrayBuffer()));
  return loadBytes(entry.name, new Uint8Array(await entry.arrayBuffer()), parts);
}

function loadBytes(name, bytes, parts) {
  if (state.model) state.model.free();
  state.model = null;
  $('model').textContent = '';
  $('verify').hidden = true;
  state.model = NinferModel.load(name, bytes, parts && parts.size ? parts : null);
  state.file = name;
  const rows = state.gpu ? state.gpu.tensors(state.model) : state.model.tensors();
  const title = document.createElement('p');
  title.textContent = `${name}: ${rows.length} tensors`;
  $('model').append(title, tensorTable(rows));
  $('verify').hidden = !state.gpu;
  return rows;
}

async function verifyModel(names) {
  clearError();
  $('verify').disabled = true;
  try {
    const report = await state.gpu.verify(state.model, state.file, names || null, null, (done, total) => {
      $('verify-progress').textContent = `${done}/${total} tensors`;
    });
    $('verify-progress').textContent = `${report.tensors.length} tensors, ${report.failed} failed`;
    showPage($('verify-report'), verifyHtml(report));
    return report;
  } finally {
    $('verify').disabled = false;
  }
}

function wire() {
  dropZone($('drop'), (files) => loadFiles(files).catch(showError));
  $('pick').addEventListener('change', (e) => loadFiles(e.target.files).catch(showError));
  $('run').addEventListener('click', () => {
    const text = $('formats').value.trim();
    runConformance(text ? text.split(',').map((s) => s.trim()) : null).catch(showError);
  });
  $('verify').addEventListener('click', () => verifyModel().catch(showError));
}

async function start() {
  wire();
  await init();
  hook.timings.wasm_ready_ms = since(0);
  if (!navigator.gpu) {
    throw new Error('this browser offers no WebGPU (navigator.gpu is missing): try a current Chrome, Edge or Safari, or Firefox with WebGPU enabled');
  }
  state.gpu = await NinferGpu.open();
  hook.timings.gpu_ready_ms = since(0);
  hook.platform = state.gpu.platform();
  $('device-line').textContent = describe(hook.platform);
  $('run').disabled = false;
  hook.api = { runConformance, loadBytes, verifyModel, NinferModel, engineStep: () => engineStep(state.gpu, state.model, NinferStep) };
}

const query = new URLSearchParams(location.search);
start()
  .then(async () => {
    if (query.get('run') === 'conformance') {
      const formats = query.get('formats');
      hook.result = await runConformance(formats ? formats.split(',') : null);
    }
  })
  .catch((e) => {
    hook.error = showError(e);
    $('device-line').textContent = 'No WebGPU device.';
  })
  .finally(() => {
    hook.done = true;
  });
