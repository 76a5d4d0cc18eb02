/**
 * Which way the CPU backend runs fused elementwise blocks: JavaScript generated per block
 * structure (`new Function`), or the interpreter where code generation is not allowed.
 *
 * @module
 */
import { UnsupportedError } from "@weft/environment";

/**
 * How elementwise programs run.
 * - `generated`: each program structure is compiled once into a straight-line loop over typed
 *   arrays (`elementwise-codegen.ts`); the fast path.
 * - `interpreted`: each element walks the program's steps through closures
 *   (`elementwise-interpreter.ts`); for pages whose Content-Security-Policy forbids
 *   `'unsafe-eval'`, where `new Function` throws.
 *
 * Both evaluate the same scalar functions (`numerics/scalar-ops.ts`) and round at the same points,
 * so they agree bit for bit.
 */
export type KernelPath = "generated" | "interpreted";

/** What a runtime is asked for: a {@link KernelPath}, or `auto` (generated where allowed). */
export type KernelPathChoice = KernelPath | "auto";

/** Whether code generation works here: `undefined` until first asked, then fixed for the process. */
let codegenAllowed: { readonly allowed: boolean; readonly reason: string } | undefined;

/**
 * Whether this JavaScript realm lets the backend generate code, and why not. Detected once, by
 * compiling and running a one-line function: a strict Content-Security-Policy (no
 * `'unsafe-eval'`) makes `new Function` throw an `EvalError`.
 */
export function codeGeneration(): { readonly allowed: boolean; readonly reason: string } {
  if (codegenAllowed === undefined) {
    try {
      const probe = new Function("a", "return a + 1;") as (a: number) => number;
      codegenAllowed = probe(1) === 2 ? { allowed: true, reason: "new Function is allowed" } : { allowed: false, reason: "new Function returned a wrong result" };
    } catch (error) {
      codegenAllowed = { allowed: false, reason: `new Function is refused (${error instanceof Error ? error.name : "error"}: a Content-Security-Policy without 'unsafe-eval')` };
    }
  }
  return codegenAllowed;
}

/**
 * The path a runtime asked for `choice` takes.
 * @throws UnsupportedError for `generated` where code generation is refused.
 */
export function resolveKernelPath(choice: KernelPathChoice): KernelPath {
  switch (choice) {
    case "auto":
      return codeGeneration().allowed ? "generated" : "interpreted";
    case "generated": {
      const { allowed, reason } = codeGeneration();
      if (!allowed) throw new UnsupportedError("generated CPU kernels", `${reason}; use kernels: "auto" or "interpreted"`);
      return "generated";
    }
    case "interpreted":
      return "interpreted";
    default:
      return choice satisfies never;
  }
}
