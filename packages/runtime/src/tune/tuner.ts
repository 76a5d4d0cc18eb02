/**
 * The tuner: measures a tunable set's candidates on one device and remembers the fastest.
 *
 * @module
 */
import { LruCache, Mutex, StreamId } from "@weft/environment";
import type { KernelDefinition } from "@weft/server";
import type { Client } from "../client/client.js";
import { StreamModeOverride } from "../mode/stream-mode.js";
import type { AutotuneKey } from "./autotune-key.js";
import { AutotuneError } from "./errors.js";
import type { Tunable, TunableSet } from "./tunable.js";
import { TuneCache } from "./tune-cache.js";
import type { TuneRecord } from "./tune-store.js";

/** What a progress hook hears; a progress bar advances by `done / total`. */
export type TuneProgress =
  | { readonly kind: "start"; readonly set: string; readonly key: AutotuneKey; readonly total: number }
  | {
      readonly kind: "candidate";
      readonly set: string;
      readonly key: AutotuneKey;
      readonly candidate: string;
      readonly done: number;
      readonly total: number;
      /** The fastest timed run, when the candidate ran and validated. */
      readonly bestMs?: number;
      /** Why it was rejected (an error, a wrong result). */
      readonly rejected?: string;
    }
  | { readonly kind: "done"; readonly set: string; readonly key: AutotuneKey; readonly fastest: string }
  | { readonly kind: "failed"; readonly set: string; readonly key: AutotuneKey; readonly error: unknown };

/** When a tuning measures: at once (an explicit tuning), or only while the device is idle (`choose`'s). */
type TuneWhen = "now" | "background";

/**
 * Most runs one timing sample holds (a candidate's outputs are released as soon as each run is
 * launched, so memory stays at one output plus what the pending runs pin).
 */
export const MAX_RUNS_PER_SAMPLE = 32;

/** Most warmup runs of one candidate, whatever `warmupMs` asks. */
export const MAX_WARMUP_RUNS = 64;

/** How a {@link Tuner} measures. */
export interface TunerOptions {
  /** Where results live; default a {@link TuneCache} for adapter `client.server.name`, persisted. */
  readonly cache?: TuneCache;
  /** Runs per candidate before timing starts (at least). Default 2. */
  readonly warmups?: number;
  /**
   * Milliseconds a candidate's warmup lasts at least (within {@link MAX_WARMUP_RUNS} runs): a GPU
   * that idled while the tuner waited for a quiet device runs at low clocks until it has been busy
   * for a while, and a candidate timed then looks several times slower than it is. Default 20.
   */
  readonly warmupMs?: number;
  /** Timed samples per candidate; its time is the fastest sample's time per run. Default 5. */
  readonly samples?: number;
  /**
   * Milliseconds one sample should last: a sample runs the candidate back to back as many times as
   * its last warmup run fits in this (at most {@link MAX_RUNS_PER_SAMPLE}), then waits once, so the
   * wait's own latency and the device's stray delays count once per sample, not once per run.
   * Default 10.
   */
  readonly sampleMs?: number;
  /** Called at each step of every tuning (see {@link TuneProgress}). */
  readonly onProgress?: (progress: TuneProgress) => void;
  /** The clock, in milliseconds; default `performance.now`. Injected by deterministic tests. */
  readonly now?: () => number;
  /** The stream measurements run on; default a fresh one, so they never mix with callers' work. */
  readonly stream?: StreamId;
  /**
   * Resolves when the device has no request work (see {@link Tuner}, "Background tunings"): a
   * tuning started by `choose` awaits it before each candidate, so its compiles and measurements
   * never stall a request. Default: none (measure at once).
   */
  readonly idle?: () => Promise<void>;
}

