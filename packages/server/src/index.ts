/**
 * `@weft/server`: the compute-server layer. Stream pools, byte-range taint and the error graph,
 * memory management, and the `ComputeServer` interface every device implements.
 *
 * @module
 */
export type { AllocationId, BufferBinding } from "./binding.js";
export type {
  ComputeServer,
  MemoryHandle,
  MemoryUsage,
  LaunchMode,
  BindingAccess,
  KernelBinding,
  KernelDefinition,
  CubeCount,
} from "./compute-server.js";
export {
  ServerError,
  ValidationError,
  LaunchError,
  OutOfMemoryError,
  BufferTooBigError,
  DeviceLostError,
  InjectedFaultError,
} from "./errors/server-error.js";
export type { ServerErrorKind } from "./errors/server-error.js";
