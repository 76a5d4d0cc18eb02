export type { WebGpuHandle } from "./webgpu-handle.js";
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
} from "./webgpu-handle.js";
