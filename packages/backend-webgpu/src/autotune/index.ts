/**
 * Autotune of the WebGPU kernels: the matmul {@link TunableSet} over `MATMUL_CONFIGS` that the
 * runtime chooses tile configurations from through `@weft/runtime`'s `Tuner`.
 *
 * @module
 */
export {
  MATMUL_TUNABLE,
  matmulTunableSet,
  matmulCandidate,
  matmulTuneKey,
  prepareMatmulInputs,
  readMatmulOutput,
  matmulValuesClose,
} from "./matmul-tunable.js";
export type {
  MatmulTuneInputs,
  MatmulTuneOutput,
  MatmulValues,
  MatmulTunable,
  MatmulCandidate,
  MatmulTunableSetOptions,
  PlanSource,
} from "./matmul-tunable.js";
