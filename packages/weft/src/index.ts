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
export { Stream, StreamId, setStreamPolicy, getStreamPolicy } from "@weft/environment";
export type { StreamPolicy } from "@weft/environment";
// The error family: everything a caller can catch (docs/errors.md says which are transient and
// what to do). `ValueError`, `ShapeError`, … come with `@weft/tensor` above.
export { WeftError, UnsupportedError, InvariantError, AsyncOverrideError, ReentrancyError, DuplicateEnvironmentError } from "@weft/environment";
export { DisposedTensorError, DisposedDeviceError, TensorComputationError, ScopeSettledError } from "@weft/fusion";
export {
  ServerError,
  OutOfMemoryError,
  BufferTooBigError,
  DeviceLostError,
  ValidationError,
  LaunchError,
  TaintedReadError,
  SkippedLaunchError,
  DependentLaunchError,
  IndexOutOfRangeError,
} from "@weft/server";
export type { ServerErrorKind } from "@weft/server";
export { InvalidOperationError } from "@weft/backend-cpu";
export { AutotuneError, BatchCompileError } from "@weft/runtime";
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