/**
 * Chooses, per {@link TunableSet} and {@link AutotuneKey}, the fastest candidate that runs and
 * gives the reference's results, on one device (CubeCL's `LocalTuner`).
 *
 * @remarks
 * **Two entry points.**
 * - {@link execute}`(set, inputs)` (async): on an unknown key it tunes first (awaitable), then runs
 *   the winner through the tuner's client. Concurrent calls for one key share one tuning.
 * - {@link choose}`(set, inputs)` (synchronous — what a backend calls from synchronous fused
 *   execution): the cached winner, or — while none is known — the set's fallback, and tuning is
 *   started in the background (inputs made by `set.prepare` now, while the caller's are alive).
 *   This is CubeCL's wasm "Pending" path: the caller never blocks, and a later call of the same key
 *   gets the winner once the measurement's promise settled. Background failures go to the progress
 *   hook (`kind: "failed"`), never to an unhandled rejection; that key then keeps the fallback
 *   until {@link forget}.
 * **Background tunings** (started by `choose`) wait for the `idle` option before each candidate's
 * validation and warmup and before each timing sample, so a request is never queued behind a
 * candidate's compile or timed runs (at most one step already under way when a request arrives:
 * a validation, a warmup of `warmupMs`, or a sample of about `sampleMs`); explicit tunings (`execute`, `winner`, `tune`,
 * what `weft.warmup` runs) measure at once.
 * **Measurement.** One tuning at a time (a {@link Mutex}). On its own stream, inside a
 * `StreamModeOverride('execute', …)`, so it runs even under `'compile-and-autotune'`. The reference
 * runs first; then each candidate runs once and is validated against it, then warms up (`warmups`
 * runs and `warmupMs`). Then `samples` rounds each time one sample of every validated candidate
 * (back-to-back runs, one `client.sync()`), so a slow stretch of time costs each candidate one
 * sample, not one candidate all of them; a candidate's time is its fastest sample's per run (see
 * `#sample`). Each candidate is reported once: when rejected, or after its last sample. Candidates
 * the set skips for the inputs (`TunableSetOptions.skip`) are neither run nor counted in the
 * progress's `total`; the record says why each was skipped. A candidate that
 * throws, rejects, or gives a result `validation.equal` refuses is rejected; if the reference itself
 * fails nothing can be validated and tuning fails with an {@link AutotuneError}.
 * **State bounds.** `#pending` holds one entry per tuning in flight, removed when it settles;
 * `#failed` at most 1024 keys whose tuning failed (least recently failed forgotten first, so such a
 * key may be tried again), cleared by {@link forget}; results in memory are bounded by the cache.
 */
export class Tuner<K extends KernelDefinition = KernelDefinition> {
  readonly client: Client<K>;
  readonly cache: TuneCache;
  readonly #measureClient: Client<K>;
  readonly #warmups: number;
  readonly #samples: number;
  readonly #sampleMs: number;
  readonly #warmupMs: number;
  readonly #now: () => number;
  readonly #onProgress: ((progress: TuneProgress) => void) | undefined;
  readonly #lock = new Mutex();
  /** Tunings in flight, by cache key; an entry leaves when its tuning settles. */
  readonly #pending = new Map<string, Promise<TuneRecord>>();
  /** What background tunings wait for before each candidate (see the type doc). */
  readonly #idle: (() => Promise<void>) | undefined;
  /** Keys whose tuning failed; `choose` keeps their fallback. At most 1024 (oldest forgotten); cleared by {@link forget}. */
  readonly #failed = new LruCache<string, true>(1024);
  /** Calls of {@link forget}: part of {@link generation}. */
  #forgets = 0;

  constructor(client: Client<K>, options: TunerOptions = {}) {
    this.client = client;
    this.cache = options.cache ?? new TuneCache({ adapter: client.server.name });
    this.#measureClient = client.withStream(options.stream ?? StreamId.allocate());
    this.#warmups = options.warmups ?? 2;
    this.#samples = Math.max(1, options.samples ?? 5);
    this.#sampleMs = options.sampleMs ?? 10;
    this.#warmupMs = options.warmupMs ?? 20;
    this.#now = options.now ?? (() => performance.now());
    this.#onProgress = options.onProgress;
    this.#idle = options.idle;
  }

  /** The client measurements launch through: bound to the tuner's measurement stream. */
  get measurementClient(): Client<K> {
    return this.#measureClient;
  }

