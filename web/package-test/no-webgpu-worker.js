// The package's worker in a browser without WebGPU: navigator.gpu hidden before any request
// (worker.js evaluates first, but touches the GPU only when asked to load).
import './node_modules/ninfer-wgpu/worker.js';

Object.defineProperty(Object.getPrototypeOf(navigator), 'gpu', { get: () => undefined, configurable: true });
