/**
 * The declaration of a kernel's storage binding, written in one place.
 *
 * @remarks
 * **Why every storage binding is `read_write`.** Allocations are slices of shared pages, and
 * WebGPU tracks buffer usage per `GPUBuffer`, not per range: a dispatch that bound one slice of a
 * page read-only and another slice of the same page writable would be a usage conflict that
 * invalidates the whole command buffer. Writable storage is compatible with itself, so every
 * kernel declares every storage binding `read_write` (CubeCL does the same); reading through it is
 * unchanged WGSL. Which bindings a launch reads or writes is said by its `KernelBinding.access`
 * (what taint tracking uses), not by the declaration. The server compiles the text as generated —
 * nothing rewrites it — so what the snapshot tests check is what runs.
 */
export function storageBinding(index: number, name: string, element: string): string {
  return `@group(0) @binding(${index}) var<storage, read_write> ${name}: array<${element}>;`;
}
