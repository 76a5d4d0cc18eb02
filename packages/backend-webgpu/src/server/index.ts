/**
 * The WebGPU compute server: a router over streams that own their command encoders, memory and
 * taint, the validation gate, and the readback, over one `GPUQueue`.
 *
 * @module
 */
export { WebGpuServer } from "./webgpu-server.js";
export type { ReadSubmit, WebGpuServerOptions, WebGpuServerStats } from "./webgpu-server.js";
export { WebGpuStream, FAILURE_LOG_LIMIT } from "./webgpu-stream.js";
export type { StreamContext, SubmissionCounters } from "./webgpu-stream.js";
export { Dispatch, LaunchPin } from "./webgpu-stream.js";
export { ValidationGate } from "./validation-gate.js";
export { GatedTask } from "./validation-gate.js";
export { Readback } from "./readback.js";
export type { ReadbackHost, ReadCounters } from "./readback.js";
export { UniformArenas } from "./uniform-arenas.js";
export { PipelineStore, declaredBindings } from "./pipeline-store.js";
export type { PipelineEntry, PipelineState } from "./pipeline-store.js";
export { ReadBatch, planReadCopies, readBytes, completeReads } from "./read-batch.js";
export type { PendingRead, ReadSource, ReadCopy, ReadPlacement, CopyGroup, ReadPlan, ReadCompletion } from "./read-batch.js";
export { GpuBufferStorage } from "../memory/gpu-buffer-storage.js";
export { StagingPool } from "../memory/staging-pool.js";
export type { StagingPoolOptions, StagingPoolStats } from "../memory/staging-pool.js";
export type { GpuBufferStorageHooks } from "../memory/gpu-buffer-storage.js";
