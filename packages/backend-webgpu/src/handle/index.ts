export type { WebGpuHandle } from "./webgpu-handle.js";
export {
  contiguousHandle,
  reshapeView,
  permuteView,
  expandView,
  sliceView,
  releaseWebGpuHandle,
} from "./webgpu-handle.js";
