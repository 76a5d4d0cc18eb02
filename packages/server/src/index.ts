/**
 * `@weft/server`: the compute-server layer. Stream pools, byte-range taint and the error graph,
 * memory management, the `ComputeServer` interface every device implements, and
 * `HostComputeServer`, the synchronous host implementation the CPU backend is built on.
 *
 * @module
 */
export type { AllocationId, BufferBinding } from "./binding.js";
export { bufferBinding } from "./binding.js";
export type {
  ComputeServer,
  MemoryHandle,
  MemoryUsage,
  LaunchMode,
  BindingAccess,
  KernelBinding,
  KernelDefinition,
  CubeCount,
  StatusCheck,
  FallbackGap,
  LaunchFallback,
  GroupEnd,
} from "./compute-server.js";
export { kernelBinding, kernelName, launchReads, launchWrites } from "./compute-server.js";
export {
  ServerError,
  ValidationError,
  LaunchError,
  OutOfMemoryError,
  BufferTooBigError,
  DeviceLostError,
  InjectedFaultError,
  StreamCreationError,
  InvalidBindingError,
  ReleasedHandleError,
  SkippedLaunchError,
  DependentLaunchError,
  IndexOutOfRangeError,
} from "./errors/server-error.js";
export type { ServerErrorKind } from "./errors/server-error.js";
export { TaintedReadError } from "./errors/tainted-read-error.js";
export { ErrorGraph } from "./errors/error-graph.js";
export type { FailureId, FailureState } from "./errors/error-graph.js";
export { FailureStore } from "./errors/failure-store.js";
export type { ReadFailure } from "./errors/failure-store.js";
export { StreamPool } from "./stream/stream-pool.js";
export type { StreamFactory } from "./stream/stream-pool.js";
export { ByteRangeClaims, ClaimedStream } from "./stream/stream-memory.js";
export type { StreamMemory, Claim } from "./stream/stream-memory.js";
export { taint, taintWith, written } from "./stream/taint.js";
export type { ComputeStorage } from "./memory/compute-storage.js";
export type { MemoryConfiguration } from "./memory/memory-configuration.js";
export { checkMemoryConfiguration, minPageSizeOf, DEFAULT_MIN_PAGE_SIZE } from "./memory/memory-configuration.js";
export { DeviceMemory, DEFAULT_DEALLOC_POLICY } from "./memory/device-memory.js";
export type { DeallocPolicy, DeviceMemoryStats } from "./memory/device-memory.js";
export { MemoryManagement } from "./memory/memory-management.js";
export { totalMemoryUsage } from "./memory/memory-usage.js";
export type { MemoryManagementOptions, ResolvedBinding } from "./memory/memory-management.js";
export { ManagedMemoryHandle } from "./memory/managed-memory-handle.js";
export { HostComputeServer, HOST_MEMORY_CONFIGURATION } from "./host/host-compute-server.js";
export type { FaultSpec, HostComputeServerOptions, HostServerStats } from "./host/host-compute-server.js";
export type { HostKernel } from "./host/host-kernel.js";
export { HostStorage, formatBytes } from "./host/host-storage.js";
export { HostStream } from "./host/host-stream.js";
