import { StreamId } from "@weft/environment";
import type { MemoryHandle } from "@weft/server";
import { afterEach, describe, expect, it } from "vitest";
import { Client } from "../client/client.js";
import { setProcessMode, withProcessMode } from "../mode/process-mode.js";
import { STREAM_MODES } from "../mode/stream-mode.js";
import { RecordingServer, addScalarKernel, f32Bytes, f32Values } from "../testing/recording-server.js";
import type { HostTestKernel } from "../testing/recording-server.js";
import { AutotuneKey } from "./autotune-key.js";
import { AutotuneError } from "./errors.js";
import { TunableSet } from "./tunable.js";
import type { Tunable } from "./tunable.js";
import { TuneCache } from "./tune-cache.js";
import { MemoryTuneStore } from "./tune-store.js";
import { Tuner } from "./tuner.js";
import type { TuneProgress } from "./tuner.js";

afterEach(() => {
  setProcessMode("execute");
  expect(STREAM_MODES.size, "measurements dispose their overrides").toBe(0);
});

interface Inputs {
  readonly input: MemoryHandle;
  readonly length: number;
}

/** A kernel writing `input + delta` into `output`. */
function offsetKernel(delta: number): HostTestKernel {
  return {
    key: `offset(${delta})`,
    run([input, output]) {
      if (input === undefined || output === undefined) throw new Error("offset needs two bindings");
      output.set(f32Bytes(f32Values(input).map((v) => v + delta)));
    },
  };
}

/** A candidate writing `input + 1` whose every run first calls `tick(run)` (its runs counted from 0): what advances a test's fake clock. */
function tickingCandidate(name: string, tick: (run: number) => void): Tunable<Inputs, MemoryHandle, HostTestKernel> {
  let run = 0;
  return {
    name,
    run(inputs, c) {
      tick(run++);
      const output = c.empty(inputs.length * 4);
      c.launch(offsetKernel(1), [1, 1, 1], [
        { binding: inputs.input.binding(), access: "read" },
        { binding: output.binding(), access: "write" },
      ]);
      return output;
    },
  };
}

/** The tunable set of `candidates` over {@link Inputs}: keyed by length, validated by exact equality of the f32 outputs. */
function offsetSet(
  name: string,
  candidates: Tunable<Inputs, MemoryHandle, HostTestKernel>[],
  skip?: (candidate: Tunable<Inputs, MemoryHandle, HostTestKernel>, inputs: Inputs) => string | undefined,
): TunableSet<Inputs, MemoryHandle, number[], HostTestKernel> {
  return new TunableSet<Inputs, MemoryHandle, number[], HostTestKernel>({
    name,
    candidates,
    ...(skip === undefined ? {} : { skip }),
    key: (inputs) => AutotuneKey.of({ shapes: [[inputs.length]], dtypes: ["f32"] }),
    validation: {
      read: async (output, c) => f32Values((await c.read([output.binding()]))[0] ?? new Uint8Array()),
      equal: (a, b) => a.length === b.length && a.every((v, i) => v === b[i]),
    },
    releaseOutput: (output) => output.release(),
  });
}

/**
 * A harness with a fake clock: each candidate advances it by its cost per run, so "fastest" is
 * decided deterministically, never by wall time.
 */
