// The control of the capped-heap check: the capped copy of the package (capped/) handed a whole
// model file at once, as NinferLlm.load takes it. Answers { loaded, info } or { error }.
import init, { NinferLlm } from './capped/ninfer_wgpu.js';

self.onmessage = async ({ data }) => {
  try {
    await init();
    const bytes = new Uint8Array(await (await fetch(data.url)).arrayBuffer());
    const llm = await NinferLlm.load(bytes, {});
    self.postMessage({ loaded: true, info: llm.info() });
  } catch (e) {
    self.postMessage({ error: (e && e.message) || String(e) });
  }
};
