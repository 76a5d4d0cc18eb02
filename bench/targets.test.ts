import { describe, expect, it } from "vitest";
import type { WebGpuDevice } from "@weft/backend-webgpu";
import { type Sizes, sizesFor } from "./context.js";
import type { Measurement } from "./harness/report.js";
import { aggregate, LABEL, targetsFor, type TargetSpec, VARIANT } from "./targets.js";

/** The full-mode sizes on a device that binds 1 GiB (what `sizesFor` gives on the H200). */
const FULL: Sizes = sizesFor(false, { limits: { maxStorageBufferBindingSize: 2 ** 31, maxBufferSize: 2 ** 31 } } as WebGpuDevice);

/** The ids of issue "Speed at the hardware limit", each with its bar as the issue states it. */
const ISSUE: Record<string, string> = {
  "chain-2^24-fused-vs-limit": "≥ 0.8",
  "chain-2^28-fused-vs-limit": "≥ 0.9",
  "chain-2^24-fused-vs-tfjs": "≥ 6",
  "chain-2^24-fused-vs-jax": "≥ 2",
  "host-us-per-op": "≤ 1.5",
  "dependent-10k-vs-tfjs": "≥ 1.5",
  "readback-64MB-vs-tfjs": "≥ 4",
  "readback-into-vs-raw": "≥ 0.5",
  "sum-2^26-vs-limit": "≥ 0.7",
  "rowsum-vs-tfjs": "≥ 1.5",
  "matmul-1024-vs-tfjs": "≥ 1.5",
  "matmul-2048-vs-tfjs": "≥ 1.5",
  "matmul-4096-vs-tfjs": "≥ 1.5",
  "small-64-vs-tfjs": "≥ 15",
  "serving-vs-tfjs": "≥ 10",
  "serving-p99-ms": "≤ 5",
};

const ok = (workload: string, variant: string, method: Measurement["method"], size: string, figure: { ms?: number; value?: number }, check = "ok"): Measurement => ({ workload, variant, method, size, status: "ok", ...figure, check });

function spec(id: string): TargetSpec {
  const t = targetsFor(FULL, false).find((s) => s.id === id);
  if (t === undefined) throw new Error(`no target ${id}`);
  return t;
}

describe("targetsFor", () => {
  it("has every id of the issue, once, with the issue's bar", () => {
    const targets = targetsFor(FULL, false);
    const ids = targets.map((t) => t.id);
    expect(new Set(ids).size, "ids are unique").toBe(ids.length);
    for (const [id, bar] of Object.entries(ISSUE)) expect(targets.find((t) => t.id === id)?.bar.text, id).toBe(bar);
  });

  it("reads the measurements under the names and sizes the workloads record", () => {
    const t = spec("chain-2^24-fused-vs-limit");
    expect(t.formula).toMatchObject({ kind: "faster", numerator: { variant: VARIANT.fused, size: LABEL.chain(1 << 24) }, denominator: { variant: VARIANT.limitChain } });
  });

  it("keeps the issue's ids in quick mode and says which size stands in", () => {
    const quick = targetsFor({ ...FULL, chain: [1 << 18, 1 << 20], matmul: [64, 128, 256] }, true);
    expect(quick.find((t) => t.id === "chain-2^28-fused-vs-limit")?.note).toMatch(/2\^20 f32 stands for 2\^28/);
    expect(quick.find((t) => t.id === "matmul-4096-vs-tfjs")?.note).toMatch(/256² stands for 4096²/);
  });

  it("names 2^28 as not run when the device cannot bind it", () => {
    const t = targetsFor({ ...FULL, chain: [1 << 24] }, false).find((s) => s.id === "chain-2^28-fused-vs-limit");
    const r = aggregate(t as TargetSpec, [[]]);
    expect(r.value).toBeUndefined();
    expect(r.meets).toBeUndefined();
    expect(r.note).toMatch(/cannot bind 1 GiB/);
  });
});

describe("aggregate", () => {
  const size = LABEL.chain(1 << 24);
  const run = (fusedMs: number, limitMs: number, check = "ok"): Measurement[] => [
    ok("chain", VARIANT.fused, "throughput", size, { ms: fusedMs }, check),
    ok("chain", VARIANT.limitChain, "throughput", size, { ms: limitMs }),
  ];

  it("takes the median of the runs, judges it, and reports the spread between runs", () => {
    const r = aggregate(spec("chain-2^24-fused-vs-limit"), [run(100, 90), run(100, 70), run(100, 85)]);
    expect(r.value).toBeCloseTo(0.85);
    expect(r.meets).toBe(true);
    expect(r.runs).toEqual([0.9, 0.7, 0.85]);
    expect(r.spread).toEqual({ min: 0.7, max: 0.9 });
  });

  it("a wrong Weft result is a miss however fast", () => {
    const r = aggregate(spec("chain-2^24-fused-vs-limit"), [run(1, 90, "WRONG: rel err 1")]);
    expect(r.meets).toBe(false);
    expect(r.note).toMatch(/weft fused computed a WRONG result/);
  });

  it("an upper bar (≤) meets at or below it: µs per op from ops/s", () => {
    const host = LABEL.host(FULL.hostOps);
    const at = (opsPerSecond: number) => aggregate(spec("host-us-per-op"), [[ok("host", VARIANT.weftRecord, "host", host, { ms: 1, value: opsPerSecond })]]);
    expect(at(1e6).value).toBeCloseTo(1);
    expect(at(1e6).meets).toBe(true);
    expect(at(5e5).meets, "2 µs per op is above 1.5").toBe(false);
    expect(at(1e6).unit).toBe("µs/op");
  });

  it("a rate target divides the figures (requests/s), not the times", () => {
    const s = LABEL.serving(FULL.serving);
    const r = aggregate(spec("serving-vs-tfjs"), [
      [ok("serving", VARIANT.inFlight(VARIANT.weft, 32), "throughput", s, { ms: 0.1, value: 10_000 }), ok("serving", VARIANT.inFlight(VARIANT.tfjs, 32), "throughput", s, { ms: 1, value: 1000 })],
    ]);
    expect(r.value).toBe(10);
    expect(r.meets).toBe(true);
  });

  it("a missing side gives no value and no verdict, naming the side", () => {
    const r = aggregate(spec("chain-2^24-fused-vs-limit"), [[ok("chain", VARIANT.fused, "throughput", size, { ms: 1 })]]);
    expect(r.value).toBeUndefined();
    expect(r.meets).toBeUndefined();
    expect(r.note).toMatch(/no figure for limit/);
  });
});