  /** Tunes `set` for `inputs` when its key is unknown, then runs the winner through {@link client}. */
  async execute<I, O, V>(set: TunableSet<I, O, V, K>, inputs: I): Promise<O> {
    const winner = await this.winner(set, inputs);
    return winner.run(inputs, this.client);
  }

  /** The winning candidate for `inputs`, tuning first when its key is unknown. */
  async winner<I, O, V>(set: TunableSet<I, O, V, K>, inputs: I): Promise<Tunable<I, O, K>> {
    await this.cache.load();
    const key = set.key(inputs);
    const known = this.#cached(set, key);
    if (known !== undefined) return known;
    const record = await this.#tune(set, key, () => set.prepare(inputs));
    return this.#resolve(set, key, record);
  }

  /**
   * The cached winner, else the set's fallback while tuning runs in the background (see the type
   * doc). Never blocks and never throws for a tuning failure.
   */
  choose<I, O, V>(set: TunableSet<I, O, V, K>, inputs: I): Tunable<I, O, K> {
    const key = set.key(inputs);
    const known = this.#cached(set, key);
    if (known !== undefined) return known;
    const id = this.#id(set, key);
    if (!this.#pending.has(id) && !this.#failed.has(id)) {
      const prepared = set.prepare(inputs);
      this.#tune(set, key, () => prepared, false, "background").catch(() => undefined);
    }
    return set.fallback;
  }

  /** Measures `set`'s candidates for `inputs` now, even when a result is cached; stores it. */
  async tune<I, O, V>(set: TunableSet<I, O, V, K>, inputs: I): Promise<TuneRecord> {
    return this.#tune(set, set.key(inputs), () => set.prepare(inputs), true);
  }

  /** Resolves once every tuning started so far (including background ones) has settled. */
  async idle(): Promise<void> {
    while (this.#pending.size > 0) {
      await Promise.allSettled([...this.#pending.values()]);
    }
  }

  /** Forgets that tunings failed, so `choose` tries them again. */
  forget(): void {
    this.#failed.clear();
    this.#forgets++;
  }

  /**
   * A number that changes whenever {@link choose} may answer differently for the same inputs: a
   * result stored, loaded or cleared in {@link cache}, or {@link forget} (after which `choose`
   * starts failed tunings again). While it stays the same, a choice made earlier still stands.
   */
  get generation(): number {
    return this.cache.generation + this.#forgets;
  }

  #id(set: { readonly name: string }, key: AutotuneKey): string {
    return JSON.stringify([set.name, key]);
  }

  #cached<I, O, V>(set: TunableSet<I, O, V, K>, key: AutotuneKey): Tunable<I, O, K> | undefined {
    const record = this.cache.get(set.name, key);
    return record === undefined ? undefined : set.candidate(record.fastest);
  }

