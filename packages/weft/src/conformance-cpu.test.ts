/**
 * The conformance kit on the fused CPU backend, against the CPU backend run unfused: fusion must
 * never change a value beyond the documented tolerances. It runs twice, crossing the two kernel
 * paths (generated JavaScript and the interpreter kept for realms that refuse `new Function`), so
 * each path is checked against the other on every case.
 */
import { describeBackend } from "@weft/tensor/testing";
import { createCpuDevice } from "./device/backends.js";

describeBackend("cpu (fused, generated kernels)", () => createCpuDevice({ kernels: "generated" }), {
  oracle: () => createCpuDevice({ fusion: false, kernels: "interpreted" }),
});
describeBackend("cpu (fused, interpreted kernels)", () => createCpuDevice({ kernels: "interpreted" }), {
  oracle: () => createCpuDevice({ fusion: false, kernels: "generated" }),
});