function harness(options: { referenceFails?: boolean } = {}) {
  const server = new RecordingServer();
  const client = new Client(server).withStream(StreamId.allocate());
  let clock = 0;
  const runs = new Map<string, number>();
  const candidate = (name: string, cost: number, delta: number, fails = false): Tunable<Inputs, MemoryHandle, HostTestKernel> => ({
    name,
    run(inputs, c) {
      runs.set(name, (runs.get(name) ?? 0) + 1);
      if (fails) throw new Error(`${name}: shader rejected`);
      clock += cost;
      const output = c.empty(inputs.length * 4);
      c.launch(offsetKernel(delta), [1, 1, 1], [
        { binding: inputs.input.binding(), access: "read" },
        { binding: output.binding(), access: "write" },
      ]);
      return output;
    },
  });
  const set = offsetSet("offset-by-one", [
    candidate("reference", 5, 1, options.referenceFails === true),
    candidate("wrong-but-fastest", 0.1, 2),
    candidate("failing", 0, 1, true),
    candidate("fast", 1, 1),
  ]);
  const events: TuneProgress[] = [];
  const cache = new TuneCache({ adapter: "test-adapter", store: new MemoryTuneStore() });
  const tuner = new Tuner(client, { cache, now: () => clock, warmups: 1, warmupMs: 0, samples: 3, sampleMs: 4, onProgress: (p) => events.push(p) });
  const inputs: Inputs = { input: client.create(f32Bytes([1, 2, 3])), length: 3 };
  return { server, client, set, tuner, inputs, events, runs, cache };
}

