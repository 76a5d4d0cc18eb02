/**
 * `@weft/remote`: Weft past one machine — a client `Device` whose tensors live on `weft serve`
 * servers (one, or several behind a router), usable from Node and from browsers. The server is
 * `@weft/remote/server` (Node only).
 *
 * This is a barrel: code inside the package imports concrete files, never this one.
 *
 * @module
 */
export { createRemoteDevice, checkRemoteDeviceOptions, checkConnectionOptions, CONNECTION_KEYS, RemoteDevice } from "./client/remote-device.js";
export type { RemoteDeviceOptions, RemoteServerReport, RemoteMemoryReport, RemoteStats } from "./client/remote-device.js";
export { RemoteRuntime } from "./client/remote-runtime.js";
export type { RemoteHandle, RouterStats } from "./client/remote-runtime.js";
export { RemoteConnection } from "./client/connection.js";
export type { ConnectionOptions, ConnectionStats } from "./client/connection.js";
export { defaultSocketFactory } from "./client/socket.js";
export type { SocketFactory, SocketLike } from "./client/socket.js";
export { RemoteError, RemoteAuthError, RemoteLimitError, RemoteSessionError, RemoteComputationError } from "./errors/remote-errors.js";
export type { RemoteFailure } from "./errors/remote-errors.js";
export { PROTOCOL_VERSION, CloseCode, DEFAULT_LIMITS } from "./protocol/messages.js";
export type { RemoteLimits, ServerMemory, Item, Batch, Hello, Welcome, Reply, WireError } from "./protocol/messages.js";
export { encodeMessage, decodeMessage } from "./protocol/codec.js";
