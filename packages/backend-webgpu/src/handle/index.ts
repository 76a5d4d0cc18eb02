export type { WebGpuHandle } from "./web-gpu-handle.js";
export {
  contiguousStrides,
  elementCount,
  isContiguous,
  contiguousHandle,
  reshapeView,
  permuteView,
  expandView,
  sliceView,
  releaseWebGpuHandle,
} from "./web-gpu-handle.js";
