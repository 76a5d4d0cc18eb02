/**
 * Workload 5: host overhead — how fast ops are recorded, and whether a repeated graph is served
 * from the execution-plan cache.
 *
 * 1. Ops recorded per second: a loop recording `hostOps` small elementwise ops (16 elements) as
 *    model code does, in steps of `STEP` ops each inside its own `tidy` (so intermediates are
 *    disposed as the step ends), timed on the host only (the device is drained after the clock
 *    stops). The time includes everything the recording itself triggers (segments run as fusers
 *    close or the queue limit fills). TF.js runs the same loop eagerly. Target `host-us-per-op`
 *    (≤ 1.5 µs per op) is in `../targets.ts`.
 * 2. Plan cache: a graph of `graphOps` elementwise ops run twice; the fusion inspector's
 *    exploration count must not move on the second pass (target 0), and both passes must give the
 *    float64 reference's values.
 *
 * @module
 */
import type * as tfTypes from "@tensorflow/tfjs-core";
import { type Tensor, tensor, tidy } from "@weft/tensor";
import type { BenchContext } from "../context.js";
import { compare, hostData } from "../harness/data.js";
import { errorText, hostTime, jsCalibration } from "../harness/measure.js";
import { CALIBRATION_SIZE, LABEL, VARIANT } from "../targets.js";

const SMALL = 16;
/** Ops per `tidy` step of the recording loop. */
const STEP = 10;

/** The repeated graph: `ops` alternating `* 0.999` and `+ 0.001`. */
function graph(x: Tensor, ops: number): Tensor {
  return tidy(() => {
    let y = x;
    for (let i = 0; i < ops; i++) y = i % 2 === 0 ? y.mul(0.999) : y.add(0.001);
    return y;
  });
}

function graphRef(v: number, ops: number): number {
  let y = Math.fround(v);
  for (let i = 0; i < ops; i++) y = Math.fround(i % 2 === 0 ? y * Math.fround(0.999) : y + Math.fround(0.001));
  return y;
}

/** Runs workload 5. */
export async function runHostOverhead(ctx: BenchContext): Promise<void> {
  const r = ctx.report;
  const ops = ctx.sizes.hostOps;
  const reps = { warmup: ctx.options.quick ? 1 : 2, samples: ctx.options.quick ? 3 : 7 };
  const host = hostData(SMALL, 51);
  const size = LABEL.host(ops);

  if (ctx.weft.ok) {
    const w = ctx.weft.value;
    try {
      const x = tensor(host, { device: w.device, shape: [SMALL] });
      await w.device.sync();
      const t = await hostTime(
        () =>
          {
            for (let i = 0; i < ops; i += STEP) {
              tidy(() => {
                let y = x;
                for (let j = 0; j < STEP; j++) y = y.add(1);
                return undefined;
              });
            }
          },
        () => w.device.sync(),
        reps,
      );
      x.dispose();
      const weftRate = ops / (t.ms / 1000);
      r.add({ workload: "host", variant: VARIANT.weftRecord, method: "host", size, status: "ok", ms: t.ms, samples: t.samples, value: weftRate, unit: "ops/s" });
    } catch (error) {
      r.add({ workload: "host", variant: VARIANT.weftRecord, method: "host", size, status: `failed: ${errorText(error)}` });
    }
  } else r.add({ workload: "host", variant: VARIANT.weftRecord, method: "host", size, status: `unavailable: ${ctx.weft.reason}` });

  if (ctx.tf.ok) {
    const p = ctx.tf.value;
    try {
      const x: tfTypes.Tensor = p.tf.tensor1d(host);
      const t = await hostTime(
        () =>
          {
            for (let i = 0; i < ops; i += STEP) {
              p.tf.tidy(() => {
                let y = x;
                for (let j = 0; j < STEP; j++) y = p.tf.add(y, 1);
                return undefined;
              });
            }
          },
        () => p.wait(),
        reps,
      );
      x.dispose();
      const tfRate = ops / (t.ms / 1000);
      r.add({ workload: "host", variant: VARIANT.tfjsEager, method: "host", size, status: "ok", ms: t.ms, samples: t.samples, value: tfRate, unit: "ops/s" });
    } catch (error) {
      r.add({ workload: "host", variant: VARIANT.tfjsEager, method: "host", size, status: `failed: ${errorText(error)}` });
    }
  } else r.add({ workload: "host", variant: VARIANT.tfjsEager, method: "host", size, status: `unavailable: ${ctx.tf.reason}` });

  // The machine's plain-JS speed right after the recording loops (docs/performance.md#slow-phases).
  const calibration = jsCalibration(reps.samples);
  r.add({ workload: "host", variant: VARIANT.jsCalibration, method: "host", size: CALIBRATION_SIZE, status: "ok", ms: calibration.ms, samples: calibration.samples });

  // The plan cache: the same graph twice; the second pass must not explore.
  const g = ctx.sizes.graphOps;
  const gsize = `${g} ops`;
  if (!ctx.weft.ok) {
    r.add({ workload: "host", variant: "weft plan cache", method: "count", size: gsize, status: `unavailable: ${ctx.weft.reason}` });
    return;
  }
  const w = ctx.weft.value;
  try {
    const gHost = hostData(SMALL, 52, 0.5, 1.5);
    const x = tensor(gHost, { device: w.device, shape: [SMALL] });
    await w.device.sync();
    const inspector = w.fusion.inspector;
    const e0 = inspector.explorations;
    const p0 = inspector.plans;
    let start = performance.now();
    const y1 = graph(x, g);
    const v1 = (await y1.data()) as Float32Array;
    const firstMs = performance.now() - start;
    const e1 = inspector.explorations;
    start = performance.now();
    const y2 = graph(x, g);
    const v2 = (await y2.data()) as Float32Array;
    const secondMs = performance.now() - start;
    const e2 = inspector.explorations;
    const p2 = inspector.plans;
    y1.dispose();
    y2.dispose();
    x.dispose();
    const indices = [...Array(SMALL).keys()];
    const check1 = compare(v1, (i) => graphRef(gHost[i] as number, g), indices, 1e-4);
    const check2 = compare(v2, (i) => graphRef(gHost[i] as number, g), indices, 1e-4);
    r.add({ workload: "host", variant: "weft graph, first pass", method: "count", size: gsize, status: "ok", ms: firstMs, value: e1 - e0, unit: "explorations", check: check1 });
    r.add({ workload: "host", variant: "weft graph, second pass", method: "count", size: gsize, status: "ok", ms: secondMs, value: e2 - e1, unit: "explorations", check: check2 });
    r.add({ workload: "host", variant: "weft plans cached by the graph", method: "count", size: gsize, status: "ok", value: p2 - p0, unit: "plans" });
    const correct = check2.startsWith("ok");
    r.addRatio({
      workload: "host",
      id: "host-replan",
      name: "explorations on the second pass of the graph",
      value: e2 - e1,
      unit: "explorations",
      target: "= 0",
      meets: e2 - e1 === 0 && correct,
      ...(correct ? {} : { note: `second pass ${check2}` }),
    });
  } catch (error) {
    r.add({ workload: "host", variant: "weft plan cache", method: "count", size: gsize, status: `failed: ${errorText(error)}` });
  }
}
