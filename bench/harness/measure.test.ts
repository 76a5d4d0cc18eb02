import { describe, expect, it } from "vitest";
import { WARMUP_MAX_ITERATIONS, latency, median, throughput, type Timed } from "./measure.js";

/** A timed variant that logs what the harness did, in order, and never touches a device. */
function logging(): { timed: Timed; log: string[] } {
  const log: string[] = [];
  return {
    log,
    timed: {
      prepare: (steps) => void log.push(`prepare ${steps}`),
      step: (i) => void log.push(`step ${i}`),
      wait: async () => void log.push("wait"),
      release: () => void log.push("release"),
    },
  };
}

describe("median", () => {
  it("is the middle sample, so one outlier cannot move it", () => {
    expect(median([3, 1, 1000, 2, 2]), "an outlier must not shift the median").toBe(2);
    expect(median([4, 1, 3, 2]), "even counts average the middle two").toBe(2.5);
  });

  it("refuses an empty sample set instead of inventing a figure", () => {
    expect(() => median([])).toThrow(/no samples/);
  });
});

describe("the two timing methods", () => {
  it("latency waits after every iteration", async () => {
    const { timed, log } = logging();
    const t = await latency(timed, { warmup: 1, samples: 3, iterations: 10 });
    expect(t.samples.length, "one sample per timed iteration").toBe(3);
    const steps = log.filter((l) => l.startsWith("step")).length;
    const waits = log.filter((l) => l === "wait").length;
    expect(waits, "latency must wait once per iteration, warm-up included").toBe(steps);
    expect(steps, "warm-up plus samples, never the throughput iteration count").toBe(4);
  });

  it("throughput submits many iterations and waits once per sample", async () => {
    const { timed, log } = logging();
    const t = await throughput(timed, { warmup: 1, samples: 2, iterations: 5 });
    expect(t.samples.length).toBe(2);
    const waits = log.filter((l) => l === "wait").length;
    expect(waits, "one wait for the warm-up and one per sample").toBe(3);
    const warmUpPart = log.slice(0, log.indexOf("release"));
    expect(warmUpPart, "the warm-up runs the timed loop's shape: all iterations, then one wait").toEqual(["prepare 5", "step 0", "step 1", "step 2", "step 3", "step 4", "wait"]);
    const timedPart = log.slice(log.indexOf("release") + 1);
    expect(timedPart.slice(0, 7), "a sample prepares its inputs, then steps 0..4 back to back, then waits").toEqual([
      "prepare 5",
      "step 0",
      "step 1",
      "step 2",
      "step 3",
      "step 4",
      "wait",
    ]);
  });

  it("a warm-up time budget repeats the warm-up iteration until it has passed, and no further than the cap", async () => {
    const { timed, log } = logging();
    const slow: Timed = { ...timed, wait: async () => { log.push("wait"); await new Promise((resolve) => setTimeout(resolve, 5)); } };
    await latency(slow, { warmup: 1, warmupMs: 40, samples: 2, iterations: 1 });
    const warmups = log.filter((l) => l === "wait").length - 2;
    expect(warmups, "40 ms of 5 ms iterations: more than the one counted warm-up").toBeGreaterThanOrEqual(5);
    expect(warmups, "and the budget ends it").toBeLessThan(40);
    const fast = logging();
    await latency(fast.timed, { warmup: 0, warmupMs: 60_000, samples: 1, iterations: 1 });
    expect(fast.log.filter((l) => l === "wait").length - 1, "a fast iteration stops at the cap, not at the budget").toBe(WARMUP_MAX_ITERATIONS);
  });

  it("releases outputs after every wait so samples do not accumulate memory", async () => {
    const { timed, log } = logging();
    await throughput(timed, { warmup: 2, samples: 3, iterations: 4 });
    const waits = log.filter((l) => l === "wait").length;
    const releases = log.filter((l) => l === "release").length;
    expect(releases, "every wait is followed by a release").toBe(waits);
  });
});
