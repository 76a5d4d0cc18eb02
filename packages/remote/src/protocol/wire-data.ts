/**
 * Tensor values and errors as they travel: host typed arrays ↔ bytes, and errors ↔ {@link WireError}.
 * Shared by the client and the server.
 *
 * @module
 */
import { WeftError } from "@weft/environment";
import type { DType, TypedArray } from "@weft/fusion";
import { TensorComputationError } from "@weft/fusion";
import { alignedCopy } from "./codec.js";
import type { WireError } from "./messages.js";

/** Bytes per element of a dtype's *host* array (`bool` is one byte, `f16` raw 16-bit bits). */
export function hostBytesPerElement(dtype: DType): number {
  switch (dtype) {
    case "bool":
      return 1;
    case "f16":
      return 2;
    case "f32":
    case "i32":
    case "u32":
      return 4;
    default:
      return dtype satisfies never;
  }
}

/** The bytes of `array` (a view, no copy). */
export function bytesOf(array: TypedArray): Uint8Array {
  return new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
}

/** The host array of `dtype` over a copy of `bytes` (whose length must be a multiple of the element size). */
export function arrayOf(bytes: Uint8Array, dtype: DType): TypedArray {
  const buffer = alignedCopy(bytes);
  switch (dtype) {
    case "f32":
      return new Float32Array(buffer);
    case "i32":
      return new Int32Array(buffer);
    case "u32":
      return new Uint32Array(buffer);
    case "bool":
      return new Uint8Array(buffer);
    case "f16":
      return new Uint16Array(buffer);
    default:
      return dtype satisfies never;
  }
}

/** `error` as it travels: a computation error keeps its root's kind and message and its chain. */
export function toWireError(error: unknown): WireError {
  if (error instanceof TensorComputationError) {
    const root = error.root;
    return { kind: root instanceof WeftError ? root.kind : "error", name: root.name, message: root.message, chain: [...error.chain] };
  }
  if (error instanceof Error) return { kind: error instanceof WeftError ? error.kind : "error", name: error.name, message: error.message };
  return { kind: "error", name: "Error", message: String(error) };
}