  #resolve<I, O, V>(set: TunableSet<I, O, V, K>, key: AutotuneKey, record: TuneRecord): Tunable<I, O, K> {
    const found = set.candidate(record.fastest);
    if (found === undefined) {
      throw new AutotuneError(`autotune of "${set.name}" at ${key}: its winner "${record.fastest}" is not a candidate of the set`);
    }
    return found;
  }

  /** Starts (or joins) the tuning of `key`; `force` measures even over a cached result. */
  #tune<I, O, V>(set: TunableSet<I, O, V, K>, key: AutotuneKey, makeInputs: () => I, force = false, when: TuneWhen = "now"): Promise<TuneRecord> {
    const id = this.#id(set, key);
    const running = this.#pending.get(id);
    if (running !== undefined) return running;
    const inputs = makeInputs();
    const promise = this.#lock
      .runExclusive(async () => {
        await this.cache.load();
        const cached = this.cache.get(set.name, key);
        if (!force && cached !== undefined && set.candidate(cached.fastest) !== undefined) return cached;
        return this.#measure(set, key, inputs, when);
      })
      .then(
        (record) => {
          this.#failed.delete(id);
          return record;
        },
        (error: unknown) => {
          this.#failed.set(id, true);
          this.#onProgress?.({ kind: "failed", set: set.name, key, error });
          throw error;
        },
      )
      .finally(() => {
        this.#pending.delete(id);
        set.releaseInputs(inputs);
      });
    this.#pending.set(id, promise);
    return promise;
  }

  async #measure<I, O, V>(set: TunableSet<I, O, V, K>, key: AutotuneKey, inputs: I, when: TuneWhen): Promise<TuneRecord> {
    const client = this.#measureClient;
    const outcomes = new Map<string, { bestMs?: number; rejected?: string; skipped?: string }>();
    const order = [set.reference];
    for (const c of set.candidates) {
      if (c === set.reference) continue;
      const skipped = set.skipped(c, inputs);
      if (skipped === undefined) order.push(c);
      else outcomes.set(c.name, { skipped });
    }
    const total = order.length;
    this.#onProgress?.({ kind: "start", set: set.name, key, total });
    using _measuring = new StreamModeOverride("execute", client);
    let done = 0;
    const report = (candidate: Tunable<I, O, K>, outcome: { bestMs: number } | { rejected: string }): void => {
      outcomes.set(candidate.name, outcome);
      done += 1;
      this.#onProgress?.({ kind: "candidate", set: set.name, key, candidate: candidate.name, done, total, ...outcome });
    };
    // Phase 1, candidate by candidate: validate, then warm up (which also sizes its samples).
    let expected: { value: V } | undefined;
    const timed: { readonly candidate: Tunable<I, O, K>; readonly runs: number; bestMs: number; rejected?: string }[] = [];
    for (const candidate of order) {
      if (when === "background") await this.#idle?.();
      let rejected: string | undefined;
      try {
        const checked = await this.#validate(set, candidate, inputs, client, expected);
        if (checked.ok) {
          if (candidate === set.reference) expected = { value: checked.value };
          timed.push({ candidate, runs: await this.#warm(set, candidate, inputs, client), bestMs: Number.POSITIVE_INFINITY });
        } else {
          rejected = checked.reason;
        }
      } catch (error) {
        rejected = `failed: ${error instanceof Error ? error.message : String(error)}`;
      }
      if (rejected === undefined) continue;
      report(candidate, { rejected });
      if (candidate === set.reference) {
        for (const other of order.slice(1)) {
          outcomes.set(other.name, { rejected: `not validated: the reference "${set.reference.name}" failed` });
        }
        throw new AutotuneError(
          `autotune of "${set.name}" at ${key}: the reference candidate "${set.reference.name}" ${rejected}; ` +
            "no candidate can be validated without it — fix the reference kernel or pick another reference",
        );
      }
    }
    // Phase 2: `samples` rounds, each timing one sample of every candidate left, from a rotating
    // start (see `#sample`, "Why interleaved"); a candidate is reported after its last sample.
    for (let round = 0; round < this.#samples; round++) {
      for (let j = 0; j < timed.length; j++) {
        const entry = timed[(round + j) % timed.length];
        if (entry === undefined || entry.rejected !== undefined) continue;
        if (when === "background") await this.#idle?.();
        try {
          entry.bestMs = Math.min(entry.bestMs, await this.#sample(set, entry.candidate, inputs, client, entry.runs));
        } catch (error) {
          entry.rejected = `failed: ${error instanceof Error ? error.message : String(error)}`;
        }
        if (entry.rejected !== undefined) report(entry.candidate, { rejected: entry.rejected });
        else if (round === this.#samples - 1) report(entry.candidate, { bestMs: entry.bestMs });
      }
    }
    let fastest: string | undefined;
    let best = Number.POSITIVE_INFINITY;
    for (const candidate of set.candidates) {
      const outcome = outcomes.get(candidate.name);
      if (outcome?.bestMs !== undefined && outcome.bestMs < best) {
        best = outcome.bestMs;
        fastest = candidate.name;
      }
    }
    const candidates = set.candidates.map((c) => ({ name: c.name, ...outcomes.get(c.name) }));
    if (fastest === undefined) {
      throw new AutotuneError(
        `autotune of "${set.name}" at ${key}: every candidate was rejected (` +
          candidates.map((c) => `${c.name}: ${c.rejected ?? (c.skipped === undefined ? "?" : `skipped (${c.skipped})`)}`).join("; ") +
          ")",
      );
    }
    const record: TuneRecord = { fastest, candidates };
    await this.cache.set(set.name, key, record);
    this.#onProgress?.({ kind: "done", set: set.name, key, fastest });
    return record;
  }

  /**
   * Runs `candidate` once and checks its output: for the reference, that it can be read back
   * (returned as `value` for the others); for the others, that it equals the reference's.
   */
  async #validate<I, O, V>(
    set: TunableSet<I, O, V, K>,
    candidate: Tunable<I, O, K>,
    inputs: I,
    client: Client<K>,
    expected: { value: V } | undefined,
  ): Promise<{ ok: true; value: V } | { ok: false; reason: string }> {
    const output = await candidate.run(inputs, client);
    try {
      await client.sync();
      const validation = set.validation;
      if (validation === undefined) return { ok: true, value: undefined as V };
      const value = await validation.read(output, client);
      if (expected !== undefined && !validation.equal(expected.value, value)) {
        return { ok: false, reason: `gave a wrong result (differs from the reference "${set.reference.name}")` };
      }
      return { ok: true, value };
    } finally {
      set.releaseOutput(output);
    }
  }

  /**
   * Warms `candidate` up: at least `warmups` runs and `warmupMs` (within {@link MAX_WARMUP_RUNS}),
   * each followed by a wait; returns how many runs one timing sample holds (`sampleMs` over the
   * last warmup run's time, within {@link MAX_RUNS_PER_SAMPLE}).
   */
  async #warm<I, O, V>(set: TunableSet<I, O, V, K>, candidate: Tunable<I, O, K>, inputs: I, client: Client<K>): Promise<number> {
    let last = Number.POSITIVE_INFINITY;
    const warmupStart = this.#now();
    for (let i = 0; i < MAX_WARMUP_RUNS && (i < this.#warmups || this.#now() - warmupStart < this.#warmupMs); i++) {
      const start = this.#now();
      const output = await candidate.run(inputs, client);
      await client.sync();
      last = this.#now() - start;
      set.releaseOutput(output);
    }
    return Math.min(MAX_RUNS_PER_SAMPLE, Math.max(1, Number.isFinite(last) && last > 0 ? Math.ceil(this.#sampleMs / last) : 1));
  }

  /**
   * One timing sample of `candidate`: `runs` runs back to back and one `client.sync()`; the time
   * per run. A candidate's time is its fastest sample's.
   *
   * @remarks
   * **Why the fastest sample.** A run's time is the kernel's plus whatever else the device did
   * meanwhile, and the rest only adds. On an H200 (Dawn/Vulkan, 2026-11-30), single runs of a 4096²
   * matmul kernel, each followed by a wait, took 4.2–4.6 ms with one in four at 17–41 ms, and a
   * wait alone costs 0.1–0.3 ms; back to back the kernel takes 3.2 ms. Timed one run per wait with
   * the median of 5, after two warmup runs that followed an idle wait, the tuner put that kernel at
   * 10.8–12.6 ms and chose one three times slower (and a 2048² kernel of 0.41 ms at 2.4 ms).
   * **Why interleaved** (round `r` times sample `r` of every candidate, not every sample of one
   * candidate in a row): what slows a stretch of time — garbage collection after a validation
   * read, another process, the GPU's clocks — then costs every candidate one sample instead of
   * costing one candidate all of them. On the H200, a validation that read 4096² outputs as
   * `number[]` set off hundreds of collections, and the candidate timed next measured 14–20 ms
   * for a 3.2–6.4 ms kernel (`readMatmulOutput` now reads typed arrays).
   */
  async #sample<I, O, V>(set: TunableSet<I, O, V, K>, candidate: Tunable<I, O, K>, inputs: I, client: Client<K>, runs: number): Promise<number> {
    const start = this.#now();
    for (let r = 0; r < runs; r++) set.releaseOutput(await candidate.run(inputs, client));
    await client.sync();
    return (this.#now() - start) / runs;
  }
}
