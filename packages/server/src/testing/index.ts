/**
 * `@weft/server/testing`: a ready-made server for the tests of every layer.
 *
 * @module
 */
export { DummyServer, DummyKernels, f32Bytes, fromF32Bytes, reads, writes } from "./dummy-server.js";
