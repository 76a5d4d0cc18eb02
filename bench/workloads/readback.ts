/**
 * Workload 2: reading a 64 MB f32 tensor back to the host.
 *
 * Variants: Weft `await t.data()`, raw `copyBufferToBuffer` + `mapAsync` (a reused staging buffer
 * per concurrent read) copied into a fresh array, TensorFlow.js `data()`; and the reads into
 * caller-owned memory reused across reads: Weft `t.data({ into })` and the raw map + copy into
 * the same kind of array. Each Weft/TF.js read gets a *fresh*, already computed tensor (`x * 1`,
 * synced before the clock starts), so no library can answer from a host cache. Throughput starts
 * several reads at once and awaits them together; latency awaits each. Targets
 * (`readback-64MB-vs-tfjs`, `readback-into-vs-raw`) are in `../targets.ts`.
 *
 * @module
 */
import type { Tensor } from "@weft/tensor";
import { tensor } from "@weft/tensor";
import type { BenchContext } from "../context.js";
import { checkIndices, compare, hostData } from "../harness/data.js";
import { gbps, measureVariant, type VariantRun } from "../harness/variant.js";
import type { RawGpu } from "../peers/raw-webgpu.js";
import { LABEL, VARIANT } from "../targets.js";

/** Caller-owned arrays, one per concurrent read, made on first use and reused by every sample. */
function intoSlots(n: number): (slot: number) => Float32Array {
  const slots: Float32Array[] = [];
  return (slot) => (slots[slot] ??= new Float32Array(n));
}

/**
 * `t.data({ into })`: the read into caller-owned memory. Rejects when the engine answered with a
 * fresh array instead (reads into caller memory not implemented), so no figure is recorded for it.
 */
async function weftReadInto(t: Tensor, into: Float32Array): Promise<Float32Array> {
  const read = t.data as unknown as (this: Tensor, options: { into: Float32Array }) => Promise<unknown>;
  const out = await read.call(t, { into });
  if (out !== into) throw new Error("Tensor.data({ into }) answered with a fresh array: reads into caller-owned memory are not implemented");
  return into;
}

/**
 * A read variant of Weft or TF.js: before each sample, `make` computes one fresh tensor per step
 * (`x * 1`) and `settle` waits for them; each timed step starts `read` of its tensor.
 */
function freshReads<T extends { dispose(): void }>(host: Float32Array, make: () => T, settle: () => Promise<unknown>, read: (t: T, slot: number) => Promise<ArrayLike<number>>, dispose: () => void): VariantRun {
  const indices = checkIndices(host.length);
  let ready: T[] = [];
  let pending: Promise<ArrayLike<number>>[] = [];
  let last: ArrayLike<number> | undefined;
  return {
    timed: {
      prepare: async (steps) => {
        for (let i = 0; i < steps; i++) ready.push(make());
        await settle();
      },
      step: (i) => pending.push(read(ready[i] as T, i)),
      wait: async () => {
        const all = await Promise.all(pending);
        last = all[all.length - 1];
      },
      release: () => {
        for (const t of ready) t.dispose();
        ready = [];
        pending = [];
      },
    },
    check: async () => (last === undefined ? "WRONG: nothing was read" : compare(last, (i) => host[i] as number, indices, 0)),
    dispose,
  };
}

/** Runs workload 2. */
export async function runReadback(ctx: BenchContext): Promise<void> {
  const n = ctx.sizes.readback;
  const bytes = n * 4;
  const host = hostData(n, 21);
  const indices = checkIndices(n);
  const size = LABEL.readback(n);
  const base = ctx.repeats(bytes);
  const repeats = { ...base, iterations: Math.min(base.iterations, 8) };

  const into = intoSlots(n);
  const rawVariant = (variant: string, read: (raw: RawGpu, src: GPUBuffer, slot: number) => Promise<Float32Array>) =>
    measureVariant(ctx, {
      workload: "readback",
      variant,
      size,
      peer: ctx.raw,
      repeats,
      figure: gbps(bytes),
      setup: (raw) => {
        const src = raw.upload(host);
        let pending: Promise<Float32Array>[] = [];
        let last: Float32Array | undefined;
        return {
          timed: {
            step: (i) => pending.push(read(raw, src, i)),
            wait: async () => {
              const all = await Promise.all(pending);
              last = all[all.length - 1];
            },
            release: () => {
              pending = [];
            },
          },
          check: async () => (last === undefined ? "WRONG: nothing was read" : compare(last, (i) => host[i] as number, indices, 0)),
          dispose: () => raw.release(src),
        };
      },
    });
  await rawVariant(VARIANT.rawRead, (raw, src, slot) => raw.read(src, bytes, slot));
  await rawVariant(VARIANT.rawReadInto, (raw, src, slot) => raw.readInto(src, into(slot), slot));

  for (const [variant, read] of [
    [VARIANT.weftData, (t: Tensor) => t.data() as Promise<ArrayLike<number>>],
    [VARIANT.weftDataInto, (t: Tensor, slot: number) => weftReadInto(t, into(slot))],
  ] as const) {
    await measureVariant(ctx, {
      workload: "readback",
      variant,
      size,
      peer: ctx.weft,
      repeats,
      figure: gbps(bytes),
      setup: (w) => {
        const x = tensor(host, { device: w.device, shape: [n] });
        return freshReads(host, () => x.mul(1), () => w.device.sync(), read, () => x.dispose());
      },
    });
  }

  await measureVariant(ctx, {
    workload: "readback",
    variant: VARIANT.tfjsData,
    size,
    peer: ctx.tf,
    repeats,
    figure: gbps(bytes),
    setup: (p) => {
      const x = p.tf.tensor1d(host);
      return freshReads(host, () => p.tf.mul(x, 1), () => p.wait(), (t) => t.data() as Promise<ArrayLike<number>>, () => x.dispose());
    },
  });
}
