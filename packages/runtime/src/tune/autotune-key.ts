/**
 * Autotune keys: what makes two calls of one tunable kernel "the same problem".
 *
 * @module
 */

/**
 * The key one tuning result is stored under, within one {@link TunableSet}: a canonical string
 * built from the inputs' shapes and dtypes (and any parameter that changes which candidate wins).
 *
 * @remarks
 * **Why branded.** A key is a canonical form, not any string: building it through
 * {@link AutotuneKey.of} keeps the format (and so the persisted cache) stable.
 * **Invariant.** Equal problems give equal keys; tensor ids, buffer identities and values never
 * appear in a key.
 */
export type AutotuneKey = string & { readonly __brand: "AutotuneKey" };

/** What an {@link AutotuneKey} is built from. */
export interface AutotuneKeyParts {
  /** The inputs' shapes, in input order. */
  readonly shapes: ReadonlyArray<readonly number[]>;
  /** The inputs' dtypes, in input order. */
  readonly dtypes: readonly string[];
  /** Other parameters that change the winner (transposition, a reduce axis); sorted by name. */
  readonly extra?: Readonly<Record<string, string | number | boolean>>;
  /**
   * Round every dimension up to a power of two (CubeCL's `anchor`), so nearby sizes share one
   * result instead of tuning each size anew. Default `false`: exact shapes.
   */
  readonly anchor?: boolean;
}

/** Functions over {@link AutotuneKey}. */
export const AutotuneKey = {
  /** The canonical key of `parts` (see {@link AutotuneKeyParts}). */
  of(parts: AutotuneKeyParts): AutotuneKey {
    const dim = parts.anchor === true ? AutotuneKey.anchor : (n: number) => n;
    const shapes = parts.shapes.map((shape) => shape.map(dim).join("x")).join(",");
    const extra = Object.entries(parts.extra ?? {})
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, value]) => `;${name}=${String(value)}`)
      .join("");
    return `shapes=[${shapes}];dtypes=[${parts.dtypes.join(",")}]${extra}` as AutotuneKey;
  },

  /** The smallest power of two ≥ `n` (`n` itself for 0 and 1). */
  anchor(n: number): number {
    if (n <= 1) return n;
    return 2 ** Math.ceil(Math.log2(n));
  },

  /** Wraps a key a backend already built canonically (e.g. from relative IR). */
  raw(key: string): AutotuneKey {
    return key as AutotuneKey;
  },
};
