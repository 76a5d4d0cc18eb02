/**
 * The conformance kit on the fused CPU backend, against the CPU backend run unfused: fusion must
 * never change a value beyond the documented tolerances.
 */
import { describeBackend } from "@weft/tensor/testing";
import { createCpuDevice } from "./device/backends.js";

describeBackend("cpu (fused)", () => createCpuDevice(), { oracle: () => createCpuDevice({ fusion: false }) });
