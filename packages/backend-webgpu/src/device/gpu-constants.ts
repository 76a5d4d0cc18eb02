/**
 * The WebGPU flag constants, as numbers.
 *
 * @remarks
 * **Why.** `GPUBufferUsage` and `GPUMapMode` are globals in browsers but not in Node until the
 * `webgpu` package's `globals` are installed; a server built on a device handed in by the user
 * must not depend on that. The values are fixed by the WebGPU specification.
 */
export const BufferUsage = {
  MAP_READ: 0x0001,
  MAP_WRITE: 0x0002,
  COPY_SRC: 0x0004,
  COPY_DST: 0x0008,
  UNIFORM: 0x0040,
  STORAGE: 0x0080,
  INDIRECT: 0x0100,
} as const;

/** `GPUMapMode` values (see {@link BufferUsage} for why they are spelled out here). */
export const MapMode = { READ: 0x0001, WRITE: 0x0002 } as const;