describe("Tuner", () => {
  it("failing and wrong candidates are never chosen, whatever their time", async () => {
    const { set, tuner, inputs } = harness();
    const record = await tuner.tune(set, inputs);
    expect(record.fastest, "the fastest candidate that ran and matched the reference").toBe("fast");
    const byName = new Map(record.candidates.map((c) => [c.name, c]));
    expect(byName.get("wrong-but-fastest")?.rejected, "a wrong result is rejected").toMatch(/wrong result/);
    expect(byName.get("failing")?.rejected, "a throwing candidate is rejected").toMatch(/shader rejected/);
    expect(byName.get("fast")?.bestMs, "the fake clock's per-run cost").toBe(1);
    expect(byName.get("reference")?.bestMs).toBe(5);
  });

  it("candidates the set skips for the inputs are neither run nor counted; the record says why; the reference is never skipped", async () => {
    const server = new RecordingServer();
    const client = new Client(server).withStream(StreamId.allocate());
    let clock = 0;
    const runs = new Map<string, number>();
    const candidate = (name: string, cost: number): Tunable<Inputs, MemoryHandle, HostTestKernel> =>
      tickingCandidate(name, () => {
        clock += cost;
        runs.set(name, (runs.get(name) ?? 0) + 1);
      });
    const asked: string[] = [];
    // Short inputs skip "big-tile" (and would skip the reference, were it asked).
    const set = offsetSet("skips", [candidate("reference", 5), candidate("big-tile", 0.5), candidate("small-tile", 1)], (c, inputs) => {
      asked.push(c.name);
      return inputs.length < 8 && c.name !== "small-tile" ? `too big for ${inputs.length} elements` : undefined;
    });
    const events: TuneProgress[] = [];
    const cache = new TuneCache({ adapter: "test-adapter", store: new MemoryTuneStore() });
    const tuner = new Tuner(client, { cache, now: () => clock, warmups: 0, warmupMs: 0, samples: 1, onProgress: (p) => events.push(p) });
    const short: Inputs = { input: client.create(f32Bytes([1, 2, 3])), length: 3 };
    const record = await tuner.tune(set, short);
    expect(asked, "the reference is never asked about").not.toContain("reference");
    expect(runs.get("big-tile"), "a skipped candidate never runs (no compile, no validation)").toBeUndefined();
    expect(record.fastest, "the winner among the measured ones").toBe("small-tile");
    expect(record.candidates, "every candidate has an outcome, in the set's order").toEqual([
      { name: "reference", bestMs: 5 },
      { name: "big-tile", skipped: "too big for 3 elements" },
      { name: "small-tile", bestMs: 1 },
    ]);
    const start = events.find((e) => e.kind === "start");
    expect(start?.kind === "start" ? start.total : -1, "progress counts only the measured candidates").toBe(2);
    expect(events.filter((e) => e.kind === "candidate").map((e) => (e.kind === "candidate" ? `${e.done}/${e.total}` : "")), "a step per measured candidate").toEqual(["1/2", "2/2"]);
    const long: Inputs = { input: client.create(f32Bytes([1, 2, 3, 4, 5, 6, 7, 8])), length: 8 };
    expect((await tuner.tune(set, long)).fastest, "inputs the hook does not skip for measure every candidate").toBe("big-tile");
    short.input.release();
    long.input.release();
  });

  it("a candidate is timed by its fastest run: a slow outlier (the device busy with something else) does not lose it the tuning", async () => {
    const server = new RecordingServer();
    const client = new Client(server).withStream(StreamId.allocate());
    let clock = 0;
    const candidate = (name: string, costs: (run: number) => number): Tunable<Inputs, MemoryHandle, HostTestKernel> =>
      tickingCandidate(name, (run) => void (clock += costs(run)));
    // Runs: validation, one warmup (cost 1: samples of 2 runs for sampleMs 2), then three samples.
    // "spiky" costs 1 per run but its first and last samples met a busy device (a run of 20);
    // "steady" always costs 3.
    const set = offsetSet("outliers", [candidate("reference", () => 5), candidate("steady", () => 3), candidate("spiky", (r) => (r === 2 || r === 6 ? 20 : 1))]);
    const cache = new TuneCache({ adapter: "test-adapter", store: new MemoryTuneStore() });
    const tuner = new Tuner(client, { cache, now: () => clock, warmups: 1, warmupMs: 0, samples: 3, sampleMs: 2 });
    const record = await tuner.tune(set, { input: client.create(f32Bytes([1, 2, 3])), length: 3 });
    expect(record.fastest, "the median sample (10.5 per run) would have chosen 'steady'; the fastest (1 per run) is the kernel's time").toBe("spiky");
    expect(record.candidates.find((c) => c.name === "spiky")?.bestMs).toBe(1);
  });

  it("samples are interleaved across candidates: a slow stretch of time costs each candidate one sample, not one candidate all of them", async () => {
    const server = new RecordingServer();
    const client = new Client(server).withStream(StreamId.allocate());
    let clock = 0;
    let run = 0; // every candidate's runs, counted together: the device's timeline
    const busy = (r: number): boolean => r >= 8 && r <= 19; // twelve consecutive runs meet a busy device (+20 each)
    const candidate = (name: string, cost: number): Tunable<Inputs, MemoryHandle, HostTestKernel> =>
      tickingCandidate(name, () => {
        run += 1;
        clock += cost + (busy(run) ? 20 : 0);
      });
    // Runs 1–6: each candidate's validation and one warmup (samples of 1, 4 and 2 runs for sampleMs 4).
    // Interleaved, runs 8–19 are "fast"'s first two samples and "steady"'s first two; one after
    // another, they would have been all three of "fast"'s samples, and "steady" would have won.
    const set = offsetSet("interleaved", [candidate("reference", 5), candidate("fast", 1), candidate("steady", 3)]);
    const cache = new TuneCache({ adapter: "test-adapter", store: new MemoryTuneStore() });
    const tuner = new Tuner(client, { cache, now: () => clock, warmups: 1, warmupMs: 0, samples: 3, sampleMs: 4 });
    const record = await tuner.tune(set, { input: client.create(f32Bytes([1, 2, 3])), length: 3 });
    expect(run, "3 validations + 3 warmups + 3 rounds of 1 + 4 + 2 runs").toBe(27);
    expect(record.fastest).toBe("fast");
    expect(record.candidates.find((c) => c.name === "fast")?.bestMs, "its third sample met an idle device").toBe(1);
    expect(record.candidates.find((c) => c.name === "steady")?.bestMs).toBe(3);
  });

  it("the progress hook hears start, each candidate with done/total, and done", async () => {
    const { set, tuner, inputs, events } = harness();
    await tuner.execute(set, inputs);
    expect(events.map((e) => e.kind), "one start, four candidates, one done").toEqual([
      "start",
      "candidate",
      "candidate",
      "candidate",
      "candidate",
      "done",
    ]);
    expect(events.flatMap((e) => (e.kind === "candidate" ? [[e.done, e.total]] : [])), "a progress bar can advance").toEqual([
      [1, 4],
      [2, 4],
      [3, 4],
      [4, 4],
    ]);
    expect(events.at(-1), "done names the winner").toMatchObject({ kind: "done", fastest: "fast" });
  });

  it("a discarded launch leaves memory untouched while autotune's measurement still executes under compile-and-autotune", async () => {
    const { server, client, set, tuner, inputs } = harness();
    const output = await withProcessMode("compile-and-autotune", async () => {
      client.launch(addScalarKernel(100), [1, 1, 1], [{ binding: inputs.input.binding(), access: "read-write" }]);
      return tuner.execute(set, inputs);
    });
    expect(f32Values(client.readSync([inputs.input.binding()])?.[0] ?? new Uint8Array()), "the discarded launch wrote nothing").toEqual([1, 2, 3]);
    const measured = server.launches.filter((l) => l.stream === tuner.measurementClient.stream());
    expect(measured.length, "the measurement launched").toBeGreaterThan(0);
    expect(new Set(measured.map((l) => l.mode)), "every measurement launch executed").toEqual(new Set(["execute"]));
    expect(tuner.cache.get(set.name, set.key(inputs))?.fastest, "validation ran on real results, so the wrong candidate lost").toBe("fast");
    expect(f32Values(client.readSync([output.binding()])?.[0] ?? new Uint8Array()), "the winner's own launch was discarded").toEqual([0, 0, 0]);
    expect(server.launches.filter((l) => l.stream === client.stream()).map((l) => l.mode), "the caller's launches were discarded").toEqual([
      "discard",
      "discard",
    ]);
  });

  it("choose returns the fallback at once, tunes in the background, and returns the winner afterwards", async () => {
    const { set, tuner, inputs, runs } = harness();
    expect(tuner.choose(set, inputs).name, "no result yet: the set's fallback (its reference)").toBe("reference");
    expect(tuner.choose(set, inputs).name, "still pending: the fallback, and no second tuning").toBe("reference");
    await tuner.idle();
    expect(tuner.choose(set, inputs).name, "tuned: the winner").toBe("fast");
    expect(runs.get("fast"), "one tuning: 1 validation + 1 warmup + 3 samples of 4 runs (sampleMs 4 ÷ its warmup run of 1)").toBe(14);
  });

  it("a background tuning waits for the idle gate before each candidate; an explicit one does not", async () => {
    const { client, set, inputs, runs, cache } = harness();
    let open: (() => void) | undefined;
    let waits = 0;
    const idle = (): Promise<void> => {
      waits++;
      return new Promise<void>((resolve) => (open = resolve));
    };
    const tuner = new Tuner(client, { cache, now: () => 0, warmups: 0, warmupMs: 0, samples: 1, idle });
    expect(tuner.choose(set, inputs).name, "the fallback at once").toBe("reference");
    for (let i = 0; i < 5; i++) await Promise.resolve();
    await new Promise((r) => setTimeout(r, 5));
    expect(runs.size, "no candidate ran while the device is busy (the gate is closed)").toBe(0);
    expect(waits, "the tuning waits before its first candidate").toBe(1);
    for (let step = 1; step <= set.candidates.length; step++) {
      const release = open;
      open = undefined;
      release?.();
      await new Promise((r) => setTimeout(r, 5));
      expect(runs.size, `after ${step} idle period(s), ${step} candidate(s) ran`).toBe(step);
    }
    // Then one sample of each validated candidate ("reference" and "fast"), each behind the gate.
    for (let sample = 1; sample <= 2; sample++) {
      const before = [...runs.values()].reduce((a, b) => a + b, 0);
      const release = open;
      open = undefined;
      release?.();
      await new Promise((r) => setTimeout(r, 5));
      expect([...runs.values()].reduce((a, b) => a + b, 0), `timing sample ${sample} ran behind its own idle period`).toBeGreaterThan(before);
    }
    await tuner.idle();
    expect(waits, "one wait per candidate, then one per timing sample (1 sample × 2 validated candidates)").toBe(set.candidates.length + 2);
    const other: Inputs = { input: client.create(f32Bytes([1, 2, 3, 4])), length: 4 };
    await tuner.tune(set, other);
    expect(waits, "an explicit tuning (warmup) measures at once").toBe(set.candidates.length + 2);
    other.input.release();
  });

  it("concurrent executes of one unknown key share one tuning", async () => {
    const { set, tuner, inputs, events } = harness();
    const outputs = await Promise.all([tuner.execute(set, inputs), tuner.execute(set, inputs)]);
    expect(events.filter((e) => e.kind === "start").length, "measured once").toBe(1);
    for (const output of outputs) {
      expect(f32Values((await tuner.client.read([output.binding()]))[0] ?? new Uint8Array()), "each call ran the winner").toEqual([2, 3, 4]);
    }
  });

  it("a failing reference fails the tuning: execute rejects, choose keeps the fallback and reports it", async () => {
    const { set, tuner, inputs, events } = harness({ referenceFails: true });
    await expect(tuner.execute(set, inputs), "nothing can be validated").rejects.toBeInstanceOf(AutotuneError);
    tuner.forget();
    const other: Inputs = { ...inputs, length: 2 };
    expect(tuner.choose(set, other).name, "fallback while tuning").toBe("reference");
    await tuner.idle();
    expect(events.filter((e) => e.kind === "failed").length, "both failures reached the hook").toBe(2);
    expect(tuner.choose(set, other).name, "a failed key keeps its fallback without retuning").toBe("reference");
    expect(events.filter((e) => e.kind === "start").length, "no third tuning started").toBe(2);
  });

  it("generation changes when a tuning's result lands and on forget, not on choose", async () => {
    const { set, tuner, inputs } = harness();
    const before = tuner.generation;
    expect(tuner.choose(set, inputs).name, "fallback while tuning").toBe("reference");
    expect(tuner.generation, "choosing changes nothing").toBe(before);
    await tuner.idle();
    const tuned = tuner.generation;
    expect(tuned, "the stored result is a new generation").not.toBe(before);
    tuner.forget();
    expect(tuner.generation, "forget is a new generation").not.toBe(tuned);
  });

  it("a cached result is reused without measuring again", async () => {
    const { set, client, inputs, cache } = harness();
    await cache.set(set.name, set.key(inputs), { fastest: "fast", candidates: [] });
    const events: TuneProgress[] = [];
    const tuner = new Tuner(client, { cache, onProgress: (p) => events.push(p) });
    await tuner.execute(set, inputs);
    expect(events, "no measurement for a known key").toEqual([]);
  });

  it("a malformed set throws naming the set and the fix", () => {
    const base = { name: "bad", key: () => AutotuneKey.raw("k") };
    const c = { name: "a", run: () => 0 };
    expect(() => new TunableSet({ ...base, candidates: [] }), "no candidates").toThrow(/"bad" has no candidates/);
    expect(() => new TunableSet({ ...base, candidates: [c, c] }), "duplicate names").toThrow(/used twice/);
    expect(() => new TunableSet({ ...base, candidates: [c], reference: "zz" }), "unknown reference").toThrow(/reference "zz"/);
  });
});

describe("AutotuneKey", () => {
  it("is canonical: extra parameters sort by name, and anchoring rounds dims up to powers of two", () => {
    const a = AutotuneKey.of({ shapes: [[3, 5]], dtypes: ["f32"], extra: { b: 1, a: true } });
    const b = AutotuneKey.of({ shapes: [[3, 5]], dtypes: ["f32"], extra: { a: true, b: 1 } });
    expect(a, "order of extra parameters does not matter").toBe(b);
    expect(AutotuneKey.of({ shapes: [[3, 5]], dtypes: ["f32"], anchor: true }), "anchored").toBe(
      AutotuneKey.of({ shapes: [[4, 8]], dtypes: ["f32"] }),
    );
    expect(a, "dtype is part of the key").not.toBe(AutotuneKey.of({ shapes: [[3, 5]], dtypes: ["f16"], extra: { a: true, b: 1 } }));
  });
});
