/**
 * What every CPU kernel is, and the helpers they share: binding sets, typed access to host
 * bytes, canonical layout keys.
 *
 * @module
 */
import { kernelBinding, type BindingAccess, type HostKernel, type KernelBinding, type MemoryHandle } from "@weft/server";
import type { DType, TypedArray } from "@weft/fusion";
import { invariant } from "@weft/environment";
import type { Layout } from "@weft/fusion";
import { hostBytesPerElement } from "../handle/cpu-handle.js";
import { rejectF16 } from "../numerics/scalar-ops.js";

/**
 * A CPU kernel: `@weft/server`'s `HostKernel` (a key plus a synchronous `run` over one byte view
 * per binding, in binding order, and optional uniforms). A throw from `run` is a failed launch.
 *
 * **Invariant.** `key` is canonical: the op, the dtypes, the shapes, the strides and offsets of
 * every operand. Scalar values travel in `uniforms`, never in the key; tensor ids and allocations
 * never appear in it.
 */
export type CpuKernel = HostKernel;

/**
 * The distinct memories one launch binds, in binding order, with their merged access.
 * A memory bound for reading and for writing (an in-place output) gets one `read-write` binding.
 */
export class BindingSet {
  /** Memories in binding order; grows with `bind`, bounded by the operands of one launch. */
  // `Array.of` and `kernelBinding`, not literals: one set per launch (docs/performance.md#allocation-sites).
  readonly #memories = Array.of<MemoryHandle>();
  readonly #access = Array.of<BindingAccess>();

  /** The binding index of `memory`, adding it (or widening its access) as needed. */
  bind(memory: MemoryHandle, access: BindingAccess): number {
    let index = this.#memories.indexOf(memory);
    if (index < 0) {
      index = this.#memories.length;
      this.#memories.push(memory);
      this.#access.push(access);
      return index;
    }
    const before = this.#access[index];
    if (before !== access) this.#access[index] = "read-write";
    return index;
  }

  /** Which bindings the kernel writes (so misaligned copies are written back). */
  writable(): boolean[] {
    return this.#access.map((a) => a !== "read");
  }

  /** The bound memories, in binding order (what a launch cache records its binding pattern from). */
  memories(): readonly MemoryHandle[] {
    return this.#memories;
  }

  /** Each binding's merged access, in binding order. */
  accesses(): readonly BindingAccess[] {
    return this.#access;
  }

  /** The launch's bindings: whole allocations, in binding order. */
  bindings(): KernelBinding[] {
    return this.#memories.map((memory, i) => kernelBinding(memory.binding(), this.#access[i] ?? "read"));
  }
}

/**
 * Typed access to the byte views a kernel receives. A view whose start is not aligned to 4 bytes
 * is copied into an aligned buffer once per binding (shared by every dtype viewing it) and, for
 * written bindings, copied back by {@link KernelMemory.commit}.
 */
export class KernelMemory {
  readonly #buffers: Uint8Array[];
  readonly #writable: readonly boolean[];
  /**
   * Aligned copies of misaligned bindings; at most one per binding, dropped with the kernel run.
   * Created on the first misaligned binding (host pages are aligned: most runs never need it).
   */
  #copies: Map<number, Uint8Array> | undefined;

  constructor(buffers: Uint8Array[], writable: readonly boolean[]) {
    this.#buffers = buffers;
    this.#writable = writable;
  }

  /** The elements of binding `binding` as `dtype`. */
  array(binding: number, dtype: DType): TypedArray {
    const raw = this.#buffers[binding];
    invariant(raw !== undefined, () => `kernel has no buffer for binding ${binding}`);
    let bytes = raw;
    if (raw.byteOffset % 4 !== 0) {
      const copies = (this.#copies ??= new Map<number, Uint8Array>());
      let copy = copies.get(binding);
      if (copy === undefined) {
        copy = new Uint8Array(raw.byteLength);
        copy.set(raw);
        copies.set(binding, copy);
      }
      bytes = copy;
    }
    const n = Math.floor(bytes.byteLength / hostBytesPerElement(dtype));
    switch (dtype) {
      case "f32": return new Float32Array(bytes.buffer, bytes.byteOffset, n);
      case "i32": return new Int32Array(bytes.buffer, bytes.byteOffset, n);
      case "u32": return new Uint32Array(bytes.buffer, bytes.byteOffset, n);
      case "bool": return new Uint8Array(bytes.buffer, bytes.byteOffset, n);
      case "f16": return rejectF16("kernel memory");
      default: return dtype satisfies never;
    }
  }

  /** Writes aligned copies of written bindings back into the server's views. */
  commit(): void {
    if (this.#copies === undefined) return;
    for (const [binding, copy] of this.#copies) {
      if (this.#writable[binding] === true) this.#buffers[binding]?.set(copy);
    }
  }
}

/** The uniforms of a launch without scalars (read-only: kernels only read their uniforms). */
const NO_UNIFORMS = new Float64Array(0);

/**
 * Decodes the f64 uniforms every CPU kernel uses for scalar values: a view of `uniforms` when it
 * starts on an 8-byte boundary (always, for {@link encodeUniforms}'s bytes and the server's copies
 * of them), else an aligned copy. Kernels only read it.
 */
export function decodeUniforms(uniforms: Uint8Array | undefined): Float64Array {
  if (uniforms === undefined || uniforms.byteLength < 8) return NO_UNIFORMS;
  const count = Math.floor(uniforms.byteLength / 8);
  if (uniforms.byteOffset % 8 === 0) return new Float64Array(uniforms.buffer, uniforms.byteOffset, count);
  const copy = new Uint8Array(count * 8);
  copy.set(uniforms.subarray(0, count * 8));
  return new Float64Array(copy.buffer, 0, count);
}

/** Encodes scalar values as f64 uniforms (one allocation; no iterator). */
export function encodeUniforms(values: readonly number[]): Uint8Array {
  const f = new Float64Array(values.length);
  for (let i = 0; i < values.length; i++) f[i] = values[i] as number;
  return new Uint8Array(f.buffer);
}

/** A canonical text for an operand: `dtype[shape]/strides+offset`. */
export function operandKey(dtype: DType, layout: Layout): string {
  return `${dtype}[${layout.shape.join(",")}]/${layout.strides.join(",")}+${layout.offset}`;
}

/** A dense typed array of `dtype` with `n` elements. */
export function allocateTyped(dtype: DType, n: number): TypedArray {
  switch (dtype) {
    case "f32": return new Float32Array(n);
    case "i32": return new Int32Array(n);
    case "u32": return new Uint32Array(n);
    case "bool": return new Uint8Array(n);
    case "f16": return rejectF16("host array");
    default: return dtype satisfies never;
  }
}
