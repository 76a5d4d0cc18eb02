/**
 * The WebAssembly arena: a larger memory replaces the old one instead of growing it, so no
 * `ArrayBuffer` is ever detached (which would make V8 check every typed-array access for it).
 */
import { describe, expect, it } from "vitest";
import { GEMM_WASM_BASE64 } from "../wasm/gemm.generated.js";
import { WasmArena } from "./wasm-module.js";

describe("WasmArena", () => {
  it("replaces its memory with a larger one, never grows it: the old buffer stays attached", () => {
    const arena = new WasmArena<{ readonly gemmRows: unknown }>(GEMM_WASM_BASE64, "compiled");
    expect(arena.support.available, "Node 20 has WebAssembly SIMD").toBe(true);
    const small = arena.ensure(1000);
    expect(small).toBeDefined();
    const first = small?.buffer as ArrayBuffer;
    expect(first.byteLength, "at least a megabyte to start").toBeGreaterThanOrEqual(1 << 20);
    expect(arena.ensure(first.byteLength)?.buffer, "a fitting request keeps the memory").toBe(first);
    const large = arena.ensure(first.byteLength + 1);
    const second = large?.buffer as ArrayBuffer;
    expect(second).not.toBe(first);
    expect(second.byteLength, "at least twice the last").toBeGreaterThanOrEqual(2 * first.byteLength);
    expect(first.byteLength, "the replaced buffer was not detached").toBeGreaterThanOrEqual(1 << 20);
    expect(typeof large?.exports.gemmRows, "a new instance over the new memory").toBe("function");
  });

  it("doubles up to its cap, and beyond it only as far as one call needs", () => {
    const arena = new WasmArena<object>(GEMM_WASM_BASE64, "compiled", 3 << 20);
    expect(arena.ensure(1 << 20)?.buffer.byteLength).toBe(1 << 20);
    expect(arena.ensure((1 << 20) + 1)?.buffer.byteLength, "twice the last, within the cap").toBe(2 << 20);
    expect(arena.ensure((2 << 20) + 1)?.buffer.byteLength, "the cap, not twice the last").toBe(3 << 20);
    expect(arena.ensure((4 << 20) + 5)?.buffer.byteLength, "one call's need above the cap").toBe((4 << 20) + 65536);
  });

  it("a module that does not compile says why and hands out nothing", () => {
    const arena = new WasmArena<object>("AGFzbQEAAAA=x", "compiled");
    expect(arena.support.available).toBe(false);
    expect(arena.ensure(16)).toBeUndefined();
  });
});
