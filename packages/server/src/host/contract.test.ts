/**
 * The `ComputeServer` contract on the host servers: `HostComputeServer` (what the CPU backend runs
 * on) and the `DummyServer` test double. The WebGPU server runs the same suite in its package.
 */
import { DummyServer } from "../testing/dummy-server.js";
import { describeComputeServer, hostContractKernels } from "../testing/compute-server-contract.js";
import { HostComputeServer } from "./host-compute-server.js";

describeComputeServer("HostComputeServer", () => ({ server: new HostComputeServer(), kernels: hostContractKernels, dispose: () => undefined }));
describeComputeServer("DummyServer", () => ({ server: new DummyServer(), kernels: hostContractKernels, dispose: () => undefined }));
