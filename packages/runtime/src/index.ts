/**
 * `@weft/runtime`: what fusion, backends and users call to reach a device. The `Client` (bound to
 * a device service and a stream), process and stream modes with their scoped overrides, autotune
 * with its persistent cache, and the pipeline cache.
 *
 * @module
 */
export { ServiceId } from "./service/service-id.js";
export { Client, BatchCompileError } from "./client/client.js";
export type { ClientOptions } from "./client/client.js";
export { getProcessMode, setProcessMode, withProcessMode, defaultStreamMode } from "./mode/process-mode.js";
export type { ProcessMode } from "./mode/process-mode.js";
export { StreamModeOverride } from "./mode/stream-mode.js";
export type { StreamMode, ServiceStream, StreamModeTarget } from "./mode/stream-mode.js";
export { AutotuneKey } from "./tune/autotune-key.js";
export type { AutotuneKeyParts } from "./tune/autotune-key.js";
export { AutotuneError } from "./tune/errors.js";
export { TunableSet } from "./tune/tunable.js";
export type { Tunable, TunableSetOptions, TunableValidation } from "./tune/tunable.js";
export { Tuner, MAX_RUNS_PER_SAMPLE, MAX_WARMUP_RUNS } from "./tune/tuner.js";
export type { TuneProgress, TunerOptions } from "./tune/tuner.js";
export { TuneCache } from "./tune/tune-cache.js";
export type { TuneCacheOptions } from "./tune/tune-cache.js";
export { FileTuneStore, IndexedDbTuneStore, MemoryTuneStore, defaultTuneStore } from "./tune/tune-store.js";
export type { StoreName, TuneRecord, TuneStore } from "./tune/tune-store.js";
export { LIBRARY_VERSION } from "./tune/version.js";
export { PipelineCache, DEFAULT_PIPELINE_CAPACITY } from "./pipeline/pipeline-cache.js";
export type { PipelineCacheOptions } from "./pipeline/pipeline-cache.js";
