/**
 * The functional forms: at compile time, every tensor-returning `Tensor` method has a functional
 * form among the package's exports taking the tensor first and then the method's arguments (so a
 * new method without one fails the typecheck); at run time, each generated form calls its method
 * with the same arguments and returns what it returns, and refuses a non-tensor first argument.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import * as api from "../index.js";
import { Device } from "../device/device.js";
import type { FusionClient, FusionTensor } from "@weft/fusion";
import { ValueError } from "../errors/tensor-errors.js";
import { Tensor } from "../tensor/tensor.js";
import * as generated from "./functional.js";
import type { TensorMethodName } from "./functional.js";

/** Methods whose by-name free function keeps the op (or the list) first, as NumPy does. */
type OpFirst = "unary" | "binary" | "concat";
type Api = typeof api;
/** Method names without an export of the same name. */
type Missing = Exclude<TensorMethodName, keyof Api>;
/** Method names whose export does not accept `(x, ...the method's arguments)`. */
type Mismatched = {
  [K in Exclude<TensorMethodName, OpFirst>]: K extends keyof Api
    ? Api[K] extends (...args: infer P) => unknown
      ? [Tensor, ...Parameters<Tensor[K]>] extends P
        ? never
        : K
      : K
    : never;
}[Exclude<TensorMethodName, OpFirst>];
// A compile error here names the methods without a functional form, or with one that does not fit.
const complete: [Missing | Mismatched] extends [never] ? true : { missingOrMismatched: Missing | Mismatched } = true;

/** The generated forms: every export of functional.ts but the generator itself. */
const forms = Object.entries(generated).filter(([name]) => name !== "functional") as [TensorMethodName, (x: Tensor, ...args: unknown[]) => unknown][];

function stubTensor(): Tensor {
  const inner = { shape: [2], dtype: "f32", disposed: false } as unknown as FusionTensor;
  // A stub fusion device: the forms are spied on, nothing is recorded (`new Device` checks `register`).
  return Tensor.wrap(inner, new Device({ register: () => undefined, runtime: { name: "stub", capabilities: { dtypes: ["f32"], reads: "async" } } } as unknown as FusionClient));
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("functional forms", () => {
  it("cover every tensor-returning method (checked by the compiler)", () => {
    expect(complete).toBe(true);
    expect(forms.length, "the generated list").toBeGreaterThan(30);
  });

  it.each(forms)("%s(x, …args) calls x.%s(…args) and returns its result", (name, form) => {
    const x = stubTensor();
    const result = Symbol("result");
    const spy = vi.spyOn(Tensor.prototype, name as "exp").mockImplementation(function (this: Tensor) {
      expect(this, "called on the tensor passed first").toBe(x);
      return result as never;
    });
    const args = [1, { keepDims: true }];
    expect(form(x, ...args), "returns the method's result").toBe(result);
    expect(spy).toHaveBeenCalledWith(...args);
    expect(form.name, "the form is named after its method").toBe(name);
    expect(api[name as keyof typeof api], "exported from the package").toBe(form);
  });

  it("refuses a first argument that is not a tensor, naming the function and the fix", () => {
    expect(() => (generated.exp as (x: unknown) => unknown)(3)).toThrow(ValueError);
    expect(() => (generated.sum as (x: unknown) => unknown)([1, 2])).toThrow(/sum: expects a Tensor as its first argument, got an array of length 2; pass the tensor first: weft\.sum\(x, …\)/);
  });
});
