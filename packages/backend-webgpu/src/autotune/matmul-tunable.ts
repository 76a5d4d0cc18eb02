import { invariant } from "@weft/environment";
import type { DType } from "@weft/fusion";
import { AutotuneKey, TunableSet, type Client, type Tunable } from "@weft/runtime";
import type { KernelBinding, MemoryHandle } from "@weft/server";
import { ExprGraph } from "../codegen/wgsl/expr.js";
import type { StridedLayout } from "../codegen/wgsl/indexing.js";
import type { DeviceProfile } from "../codegen/wgsl/types.js";
import type { WgslKernel } from "../kernel.js";
import type { KernelLaunchPlan } from "../kernels/elementwise.js";
import { configFits, configName, configTile, launchMatmul, MATMUL_CONFIGS, type MatmulConfig, type MatmulSpec } from "../kernels/matmul.js";

/** The name every matmul tuning result is stored under (stable across releases). */
export const MATMUL_TUNABLE = "webgpu-matmul";

/**
 * The operands of one matmul measurement: dense operands of the problem's shapes and dtype, made
 * by {@link prepareMatmulInputs} (never the caller's buffers: background tuning must not depend on
 * memory a caller frees).
 */
export interface MatmulTuneInputs {
  readonly lhs: { readonly memory: MemoryHandle; readonly layout: StridedLayout };
  readonly rhs: { readonly memory: MemoryHandle; readonly layout: StridedLayout };
  readonly dtype: DType;
  readonly outShape: readonly number[];
}

/** What a matmul candidate produced: its dense output (released by the set once read). */
export interface MatmulTuneOutput {
  readonly memory: MemoryHandle;
  readonly shape: readonly number[];
  readonly dtype: DType;
}

/** One way of computing a matmul measurement (what {@link matmulTunableSet} chooses between). */
export type MatmulTunable = Tunable<MatmulTuneInputs, MatmulTuneOutput, WgslKernel>;

/** A matmul candidate: one tile configuration, launched without an epilogue. */
export interface MatmulCandidate extends MatmulTunable {
  /** The configuration a winning candidate's fused kernels use. */
  readonly config: MatmulConfig;
}

/**
 * Where candidates get their generated kernels: the runtime's kernel cache (`Launcher.plan`), so a
 * measured configuration and the fused kernel that later uses it share the codegen cache.
 */
export type PlanSource = (key: string, build: () => KernelLaunchPlan) => KernelLaunchPlan;

const bytesPerElement = (dtype: DType): number => (dtype === "f16" ? 2 : 4);
const count = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);
const dense = (shape: readonly number[]): number[] => {
  const strides = new Array<number>(shape.length).fill(1);
  for (let d = shape.length - 2; d >= 0; d--) strides[d] = (strides[d + 1] ?? 1) * (shape[d + 1] ?? 1);
  return strides;
};

/** The autotune key of an `lhs · rhs` product: both shapes anchored to powers of two, and the dtype. */
export function matmulTuneKey(lhsShape: readonly number[], rhsShape: readonly number[], dtype: DType): AutotuneKey {
  return AutotuneKey.of({ shapes: [lhsShape, rhsShape], dtypes: [dtype], anchor: true });
}

/**
 * A candidate that launches the plain matmul (`out = lhs · rhs`, no epilogue) with `config`
 * through the client it is given.
 */
export function matmulCandidate(config: MatmulConfig, profile: DeviceProfile, plan: PlanSource): MatmulCandidate {
  return {
    name: configName(config),
    config,
    run(inputs: MatmulTuneInputs, client: Client<WgslKernel>): MatmulTuneOutput {
      const graph = new ExprGraph();
      const res = graph.add({ kind: "value", name: "res", dtype: inputs.dtype });
      const spec: MatmulSpec = {
        lhs: inputs.lhs.layout,
        rhs: inputs.rhs.layout,
        dtype: inputs.dtype,
        outShape: inputs.outShape,
        config,
        epilogue: { graph, inputs: [], outputs: [{ node: res, dtype: inputs.dtype }] },
        label: `matmul (autotune ${configName(config)})`,
      };
      const out = client.empty(Math.max(4, count(inputs.outShape) * bytesPerElement(inputs.dtype)));
      try {
        const run = {
          plan,
          launch: (p: KernelLaunchPlan, bindings: readonly KernelBinding[]) => client.launch(p.kernel, p.count, bindings),
          empty: (bytes: number) => client.empty(Math.max(4, bytes)),
        };
        launchMatmul(spec, profile, run, { binding: inputs.lhs.memory.binding(), access: "read" }, { binding: inputs.rhs.memory.binding(), access: "read" }, [], [{ binding: out.binding(), access: "write" }]);
      } catch (error) {
        out.release();
        throw error;
      }
      return { memory: out, shape: inputs.outShape, dtype: inputs.dtype };
    },
  };
}

