/// <reference types="@webgpu/types" />
/**
 * A `navigator` for Node that hands the bench's own `GPUDevice` to libraries that look for
 * WebGPU there (TensorFlow.js's `WebGPUBackend` checks `navigator.gpu` in its constructor; jax-js
 * requests an adapter and a device from it and reads `navigator.userAgent`).
 *
 * @remarks
 * **Why a shim and not the `webgpu` package's `create()`.** A second Dawn adapter would give each
 * library its own device and queue, and the ratios would compare different queues; the software
 * adapter also needs the compatibility feature level, which the libraries do not request. The
 * shim's adapter answers `requestDevice()` with the device every variant already uses.
 * **Installed after Weft's devices exist**, so Weft's own adapter search never sees it.
 *
 * @module
 */

/** Installs `globalThis.navigator = { gpu, userAgent }` (replacing any), for the rest of the process. */
export function installNavigatorShim(device: GPUDevice, adapter: GPUAdapter): void {
  const shimAdapter = {
    limits: adapter.limits,
    features: adapter.features,
    info: adapter.info,
    isFallbackAdapter: false,
    requestDevice: async () => device,
    requestAdapterInfo: async () => adapter.info,
  };
  const gpu = {
    requestAdapter: async () => shimAdapter,
    getPreferredCanvasFormat: () => "bgra8unorm",
    wgslLanguageFeatures: new Set<string>(),
  };
  Object.defineProperty(globalThis, "navigator", {
    value: { gpu, userAgent: `Node.js/${process.version} (weft bench)`, hardwareConcurrency: 1 },
    configurable: true,
    writable: true,
  });
}
