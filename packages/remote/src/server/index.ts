/**
 * `@weft/remote/server`: the `weft serve` server (Node only) — a WebSocket endpoint in front of one
 * device, one session per connection.
 *
 * This is a barrel: code inside the package imports concrete files, never this one.
 *
 * @module
 */
export { RemoteServer, startServer } from "./remote-server.js";
export type { RemoteServerOptions, ServedDevice } from "./remote-server.js";
export { Session } from "./session.js";
export { SessionViolation } from "./violation.js";
export type { ViolationKind } from "./violation.js";
export { validateOperation } from "./validate-operation.js";
export type { InputInfo, InputLookup, ShapeBounds } from "./validate-operation.js";