/** Deterministic small operand values (exact in f16 too), as the bytes of `dtype`. */
function operandBytes(n: number, dtype: DType, seed: number): Uint8Array {
  const pick = (i: number): number => (((i * 37 + seed * 11) % 9) - 4) / 4; // -1 … 1 in quarters
  switch (dtype) {
    case "f32":
      return new Uint8Array(Float32Array.from({ length: n }, (_, i) => pick(i)).buffer);
    case "f16": {
      // Quarters -1 … 1 as IEEE half bits: sign, exponent and a 10-bit mantissa.
      const HALF: Record<string, number> = { "-1": 0xbc00, "-0.75": 0xba00, "-0.5": 0xb800, "-0.25": 0xb400, "0": 0, "0.25": 0x3400, "0.5": 0x3800, "0.75": 0x3a00, "1": 0x3c00 };
      return new Uint8Array(Uint16Array.from({ length: n }, (_, i) => HALF[String(pick(i))] ?? 0).buffer);
    }
    case "i32":
      return new Uint8Array(Int32Array.from({ length: n }, (_, i) => Math.round(pick(i) * 4)).buffer);
    case "u32":
      return new Uint8Array(Uint32Array.from({ length: n }, (_, i) => Math.round(pick(i) * 4 + 4)).buffer);
    case "bool":
      return new Uint8Array(Uint32Array.from({ length: n }, (_, i) => i % 2).buffer);
    default:
      return dtype satisfies never;
  }
}

/**
 * Makes the dense operands a matmul of `lhsShape · rhsShape` is measured on, filled with
 * deterministic values through `client.create` (creates are never discarded, so measurements see
 * real data even under `'compile-and-autotune'`).
 */
export function prepareMatmulInputs(
  client: Client<WgslKernel>,
  lhsShape: readonly number[],
  rhsShape: readonly number[],
  outShape: readonly number[],
  dtype: DType,
): MatmulTuneInputs {
  const make = (shape: readonly number[], seed: number) => ({
    memory: client.create(operandBytes(Math.max(1, count(shape)), dtype, seed)),
    layout: { shape: [...shape], strides: dense(shape), offset: 0 },
  });
  return { lhs: make(lhsShape, 1), rhs: make(rhsShape, 2), dtype, outShape: [...outShape] };
}

/** Decodes IEEE half bits. */
function halfToNumber(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >> 10) & 0x1f;
  const frac = bits & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac === 0 ? sign * Infinity : NaN;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

/** A candidate's output as read back: a typed array of its values (f16 decoded to f32, which is exact). */
export type MatmulValues = Float32Array | Int32Array | Uint32Array;

/**
 * Reads a candidate's output as a typed array of its values.
 *
 * @remarks
 * **Why typed, never `number[]`.** The tuner reads every candidate's whole output while it times
 * the others. As JavaScript arrays of numbers, a 4096² product's values were 16M heap numbers per
 * candidate: on the H200 (2026-11-30) a tuning of five candidates ran 411 garbage collections
 * (312 ms of pauses), took 9.6 s instead of 1.2 s, and timed kernels of 3.2–6.4 ms at 14–20 ms, so
 * the tuner chose a kernel 5× slower than the best. Typed arrays are one allocation each.
 */
export async function readMatmulOutput(output: MatmulTuneOutput, client: Client<WgslKernel>): Promise<MatmulValues> {
  const dtype = output.dtype;
  const n = count(output.shape);
  const [bytes] = await client.read([output.memory.binding(0, n * bytesPerElement(dtype))]);
  invariant(bytes !== undefined, "a read of one binding returns one array");
  // Copy only when the bytes are not aligned for a typed view (the server returns fresh arrays).
  const own = bytes.byteOffset % 4 === 0 ? bytes : bytes.slice();
  switch (dtype) {
    case "f16": {
      const halves = new Uint16Array(own.buffer, own.byteOffset, n);
      const values = new Float32Array(n);
      for (let i = 0; i < n; i++) values[i] = halfToNumber(halves[i] ?? 0);
      return values;
    }
    case "i32":
      return new Int32Array(own.buffer, own.byteOffset, n);
    case "u32":
    case "bool":
      return new Uint32Array(own.buffer, own.byteOffset, n);
    case "f32":
      return new Float32Array(own.buffer, own.byteOffset, n);
    default:
      return dtype satisfies never;
  }
}

/**
 * Whether `actual` equals `expected` within the matmul tolerance (see {@link matmulTunableSet}): an
 * infinite expected value must be matched exactly, and NaN matches nothing. A plain loop, no closures.
 */
export function matmulValuesClose(expected: MatmulValues, actual: MatmulValues): boolean {
  if (expected.length !== actual.length) return false;
  for (let i = 0; i < expected.length; i++) {
    const e = expected[i] as number;
    const a = actual[i] as number;
    if (e === a) continue; // equal values, infinities included
    if (!Number.isFinite(e) || !(Math.abs(e - a) <= 1e-3 * Math.max(1, Math.abs(e)))) return false;
  }
  return true;
}

