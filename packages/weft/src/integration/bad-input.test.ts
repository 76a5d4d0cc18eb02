/**
 * Every public entry point of `weft` with bad arguments, on the CPU backend and on WebGPU (issue 9,
 * docs/design.md#errors): a typed error at the call that names the op and the fix, with every
 * piece of state as it was — `memory()`, the pending work of every stream, the current device,
 * the stream policy — and nothing leaked. The table lives in `@weft/tensor/testing`
 * (`bad-input.ts`); `weft`'s own entry points (`init`, …) add their rows here. A last test checks
 * that every exported function and every `Tensor` method is in the table, so a new entry point
 * cannot skip it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BadInputCase, type BadInputEnv, badInputCases, createBadInputEnv, disposeBadInputEnv, environmentBadInputCases, runBadInputCase } from "@weft/tensor/testing";
import { ValueError, getStreamPolicy } from "@weft/environment";
import { type Device, Tensor, setDevice, tryDevice } from "@weft/tensor";
import * as weft from "../index.js";
import { createCpuDevice, createWebGpuDevice } from "../device/backends.js";
import { chooseDevice, init } from "../device/init.js";
import { warmup } from "../device/warmup.js";
import { BACKENDS, inspectorOf, settle, snapshot } from "./harness.js";

/** `weft`'s own entry points. */
function weftRows(): BadInputCase[] {
  const any = (v: unknown): never => v as never;
  return [
    { entry: "init", what: "an unknown backend", call: () => init({ backend: any("metal"), log: null }), error: ValueError, mentions: ['"metal"', '"webgpu"', '"cpu"'] },
    { entry: "init", what: "options is a string", call: () => init(any("cpu")), error: ValueError },
    { entry: "init", what: "a misspelt option", call: () => init(any({ backend: "cpu", logs: null })), error: ValueError, mentions: ['"logs"'] },
    { entry: "init", what: "probe is not a function", call: () => init({ probe: any(true), log: null }), error: ValueError },
    { entry: "chooseDevice", what: "a misspelt option", call: () => chooseDevice(any({ backnd: "cpu" })), error: ValueError },
    { entry: "createCpuDevice", what: "fusion is a string", call: () => createCpuDevice({ fusion: any("yes") }), error: ValueError },
    { entry: "createCpuDevice", what: "options is a number", call: () => createCpuDevice(any(1)), error: ValueError },
    { entry: "createWebGpuDevice", what: "a misspelt option", call: () => createWebGpuDevice(any({ fusoin: false })), error: ValueError },
    { entry: "warmup", what: "fn is a string", call: () => warmup(any("f")), error: ValueError },
    { entry: "init", what: "memoryLimit is not a positive integer", call: () => init({ backend: "cpu", memoryLimit: -5, log: null }), error: ValueError, mentions: ["memoryLimit"] },
    { entry: "init", what: "memoryLimit with the remote backend", call: () => init({ backend: "remote", url: "ws://127.0.0.1:1", memoryLimit: 1024, log: null }), error: ValueError, mentions: ["--max-session-bytes"] },
    { entry: "init", what: "an unknown previous", call: () => init({ backend: "cpu", previous: any("drop"), log: null }), error: ValueError, mentions: ['"drop"'] },
    { entry: "init", what: "url without the remote backend", call: () => init({ backend: "cpu", url: "ws://127.0.0.1:1", log: null }), error: ValueError },
    { entry: "init", what: "a remote url that is not ws://", call: () => init({ backend: "remote", url: "http://x", log: null }), error: ValueError, mentions: ['"http://x"'] },
    { entry: "init", what: "a misspelt remote option", call: () => init({ backend: "remote", url: "ws://127.0.0.1:1", remote: any({ timeout: 5 }), log: null }), error: ValueError, mentions: ['"timeout"'] },
    { entry: "init", what: "planCache with the remote backend", call: () => init({ backend: "remote", url: "ws://127.0.0.1:1", planCache: true, log: null }), error: ValueError, mentions: ["planCache"] },
    { entry: "createCpuDevice", what: "planCache is a string", call: () => createCpuDevice({ planCache: any("/tmp") }), error: ValueError },
    { entry: "createCpuDevice", what: "memoryLimit is a string", call: () => createCpuDevice({ memoryLimit: any("1GB") }), error: ValueError },
    { entry: "createWebGpuDevice", what: "memoryLimit is zero", call: () => createWebGpuDevice({ memoryLimit: 0 }), error: ValueError },
    { entry: "createRemoteDevice", what: "no url", call: () => weft.createRemoteDevice(any({ token: "t" })), error: ValueError },
    { entry: "createRemoteDevice", what: "a timeout that is not a number", call: () => weft.createRemoteDevice({ url: "ws://127.0.0.1:1", token: "t", timeoutMs: any("5s") }), error: ValueError },
    { entry: "RemoteDevice", what: "constructed without a runtime", call: () => new weft.RemoteDevice(any(undefined)), error: ValueError, op: "new RemoteDevice" },
    // ── gradients and optimizers (@weft/autodiff) ────────────────────────────────────────────
    { entry: "grad", what: "f is not a function", call: () => weft.grad(any(1)), error: ValueError },
    { entry: "grad", what: "a misspelt option", call: () => weft.grad((x: weft.Tensor) => x, any({ argnum: 1 })), error: ValueError, mentions: ['"argnum"'] },
    { entry: "valueAndGrad", what: "a negative argnum", call: () => weft.valueAndGrad((x: weft.Tensor) => x, { argnums: any(-1) }), error: ValueError },
    { entry: "valueAndGrad", what: "hasAux is a string", call: () => weft.valueAndGrad((x: weft.Tensor) => x, { hasAux: any("yes") }), error: ValueError },
    { entry: "stopGradient", what: "a string in the tree", call: () => weft.stopGradient(any(["x"])), error: ValueError },
    { entry: "optim.sgd", what: "no learning rate", call: () => weft.optim.sgd(any(undefined)), error: ValueError, op: "sgd" },
    { entry: "optim.sgd", what: "nesterov is a string", call: () => weft.optim.sgd({ lr: 0.1, nesterov: any("yes") }), error: ValueError, op: "sgd" },
    { entry: "optim.adam", what: "a misspelt option", call: () => weft.optim.adam(any({ learningRate: 0.1 })), error: ValueError, op: "adam", mentions: ['"learningRate"'] },
    { entry: "optim.adamw", what: "beta1 of 1", call: () => weft.optim.adamw({ beta1: 1 }), error: ValueError, op: "adamw" },
    { entry: "Sgd", what: "a negative learning rate", call: () => new weft.Sgd({ lr: -1 }), error: ValueError, op: "sgd" },
    { entry: "Adam", what: "options is a number", call: () => new weft.Adam(any(1), false), error: ValueError, op: "adam" },
  ];
}

