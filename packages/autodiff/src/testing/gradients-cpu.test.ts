/**
 * The gradient kit on the fused CPU backend, central differences on the unfused one (the oracle).
 * The same suite runs on WebGPU in `@weft/weft`.
 */
import { cpuDevice } from "./cpu-device.support.js";
import { describeGradients } from "./describe-gradients.js";

describeGradients("cpu (fused)", () => cpuDevice(), { oracle: () => cpuDevice({ fusion: false }) });
