/**
 * The library version autotune results are keyed by: a new release may change kernels, so
 * results measured by another version are never reused. Kept equal to `package.json`'s version
 * (a test checks it).
 */
export const LIBRARY_VERSION = "0.1.0";