/** Every row, with the `needsForeign` ones kept only when a second device exists. */
function allRows(): BadInputCase[] {
  return [...badInputCases(), ...environmentBadInputCases(), ...weftRows()];
}

describe.each(BACKENDS)("bad input on $name: a typed error at the call, state intact", (backend) => {
  let device: Device;
  let other: Device;
  let env: BadInputEnv;
  let previous: Device | undefined;

  beforeAll(async () => {
    device = await backend.create();
    other = createCpuDevice();
    previous = setDevice(device);
    env = createBadInputEnv(device, other);
    await device.syncAll();
  }, 120_000);
  afterAll(async () => {
    disposeBadInputEnv(env);
    expect(await settle(device, snapshot(device).bytesInUse).then((p) => p.filter((l) => !l.startsWith("bytesInUse"))), "the table leaked nothing").toEqual([]);
    await other.syncAll();
    expect(other.memory().liveTensors, "nothing leaked on the second device").toBe(0);
    setDevice(previous);
  }, 120_000);

  /** Everything a rejected call must leave as it was. */
  const probe = (): unknown => ({
    memory: snapshot(device),
    queues: [...inspectorOf(device).queueLengths()],
    other: snapshot(other),
    current: tryDevice() === device,
    policy: getStreamPolicy(),
  });

  for (const c of allRows()) {
    it(`${c.entry}: ${c.what}`, async () => {
      expect(await runBadInputCase(c, env, probe)).toBeUndefined();
    });
  }
});

describe("the bad-input table covers the public API", () => {
  /**
   * Entry points that take no argument a caller could get wrong: none at all, or any value by
   * design (`keep`/`dispose` take any structure and skip what is not a tensor).
   */
  const ARGUMENT_FREE = new Set([
    "device", "tryDevice", "memory", "sync", "syncAll", "getStreamPolicy", "probeAdapter",
    "StreamId.current", "StreamId.allocate", "keep", "dispose", "stats", "releaseUnused",
    // The optimizers' abstract base: constructed only through optim.sgd/adam/adamw (rows above).
    "Optimizer",
    "Tensor.dispose", "Tensor.toString", "Tensor.wrap",
  ]);

  it("every exported function and namespace member has a row (or takes no argument)", () => {
    const entries = new Set(allRows().map((r) => r.entry));
    const missing: string[] = [];
    for (const [name, value] of Object.entries(weft)) {
      if (typeof value === "function") {
        if (value.prototype instanceof Error || value === Error) continue; // the error family
        if (value === Tensor) continue; // its methods are checked below
        if (!entries.has(name) && !ARGUMENT_FREE.has(name)) missing.push(name);
      } else if (typeof value === "object" && value !== null) {
        for (const [member, m] of Object.entries(value)) {
          const qualified = `${name}.${member}`;
          if (typeof m === "function" && !entries.has(qualified) && !ARGUMENT_FREE.has(qualified)) missing.push(qualified);
        }
      }
    }
    expect(missing, "exported functions without a bad-input row").toEqual([]);
  });

  it("every Tensor method has a row (or takes no argument)", () => {
    const entries = new Set(allRows().map((r) => r.entry));
    const missing: string[] = [];
    for (const name of Object.getOwnPropertyNames(Tensor.prototype)) {
      const descriptor = Object.getOwnPropertyDescriptor(Tensor.prototype, name);
      if (name === "constructor" || typeof descriptor?.value !== "function") continue;
      const qualified = `Tensor.${name}`;
      if (!entries.has(qualified) && !ARGUMENT_FREE.has(qualified)) missing.push(qualified);
    }
    expect(missing, "Tensor methods without a bad-input row").toEqual([]);
  });
});