/**
 * The tallest tile a tuning measures for a product of few rows, whatever its `M`: the smallest
 * tiles of the `vec4` and `register` kinds are 32 rows.
 */
export const SMALL_PRODUCT_TILE_ROWS = 32;

/**
 * Why the matmul tuning skips `candidate` for a product of `m` rows (`undefined`: it measures it):
 * a tile taller than both {@link SMALL_PRODUCT_TILE_ROWS} and `2·m` rows computes mostly padding.
 *
 * @remarks
 * **Why.** A tuning compiles every candidate's pipeline (hundreds of ms each on Vulkan) and a cold
 * tuning cache tunes a served model's small products on its first requests: 19 candidates, ~8.5 s
 * on the H200, most of them tiles of 64–128 rows for a batch of 8 (docs/performance.md#small-product-tuning).
 * On the H200 (2026-12-01, run c) the winners of the 8-row products `[8,64]·[64,128]` and
 * `[8,128]·[128,128]` were 32-row tiles, and every taller tile timed 10–60% slower. Only rows are
 * pruned: a product of few *columns* can still gain from a tall split-K tile (`[128,256]·[256,16]`
 * went fastest with one). Candidates without a `config` (tests) are always measured.
 */
export function skipMatmulCandidate(candidate: MatmulTunable, m: number): string | undefined {
  const config = (candidate as Partial<MatmulCandidate>).config;
  if (config === undefined) return undefined;
  const [rows] = configTile(config);
  if (rows <= SMALL_PRODUCT_TILE_ROWS || rows <= 2 * m) return undefined;
  return `its ${rows}-row tile would compute mostly padding for a product of ${m} rows`;
}

/** What {@link matmulTunableSet} is built from. */
export interface MatmulTunableSetOptions {
  readonly profile: DeviceProfile;
  /** The runtime's kernel cache. */
  readonly plan: PlanSource;
  /** What `Tuner.choose` returns while no result is known (the heuristic's pick). Default: the reference. */
  readonly fallback?: MatmulConfig;
  /**
   * The candidates; default every {@link MATMUL_CONFIGS} entry that fits the device. The first is
   * the reference every other is validated against. Tests inject wrong or failing candidates here.
   */
  readonly candidates?: ReadonlyArray<MatmulTunable>;
  /**
   * The client measurement operands are created with (the tuner's measurement client, so they
   * live on its stream). Without it the caller's operands are measured as given — they must then
   * outlive the tuning (tests that call `Tuner.tune` directly).
   */
  readonly prepareWith?: Client<WgslKernel>;
}

/**
 * The matmul {@link TunableSet}: one candidate per tile configuration that fits the device (the
 * simple kernel — `MATMUL_CONFIGS[0]` — is the reference), keyed by the anchored operand shapes and
 * the dtype, validated against the reference within a relative tolerance.
 *
 * @remarks
 * **Inputs** are made by {@link prepareMatmulInputs} from the caller's shapes (`prepare` copies
 * nothing of the caller's); `releaseInputs` and `releaseOutput` free them, so a tuning leaves no
 * memory behind.
 * **Tolerance.** `|a − b| ≤ 1e-3 · max(1, |a|)` for floats (summation order differs between
 * tilings), exact for integers.
 * **Small products** skip the tiles {@link skipMatmulCandidate} names.
 */
export function matmulTunableSet(options: MatmulTunableSetOptions): TunableSet<MatmulTuneInputs, MatmulTuneOutput, MatmulValues, WgslKernel> {
  const fitting = MATMUL_CONFIGS.filter((c) => configFits(c, options.profile));
  const candidates = options.candidates ?? fitting.map((c) => matmulCandidate(c, options.profile, options.plan));
  const fallback = options.fallback === undefined ? undefined : configName(options.fallback);
  return new TunableSet<MatmulTuneInputs, MatmulTuneOutput, MatmulValues, WgslKernel>({
    name: MATMUL_TUNABLE,
    candidates,
    ...(fallback !== undefined && candidates.some((c) => c.name === fallback) ? { fallback } : {}),
    key: (inputs) => matmulTuneKey(inputs.lhs.layout.shape, inputs.rhs.layout.shape, inputs.dtype),
    skip: (candidate, inputs) => skipMatmulCandidate(candidate, inputs.lhs.layout.shape.at(-2) ?? 1),
    validation: {
      read: readMatmulOutput,
      equal: matmulValuesClose,
    },
    ...(options.prepareWith === undefined
      ? {}
      : {
          prepare: (inputs: MatmulTuneInputs) =>
            prepareMatmulInputs(options.prepareWith as Client<WgslKernel>, inputs.lhs.layout.shape, inputs.rhs.layout.shape, inputs.outShape, inputs.dtype),
        }),
    releaseInputs: (inputs) => {
      inputs.lhs.memory.release();
      inputs.rhs.memory.release();
    },
    releaseOutput: (output) => output.memory.release(),
  });
}
