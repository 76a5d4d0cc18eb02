/**
 * `@weft/environment`: where work runs. Stream identity and its resolution order, stream
 * policies, scoped overrides, sync primitives and the root error types. No dependencies.
 *
 * @module
 */
export { StreamId, Stream, getStreamPolicy, setStreamPolicy, setStreamPolicyFromConfig } from "./stream/stream-id.js";
export type { StreamPolicy } from "./stream/stream-id.js";
export { AsyncOverrideError } from "./stream/async-override-error.js";
export { Deferred } from "./sync/deferred.js";
export { Mutex } from "./sync/mutex.js";
export { ReentrancyGuard, ReentrancyError } from "./sync/reentrancy-guard.js";
export { WeftError, UnsupportedError, InvariantError, invariant } from "./errors/weft-error.js";
