import type { StreamId } from "@weft/environment";
import type { BufferBinding } from "../binding.js";
import type { KernelBinding } from "../compute-server.js";
import { HostComputeServer, type HostComputeServerOptions } from "../host/host-compute-server.js";
import type { HostKernel } from "../host/host-kernel.js";
import type { ManagedMemoryHandle } from "../memory/managed-memory-handle.js";

/** Little-endian bytes of `values` as f32. */
export function f32Bytes(values: readonly number[] | Float32Array): Uint8Array {
  const out = new Uint8Array(values.length * 4);
  const view = new DataView(out.buffer);
  values.forEach((v, i) => view.setFloat32(i * 4, v, true));
  return out;
}

/** The f32 values of little-endian `bytes` (any offset; the length must be a multiple of 4). */
export function fromF32Bytes(bytes: Uint8Array): Float32Array {
  if (bytes.byteLength % 4 !== 0) throw new RangeError(`fromF32Bytes: ${bytes.byteLength} bytes is not a whole number of f32s`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(bytes.byteLength / 4);
  for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(i * 4, true);
  return out;
}

function f32View(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function at(buffers: Uint8Array[], i: number, key: string): Uint8Array {
  const buffer = buffers[i];
  if (!buffer) throw new RangeError(`${key}: binding ${i} is missing`);
  return buffer;
}

/** Ready-made host kernels over f32 buffers (bindings in the order each doc gives). */
export const DummyKernels = {
  /** `[out]`: every f32 of `out` becomes `value`. */
  fill(value: number): HostKernel {
    const key = `dummy/fill(${value})`;
    return {
      key,
      run(buffers) {
        const out = f32View(at(buffers, 0, key));
        for (let i = 0; i + 4 <= out.byteLength; i += 4) out.setFloat32(i, value, true);
      },
    };
  },
  /** `[src, dst]`: copies the bytes of `src` into `dst` (the shorter length). */
  copy: {
    key: "dummy/copy",
    run(buffers) {
      const src = at(buffers, 0, "dummy/copy");
      const dst = at(buffers, 1, "dummy/copy");
      dst.set(src.subarray(0, Math.min(src.byteLength, dst.byteLength)));
    },
  } satisfies HostKernel,
  /** `[a, b, out]`: `out[i] = a[i] + b[i]` over f32 (the output's length). */
  addF32: {
    key: "dummy/add-f32",
    run(buffers) {
      const a = f32View(at(buffers, 0, "dummy/add-f32"));
      const b = f32View(at(buffers, 1, "dummy/add-f32"));
      const out = f32View(at(buffers, 2, "dummy/add-f32"));
      for (let i = 0; i + 4 <= out.byteLength; i += 4) {
        out.setFloat32(i, a.getFloat32(i, true) + b.getFloat32(i, true), true);
      }
    },
  } satisfies HostKernel,
  /** A kernel whose every run throws `Error(message)`: a device-side failure of that launch. */
  failing(message = "dummy kernel failed"): HostKernel {
    return {
      key: `dummy/failing(${message})`,
      run() {
        throw new Error(message);
      },
    };
  },
  /** A kernel that never compiles: `validate` throws `Error(message)`. */
  invalid(message = "dummy kernel does not compile"): HostKernel {
    return {
      key: `dummy/invalid(${message})`,
      validate() {
        throw new Error(message);
      },
      run() {
        throw new Error("internal: an invalid kernel must never run");
      },
    };
  },
} as const;

/** `read` binding. */
export const reads = (binding: BufferBinding): KernelBinding => ({ binding, access: "read" });
/** `write` binding. */
export const writes = (binding: BufferBinding): KernelBinding => ({ binding, access: "write" });

/**
 * A {@link HostComputeServer} for the tests of every layer: ready-made kernels
 * ({@link DummyKernels}) and f32 helpers, with the host server's full error contract, memory
 * management and fault injection.
 */
export class DummyServer extends HostComputeServer {
  readonly kernels = DummyKernels;

  constructor(options: HostComputeServerOptions = {}) {
    super({ name: "dummy", ...options });
  }

  /** Uploads `values` as f32 on `stream`. */
  createF32(values: readonly number[], stream: StreamId): ManagedMemoryHandle {
    return this.create(f32Bytes(values), stream);
  }

  /** The f32 values of `binding` now; throws the taint error when they are tainted. */
  readF32(binding: BufferBinding, stream: StreamId): number[] {
    const [bytes] = this.readSync([binding], stream);
    return Array.from(fromF32Bytes(bytes ?? new Uint8Array()));
  }

  /** Launches `fill(value)` into `out`. */
  fill(out: BufferBinding, value: number, stream: StreamId): void {
    this.launch(DummyKernels.fill(value), [1, 1, 1], [writes(out)], stream, "execute");
  }

  /** Launches `copy` from `src` into `dst`. */
  copy(src: BufferBinding, dst: BufferBinding, stream: StreamId): void {
    this.launch(DummyKernels.copy, [1, 1, 1], [reads(src), writes(dst)], stream, "execute");
  }

  /** Launches `addF32` of `a` and `b` into `out`. */
  add(a: BufferBinding, b: BufferBinding, out: BufferBinding, stream: StreamId): void {
    this.launch(DummyKernels.addF32, [1, 1, 1], [reads(a), reads(b), writes(out)], stream, "execute");
  }
}
