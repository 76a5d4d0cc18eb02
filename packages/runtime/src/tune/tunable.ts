/**
 * Tunables and tunable sets: the candidates autotune chooses between.
 *
 * @module
 */
import type { KernelDefinition } from "@weft/server";
import type { Client } from "../client/client.js";
import type { AutotuneKey } from "./autotune-key.js";
import { AutotuneError } from "./errors.js";

/**
 * One way of computing a tunable operation (a matmul tiling, a reduce strategy).
 *
 * @remarks
 * **Contract.** `run` launches its kernels through the `client` it is given — under measurement
 * that is the client a `StreamModeOverride('execute', …)` switched, so its launches run even under
 * `'compile-and-autotune'` — and returns its output. It may throw (a shader the device rejects);
 * a candidate that throws or rejects is never chosen.
 */
export interface Tunable<I, O, K extends KernelDefinition = KernelDefinition> {
  /** A stable name: what persisted results refer to (indices change between releases). */
  readonly name: string;
  run(inputs: I, client: Client<K>): O | Promise<O>;
}

/**
 * How a set checks a candidate's output against its reference's: `read` brings an output back
 * (after the measurement stream's sync), `equal` compares (within the set's tolerance).
 */
export interface TunableValidation<O, V, K extends KernelDefinition = KernelDefinition> {
  read(output: O, client: Client<K>): Promise<V>;
  equal(expected: V, actual: V): boolean;
}

/** What a {@link TunableSet} is built from. */
export interface TunableSetOptions<I, O, V = unknown, K extends KernelDefinition = KernelDefinition> {
  /** The kernel family's name (`"matmul"`): part of every cache key. Stable across releases. */
  readonly name: string;
  /** The candidates, at least one, with distinct names. */
  readonly candidates: ReadonlyArray<Tunable<I, O, K>>;
  /** The key of a call, from the inputs' shapes and dtypes (see `AutotuneKey.of`). */
  readonly key: (inputs: I) => AutotuneKey;
  /** The reference candidate's name: the one every other is validated against. Default: the first. */
  readonly reference?: string;
  /** What `Tuner.choose` returns before tuning finished. Default: the reference. */
  readonly fallback?: string;
  /**
   * How outputs are validated. Without it a candidate is judged only on running without an error
   * — use that only where every candidate computes bit-identical results by construction.
   */
  readonly validation?: TunableValidation<O, V, K>;
  /**
   * Makes the inputs a measurement uses: called synchronously where tuning starts (inside
   * `Tuner.choose`, while the caller's inputs are alive), e.g. copies, so background tuning never
   * depends on buffers the caller frees, and in-place candidates never clobber the caller's data.
   * Default: the caller's inputs themselves (they must then outlive the tuning).
   */
  readonly prepare?: (inputs: I) => I;
  /** Releases inputs {@link prepare} made, once tuning is over. */
  readonly releaseInputs?: (inputs: I) => void;
  /** Releases an output produced during measurement (every run's output is passed here once). */
  readonly releaseOutput?: (output: O) => void;
  /**
   * Why `candidate` is not measured for these inputs (`undefined`: it is). A tuning compiles,
   * validates and times every candidate, and a candidate that cannot win for a problem's shape
   * (a matmul tile many times the output) costs its compile all the same. Never asked about the
   * reference, which every tuning measures (the others are validated against it). CubeCL's
   * per-key candidate priorities play this part.
   */
  readonly skip?: (candidate: Tunable<I, O, K>, inputs: I) => string | undefined;
}

/**
 * The candidates of one tunable operation, how a call is keyed, and how results are validated:
 * what a `Tuner` measures (CubeCL's `TunableSet`).
 *
 * @remarks
 * **Invariants.** At least one candidate; names are distinct; `reference` and `fallback` name
 * candidates of the set. Checked at construction ({@link AutotuneError} naming the set).
 */
export class TunableSet<I, O, V = unknown, K extends KernelDefinition = KernelDefinition> {
  readonly name: string;
  readonly candidates: ReadonlyArray<Tunable<I, O, K>>;
  readonly reference: Tunable<I, O, K>;
  readonly fallback: Tunable<I, O, K>;
  readonly validation: TunableValidation<O, V, K> | undefined;
  readonly #options: TunableSetOptions<I, O, V, K>;

  /** @throws AutotuneError when the set is malformed (see the type doc). */
  constructor(options: TunableSetOptions<I, O, V, K>) {
    const names = options.candidates.map((c) => c.name);
    if (names.length === 0) {
      throw new AutotuneError(`tunable set "${options.name}" has no candidates; give it at least one`);
    }
    const duplicate = names.find((n, i) => names.indexOf(n) !== i);
    if (duplicate !== undefined) {
      throw new AutotuneError(
        `tunable set "${options.name}": candidate name "${duplicate}" is used twice; names identify persisted results, make them distinct`,
      );
    }
    this.#options = options;
    this.name = options.name;
    this.candidates = options.candidates;
    this.reference = this.#named(options.reference, "reference") ?? (options.candidates[0] as Tunable<I, O, K>);
    this.fallback = this.#named(options.fallback, "fallback") ?? this.reference;
    this.validation = options.validation;
  }

  /** The candidate called `name`, if the set has one. */
  candidate(name: string): Tunable<I, O, K> | undefined {
    return this.candidates.find((c) => c.name === name);
  }

  /** The key of a call with `inputs`. */
  key(inputs: I): AutotuneKey {
    return this.#options.key(inputs);
  }

  /** The inputs a measurement uses (see {@link TunableSetOptions.prepare}). */
  prepare(inputs: I): I {
    return this.#options.prepare ? this.#options.prepare(inputs) : inputs;
  }

  /** Releases prepared inputs (a no-op without `prepare`). */
  releaseInputs(inputs: I): void {
    if (this.#options.prepare) this.#options.releaseInputs?.(inputs);
  }

  /** Releases a measurement output. */
  releaseOutput(output: O): void {
    this.#options.releaseOutput?.(output);
  }

  /** Why `candidate` is not measured for `inputs` ({@link TunableSetOptions.skip}); never for the reference. */
  skipped(candidate: Tunable<I, O, K>, inputs: I): string | undefined {
    return candidate === this.reference ? undefined : this.#options.skip?.(candidate, inputs);
  }

  #named(name: string | undefined, role: string): Tunable<I, O, K> | undefined {
    if (name === undefined) return undefined;
    const found = this.#options.candidates.find((c) => c.name === name);
    if (found === undefined) {
      throw new AutotuneError(
        `tunable set "${this.#options.name}": its ${role} "${name}" is not one of its candidates ` +
          `(${this.#options.candidates.map((c) => c.name).join(", ")})`,
      );
    }
    return found;
  }
}
