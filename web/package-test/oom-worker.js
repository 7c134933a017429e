// The package's worker on a device that runs out of memory partway through a load: the 12th
// buffer the load allocates is answered by the out-of-memory error scope with the error a
// browser reports when the device cannot allocate (a GPUOutOfMemoryError), as a real device
// would answer a model too large for it. The other scopes answer as the device does.
import './node_modules/ninfer-wgpu/worker.js';

const scopes = [];
let buffers = 0;
let failing = false;
const { createBuffer, pushErrorScope, popErrorScope } = GPUDevice.prototype;
GPUDevice.prototype.createBuffer = function (descriptor) {
  if (++buffers === 12) failing = true;
  return createBuffer.call(this, descriptor);
};
GPUDevice.prototype.pushErrorScope = function (filter) {
  scopes.push(filter);
  return pushErrorScope.call(this, filter);
};
GPUDevice.prototype.popErrorScope = function () {
  const filter = scopes.pop();
  const answer = popErrorScope.call(this);
  if (filter !== 'out-of-memory' || !failing) return answer;
  failing = false;
  return answer.then(() => new GPUOutOfMemoryError('out of memory (injected by the test)'));
};
