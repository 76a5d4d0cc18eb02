/**
 * `@weft/environment`: where work runs. Stream identity and its resolution order, stream
 * policies, scoped overrides, tasks, values carried along async tasks (`AsyncVariable`), sync
 * primitives and the root error types. No dependencies.
 *
 * @module
 */
export { StreamId, Stream, getStreamPolicy, setStreamPolicy, setStreamPolicyFromConfig, setTaskRunner } from "./stream/stream-id.js";
export type { StreamPolicy, TaskRunner } from "./stream/stream-id.js";
export { AsyncVariable } from "./context/async-variable.js";
export type { AsyncCarrier } from "./context/async-variable.js";
export { AsyncOverrideError } from "./stream/async-override-error.js";
export { DuplicateEnvironmentError, ENVIRONMENT_VERSION } from "./stream/single-copy.js";
export type { RegistryCopy } from "./stream/single-copy.js";
export { Deferred } from "./sync/deferred.js";
export { Mutex } from "./sync/mutex.js";
export { ReentrancyGuard, ReentrancyError } from "./sync/reentrancy-guard.js";
export { WeftError, UnsupportedError, InvariantError, invariant } from "./errors/weft-error.js";
export { LruCache } from "./cache/lru-cache.js";
export { IdMap } from "./cache/id-map.js";
export { SlotTable } from "./cache/slot-table.js";
export type { CacheStats, LruCacheOptions } from "./cache/lru-cache.js";
export { ValueError, describeValue } from "./errors/value-error.js";
export { checkOptions, checkChoice, checkFunction, checkInteger, checkNumber, checkBoolean } from "./errors/arguments.js";
