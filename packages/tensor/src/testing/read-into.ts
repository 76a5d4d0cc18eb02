/**
 * The conformance check of `data({ into })`, the read into caller-owned memory: on every dtype the
 * device stores, the values written into the caller's array are those `data()` gives, the promise
 * resolves to that very array, elements past the tensor's size are left alone, one array can be
 * reused across reads, and a wrong array type or a short array is a `ValueError` that leaves the
 * tensor readable.
 *
 * @module
 */
import type { DType } from "@weft/fusion";
import type { Device } from "../device/device.js";
import { ValueError } from "../errors/tensor-errors.js";
import { tensor } from "../ops/creation.js";
import type { DataArray, Tensor } from "../tensor/tensor.js";
import type { ConformanceResult } from "./run-case.js";

/** A fresh array of the type `data()` gives for `dtype`. */
function arrayFor(dtype: DType, n: number): DataArray {
  switch (dtype) {
    case "f32":
    case "f16":
      return new Float32Array(n);
    case "i32":
      return new Int32Array(n);
    case "u32":
      return new Uint32Array(n);
    case "bool":
      return new Uint8Array(n);
  }
}

/** Host values of `dtype` (exact in every dtype, including f16). */
function valuesFor(dtype: DType, n: number, seed: number): (number | boolean)[] {
  if (dtype === "bool") return Array.from({ length: n }, (_, i) => (i + seed) % 3 === 0);
  if (dtype === "u32") return Array.from({ length: n }, (_, i) => (i * 7 + seed) % 1000);
  return Array.from({ length: n }, (_, i) => ((i * 7 + seed) % 61) - 30 + (dtype === "i32" ? 0 : 0.5));
}

function same(a: ArrayLike<number>, b: ArrayLike<number>, n: number): boolean {
  for (let i = 0; i < n; i++) if (!Object.is(a[i], b[i])) return false;
  return true;
}

/** Runs the check on `device`; every tensor it creates is disposed. */
export async function checkReadInto(device: Device): Promise<ConformanceResult> {
  const fail = (message: string): ConformanceResult => ({ ok: false, message: `data({ into }) on ${device.label}: ${message}` });
  for (const dtype of device.dtypes) {
    // A computed tensor (not only an upload) and a strided view, each read twice into one array.
    const n = 1000;
    const x = tensor(valuesFor(dtype, n, 3), { device, dtype, shape: [10, 100] });
    const made: Tensor[] = [x];
    try {
      const computed = dtype === "bool" ? x.not() : x.add(x);
      made.push(computed);
      const view = computed.transpose(1, 0);
      made.push(view);
      for (const t of [x, computed, view]) {
        const want = await t.data();
        const into = arrayFor(dtype, n + 3);
        into.fill(7, n);
        for (let round = 0; round < 2; round++) {
          const got = await t.data({ into });
          if (got !== into) return fail(`${dtype}: the read resolved to another array than the one passed`);
          if (!same(into, want, n)) return fail(`${dtype} ${JSON.stringify(t.shape)}: the values differ from data()'s`);
          if (into[n] !== 7 || into[n + 2] !== 7) return fail(`${dtype}: elements past the tensor's size were written`);
        }
      }
      // Misuse: a rejection (never a throw at the call: `data()` returns a promise) with a
      // ValueError naming data; the tensor stays readable.
      const wrong = dtype === "i32" ? new Float32Array(n) : new Int32Array(n);
      for (const bad of [wrong, arrayFor(dtype, n - 1)]) {
        let read: Promise<unknown>;
        try {
          read = x.data({ into: bad });
        } catch (e) {
          return fail(`${dtype}: a ${bad.constructor.name}(${bad.length}) threw at the call (${String(e)}) instead of rejecting`);
        }
        let error: unknown;
        try {
          await read;
        } catch (e) {
          error = e;
        }
        if (!(error instanceof ValueError) || !error.message.startsWith("data:")) return fail(`${dtype}: a ${bad.constructor.name}(${bad.length}) was not refused with a ValueError naming data (got ${String(error)})`);
      }
      if (!same(await x.data(), await x.data({ into: arrayFor(dtype, n) }), n)) return fail(`${dtype}: the tensor did not stay readable after a refused read`);
    } finally {
      for (const t of made) t.dispose();
    }
  }
  return { ok: true };
}
