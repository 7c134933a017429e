// The engine API in the page (docs/browser.md#the-engine-api): a tensor of the loaded model
// uploaded once, a product bound to device buffers, the page's own WGSL kernel on the same
// GPUDevice after the submitted step, one read-back. The outputs must be twice the host-slice
// matvec's, bit for bit: the same kernel on the same inputs, then an exact doubling.

const DOUBLE = `
@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@compute @workgroup_size(64)
fn double(@builtin(global_invocation_id) id: vec3<u32>) {
  if (id.x < arrayLength(&dst)) { dst[id.x] = 2.0 * src[id.x]; }
}`;

export async function engineStep(gpu, model, NinferStep) {
  const infos = model.tensors();
  const matrix = (t) => t.shape.length === 2 && t.shape[1] % 4 === 0 && t.format !== 'int32';
  const pick = infos.find((t) => t.format === 'gguf_q4_k' && matrix(t)) || infos.find(matrix);
  if (!pick) throw new Error('the model has no matrix to run the engine step on');
  const tensor = await gpu.upload(model, pick.name);
  const [n, k] = tensor.shape;
  const columns = 3;
  const xs = Float32Array.from({ length: k * columns }, (_, i) => Math.sin(i * 0.37));
  const x = await gpu.createBuffer(k * columns);
  const y = await gpu.createBuffer(n * columns);
  const doubled = await gpu.createBuffer(n * columns);
  gpu.writeF32(x, 0, xs);
  const op = await gpu.bindMatmul(tensor, 'a32', x, 0, k, y, 0, n, columns);

  const device = gpu.device;
  const module = device.createShaderModule({ code: DOUBLE });
  const pipeline = device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'double' } });
  const bindGroup = device.createBindGroup({
    layout: pipeline.getBindGroupLayout(0),
    entries: [
      { binding: 0, resource: { buffer: y.gpuBuffer } },
      { binding: 1, resource: { buffer: doubled.gpuBuffer } },
    ],
  });
  const step = new NinferStep();
  step.record(op, columns);
  gpu.submit(step); // queued before it returns
  const encoder = device.createCommandEncoder();
  const pass = encoder.beginComputePass();
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, bindGroup);
  pass.dispatchWorkgroups(Math.ceil((n * columns) / 64));
  pass.end();
  device.queue.submit([encoder.finish()]);
  const got = await gpu.readF32(doubled, 0, n * columns);

  const want = Float32Array.from(await gpu.matvec(model, pick.name, xs, columns), (v) => 2 * v);
  const [g, w] = [new Uint32Array(got.buffer), new Uint32Array(want.buffer)];
  let mismatches = 0;
  for (let i = 0; i < w.length; i++) {
    if (g[i] !== w[i] && !(Number.isNaN(got[i]) && Number.isNaN(want[i]))) mismatches++;
  }
  return { tensor: pick.name, format: pick.format, n, k, columns, outputs: w.length, mismatches };
}
