/**
 * `@weft/weft`: what users install. Picks the best device (WebGPU, else CPU), re-exports the user API
 * of `@weft/tensor`, the stream API of `@weft/environment` and the gradients and optimizers of
 * `@weft/autodiff` (`grad`, `valueAndGrad`, `stopGradient`, `optim`), and adds `init`, `warmup`,
 * `sync`, `syncAll`, `memory`, `stats`, `releaseUnused`. The CLI lives in `cli.ts`.
 *
 * This is a barrel: code inside the package imports concrete files, never this one.
 *
 * @module
 */
export * from "@weft/tensor";
export { Stream, StreamId, setStreamPolicy, getStreamPolicy, WeftError, UnsupportedError, DuplicateEnvironmentError } from "@weft/environment";
export type { StreamPolicy } from "@weft/environment";
export { DisposedTensorError, DisposedDeviceError, TensorComputationError, ScopeSettledError } from "@weft/fusion";
export { OutOfMemoryError, DeviceLostError } from "@weft/server";
export { init, chooseDevice, BackendUnavailableError } from "./device/init.js";
export type { InitOptions, DeviceChoice } from "./device/init.js";
export type { BackendRequest, ChoiceReason } from "./device/backend-choice.js";
export { createCpuDevice, createWebGpuDevice, probeAdapter } from "./device/backends.js";
export type { AdapterProbe, BackendName, DeviceCreationOptions } from "./device/backends.js";
export { warmup } from "./device/warmup.js";
export {
  createRemoteDevice,
  RemoteDevice,
  RemoteError,
  RemoteAuthError,
  RemoteLimitError,
  RemoteSessionError,
  RemoteComputationError,
} from "@weft/remote";
export type { RemoteDeviceOptions, RemoteMemoryReport, RemoteServerReport, RemoteStats, RemoteFailure } from "@weft/remote";
export { VERSION } from "./version.js";
export { grad, valueAndGrad, stopGradient, optim, Optimizer, Sgd, Adam } from "@weft/autodiff";
export type { Argnums, GradOptions, Grads, Tree, OptimizerKind, OptimizerState, SlotState, SgdOptions, AdamOptions } from "@weft/autodiff";
