/**
 * `@weft/server/testing`: a ready-made server for the tests of every layer, and the one
 * `ComputeServer` contract suite every server runs.
 *
 * @module
 */
export { DummyServer, DummyKernels, f32Bytes, fromF32Bytes, reads, writes } from "./dummy-server.js";
export { describeComputeServer, hostContractKernels } from "./compute-server-contract.js";
export type { ContractKernels, ServerUnderTest } from "./compute-server-contract.js";
