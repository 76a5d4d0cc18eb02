/**
 * `@weft/environment/testing`: helpers for tests that change process-wide stream state.
 *
 * @module
 */
export { withIsolatedStreamState } from "./isolated-stream-state.js";
