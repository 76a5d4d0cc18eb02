/**
 * Pytrees: a tensor, or arrays and plain objects of them to any depth — the structures `grad`
 * differentiates with respect to and the optimizers update. Flattening gives the tensors (the
 * leaves) in a fixed order plus a path for each (for messages); rebuilding puts new leaves into
 * the same structure.
 *
 * @remarks
 * **What counts.** Arrays and plain objects (prototype `Object.prototype` or `null`) are entered;
 * their keys are taken in `Object.keys` order. `null` and `undefined` are empty subtrees (kept
 * as they are, as JAX treats `None`). Anything else — numbers, strings, class instances other
 * than `Tensor` — is refused with a `ValueError` naming its path, so a gradient never silently
 * skips part of a structure.
 *
 * @module
 */
import { Tensor, ValueError } from "@weft/tensor";

/**
 * A tensor, or arrays and plain objects of tensors (and `null`/`undefined`) to any depth. The type
 * admits any object (so interfaces and classes of parameters type-check); what a tree may hold is
 * checked when it is flattened (see the module doc).
 */
export type Tree = Tensor | null | undefined | object;

/** A flattened tree: its tensors in order, their paths, and how to rebuild it with new leaves. */
export interface FlatTree {
  /** The tensors, depth first, keys in `Object.keys` order. */
  readonly leaves: readonly Tensor[];
  /** Where each leaf sits, e.g. `params.layers[0].w` (same order as `leaves`). */
  readonly paths: readonly string[];
  /** The same structure with `leaves[i]` replaced by `values[i]` (new arrays and objects). */
  rebuild<T>(values: readonly T[]): unknown;
}

/** The structure of a tree without its leaves: what `rebuild` walks. */
type Shape = { readonly kind: "leaf" } | { readonly kind: "empty"; readonly value: null | undefined } | { readonly kind: "array"; readonly items: readonly Shape[] } | { readonly kind: "object"; readonly keys: readonly string[]; readonly items: readonly Shape[] };

function isPlainObject(value: object): boolean {
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Flattens `value` (see the module doc), naming it `root` in paths and messages.
 * @throws ValueError naming `op` and the path of the first value that is not a tensor, an array,
 *   a plain object, `null` or `undefined`, or of a cycle.
 */
export function flattenTree(op: string, value: unknown, root: string): FlatTree {
  const leaves: Tensor[] = [];
  const paths: string[] = [];
  const active = new Set<object>();
  const walk = (v: unknown, path: string): Shape => {
    if (v instanceof Tensor) {
      leaves.push(v);
      paths.push(path);
      return { kind: "leaf" };
    }
    if (v === null || v === undefined) return { kind: "empty", value: v };
    if (typeof v !== "object" || !(Array.isArray(v) || isPlainObject(v))) {
      throw new ValueError(op, `${path} is ${describe(v)}; a tree holds tensors in arrays and plain objects only (pass other values through a closure)`);
    }
    if (active.has(v)) throw new ValueError(op, `${path} refers back to one of its ancestors; a tree cannot contain a cycle`);
    active.add(v);
    try {
      if (Array.isArray(v)) return { kind: "array", items: v.map((item: unknown, i) => walk(item, `${path}[${i}]`)) };
      const keys = Object.keys(v);
      return { kind: "object", keys, items: keys.map((k) => walk((v as Record<string, unknown>)[k], `${path}.${k}`)) };
    } finally {
      active.delete(v);
    }
  };
  const shape = walk(value, root);
  return {
    leaves,
    paths,
    rebuild<T>(values: readonly T[]): unknown {
      let next = 0;
      const build = (s: Shape): unknown => {
        switch (s.kind) {
          case "leaf":
            return values[next++];
          case "empty":
            return s.value;
          case "array":
            return s.items.map(build);
          case "object": {
            const out: Record<string, unknown> = {};
            s.items.forEach((item, i) => {
              out[s.keys[i] as string] = build(item);
            });
            return out;
          }
          default:
            return s satisfies never;
        }
      };
      return build(shape);
    },
  };
}

/**
 * The first leaf path where two flattened trees differ in structure (nesting, keys, leaf
 * positions), or `undefined` when they match. Paths are compared below their roots, which may be
 * named differently (`params`, `grads`).
 */
export function treeMismatch(a: FlatTree, b: FlatTree): string | undefined {
  const below = (path: string): string => path.replace(/^[^.[]*/, "");
  const n = Math.max(a.paths.length, b.paths.length);
  for (let i = 0; i < n; i++) {
    const pa = a.paths[i];
    const pb = b.paths[i];
    if (pa === undefined || pb === undefined) return pa ?? pb;
    if (below(pa) !== below(pb)) return pa;
  }
  return undefined;
}

function describe(v: unknown): string {
  if (typeof v === "object" && v !== null) return `an instance of ${(v as object).constructor?.name ?? "an unknown class"}`;
  return `a ${typeof v} (${String(v)})`;
}
