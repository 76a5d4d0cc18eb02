/**
 * Random differential test of the CPU backend's kernel paths: random elementwise programs (with
 * broadcasting, permuted and stepped views, casts, scalars and special values), each followed by
 * a reduction, run fused on generated JavaScript, fused on the interpreter, and unfused — the
 * three must agree **bit for bit**, since every path evaluates the same scalar functions and
 * rounds at the same points. A short fixed-seed run in CI; `WEFT_PATHS_PROGRAMS=N` runs more.
 */
import { describe, expect, it } from "vitest";
import { type Device, type Tensor, tensor, tidy, where } from "@weft/tensor";
import { configureCpuThreads, threadedElementwiseLaunches } from "@weft/backend-cpu";
import { createCpuDevice } from "./device/backends.js";

const PROGRAMS = Number(process.env.WEFT_PATHS_PROGRAMS ?? 60);

/** A small deterministic generator (mulberry32). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SPECIAL = [Number.NaN, Infinity, -Infinity, 0, -0, 1e30, -1e-30, 3.5, -2.5];

/** One random program: builds its outputs from inputs on any device, identically. */
interface Program {
  readonly describe: string;
  readonly run: (device: Device) => Tensor[];
}

/**
 * Shapes past the threshold of elementwise launches across threads (2^15 to 2^18 elements, odd
 * sizes so that chunks end off any boundary), for {@link randomProgram}'s `large`.
 */
const LARGE_SHAPES: readonly (readonly number[])[] = [[70_001], [3, 17, 2049], [257, 1, 331], [2, 65_537], [64, 4099], [5, 3, 7, 1031]];

function randomProgram(seed: number, large = false): Program {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
  const rank0 = 1 + Math.floor(r() * 4);
  const shape = large ? [...pick(LARGE_SHAPES)] : Array.from({ length: rank0 }, () => pick([1, 2, 3, 5, 8, 17]));
  const rank = shape.length;
  const numel = (s: readonly number[]): number => s.reduce((a, b) => a * b, 1);
  const values = (n: number): number[] => Array.from({ length: n }, () => (r() < 0.15 ? pick(SPECIAL) : (r() - 0.5) * 8));
  // Inputs: a full one, a broadcast one (some dims 1), one read through a permuted view.
  const full = values(numel(shape));
  const bshape = shape.map((d) => (r() < 0.5 ? 1 : d));
  const bcast = values(numel(bshape));
  const perm = Array.from({ length: rank }, (_, i) => rank - 1 - i);
  const tshape = perm.map((a) => shape[a] as number);
  const transposed = values(numel(tshape));
  const steps = 3 + Math.floor(r() * 7);
  const ops = Array.from({ length: steps }, () => Math.floor(r() * 12));
  const scalars = Array.from({ length: steps }, () => pick([0.5, -3, 2, 0, 1e-3]));
  const stepped = r() < 0.5;
  const describe = `seed ${seed}: shape [${shape}], broadcast [${bshape}], ops ${ops.join(",")}${stepped ? ", stepped slice" : ""}`;
  return {
    describe,
    run: (device) => {
      const x = tensor(full, { device, shape });
      const b = tensor(bcast, { device, shape: bshape });
      const t = tensor(transposed, { device, shape: tshape });
      const outs = tidy(() => {
        const tv = t.permute(perm); // a strided view of `shape`
        let y = x;
        for (let i = 0; i < steps; i++) {
          const s = scalars[i] as number;
          switch (ops[i]) {
            case 0: y = y.add(b); break;
            case 1: y = y.mul(tv); break;
            case 2: y = y.mul(s).add(1); break;
            case 3: y = y.exp().neg(); break;
            case 4: y = y.abs().sqrt(); break;
            case 5: y = y.sub(tv).relu(); break;
            case 6: y = y.clamp(-2, 2); break;
            case 7: y = where(y.gt(b), y, tv); break;
            case 8: y = y.cast("i32").cast("f32"); break;
            case 9: y = y.div(b).floor(); break;
            case 10: y = y.maximum(tv).sin(); break;
            default: y = y.square().minimum(s); break;
          }
        }
        const kept: Tensor[] = [y, y.sum(rank - 1), y.max()];
        if (stepped) kept.push(y.slice([[null, null, 2]]).mul(3));
        return kept;
      });
      x.dispose();
      b.dispose();
      t.dispose();
      return outs;
    },
  };
}

async function values(device: Device, program: Program): Promise<Float32Array[]> {
  const outs = program.run(device);
  try {
    return (await Promise.all(outs.map((o) => o.data()))) as Float32Array[];
  } finally {
    for (const o of outs) o.dispose();
  }
}

function sameBits(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return 0;
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return i;
  return -1;
}

describe("CPU kernel paths: random programs agree bit for bit", () => {
  it(`${PROGRAMS} random fused programs: generated = interpreted = unfused`, async () => {
    const generated = createCpuDevice({ kernels: "generated" });
    const interpreted = createCpuDevice({ kernels: "interpreted" });
    const unfused = createCpuDevice({ fusion: false, kernels: "interpreted" });
    for (let seed = 1; seed <= PROGRAMS; seed++) {
      const program = randomProgram(seed);
      const want = await values(unfused, program);
      for (const [name, device] of [["generated", generated], ["interpreted", interpreted]] as const) {
        const got = await values(device, program);
        got.forEach((g, k) => {
          const at = sameBits(g, want[k] as Float32Array);
          if (at >= 0) expect.fail(`${program.describe}: output ${k} on the ${name} path differs at element ${at}: ${g[at]} vs ${want[k]?.[at]}`);
        });
      }
    }
    for (const d of [generated, interpreted, unfused]) expect(d.memory().liveTensors, "every tensor released").toBe(0);
  }, 120_000);

  it("random fused programs past the threading threshold: 3 threads give the single thread's bits", async () => {
    const count = Math.max(8, Math.round(PROGRAMS / 4));
    const programs = Array.from({ length: count }, (_, k) => randomProgram(10_000 + k, true));
    const single: Float32Array[][] = [];
    const before = threadedElementwiseLaunches();
    try {
      configureCpuThreads(1);
      const one = createCpuDevice({ kernels: "generated" });
      for (const p of programs) single.push(await values(one, p));
      expect(one.memory().liveTensors, "every tensor released").toBe(0);
      configureCpuThreads(3);
      const three = createCpuDevice({ kernels: "generated" });
      for (let k = 0; k < count; k++) {
        const program = programs[k] as Program;
        const got = await values(three, program);
        got.forEach((g, j) => {
          const at = sameBits(g, single[k]?.[j] as Float32Array);
          if (at >= 0) expect.fail(`${program.describe}: output ${j} on 3 threads differs at element ${at}: ${g[at]} vs ${single[k]?.[j]?.[at]}`);
        });
      }
      expect(three.memory().liveTensors, "every tensor released").toBe(0);
    } finally {
      configureCpuThreads("auto");
    }
    const after = threadedElementwiseLaunches();
    expect(after.threaded - before.threaded, "some launches ran across threads").toBeGreaterThan(0);
    expect(after.failed - before.failed, "no worker failed").toBe(0);
  }, 120_000);
});
