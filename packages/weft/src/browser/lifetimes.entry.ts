/**
 * Lifetime scopes where no async context exists: headless Chromium has neither
 * `AsyncLocalStorage` nor `AsyncContext`, so `weft.scope` and `Stream.spawn` run on the
 * synchronous-only carrier. The page checks the documented fallback on the CPU backend: a scope
 * disposes what its synchronous segment created and what is handed to `scope.track`, leaves
 * untracked post-`await` creations alone, and never disposes another task's tensors. Bundled and
 * opened by `lifetimes-browser.test.ts` through `runInBrowser`.
 *
 * @module
 */
import { AsyncVariable, Stream } from "@weft/environment";
import { check, runRegisteredTests, test } from "@weft/browser-harness/page";
import { type Tensor, dispose, scope, setDevice, tensor, tidy } from "@weft/tensor";
import { createCpuDevice } from "../device/backends.js";
import { LIFETIME_TESTS } from "./suite.js";

const device = createCpuDevice();
setDevice(device);
const tick = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));
/** Read through a call, so a `check` (an assertion) on an earlier state does not narrow the next. */
const isDisposed = (t: Tensor | undefined): boolean => t?.disposed === true;

test(LIFETIME_TESTS[0], () => {
  check(
    AsyncVariable.carrier === "synchronous" && !Stream.asyncScopesSupported,
    `this page expects the synchronous-only carrier, got ${AsyncVariable.carrier}; if Chromium gained AsyncContext, make the page check the durable rules instead`,
  );
});

test(LIFETIME_TESTS[1], async () => {
  let early: Tensor | undefined;
  let tracked: Tensor | undefined;
  let untracked: Tensor | undefined;
  const result = await scope(async (s) => {
    early = tensor([1, 2]).mul(2);
    await tick();
    tracked = s.track(tidy(() => tensor([3]).add(1))); // tidy frees the intermediate, track takes the result
    untracked = tensor([4]);
    return early.sum();
  });
  check((await result.item()) === 6, "the scope's result is kept and right");
  check(isDisposed(early), "created before the first await: disposed with the scope");
  check(isDisposed(tracked), "handed to scope.track after an await: disposed with the scope");
  check(!isDisposed(untracked), "created after an await and not tracked: not the scope's (documented)");
  dispose([result, untracked]);
});

test(LIFETIME_TESTS[2], async () => {
  const gate = { a: tick(), b: tick() };
  let mineA: Tensor | undefined;
  let mineB: Tensor | undefined;
  const a = scope(async () => {
    mineA = tensor([1]);
    await gate.a;
  });
  const b = scope(async () => {
    mineB = tensor([2]);
    await gate.b;
    await tick();
    await tick();
  });
  await a;
  check(isDisposed(mineA), "scope A disposed its own tensor");
  check(!isDisposed(mineB), "scope B, still running, lost nothing to A");
  await b;
  check(isDisposed(mineB), "scope B disposed its own tensor when it settled");
});

test(LIFETIME_TESTS[3], async () => {
  let made: Tensor | undefined;
  const total = await Stream.spawn(async () => {
    made = tensor([1, 2, 3]);
    return made.sum();
  });
  check((await total.item()) === 6, "the task's result is right");
  check(isDisposed(made), "what the task created synchronously is disposed when it settles");
  total.dispose();
});

test(LIFETIME_TESTS[4], async () => {
  await device.syncAll();
  const m = device.memory();
  check(m.liveTensors === 0 && m.liveHandles === 0, `${m.liveTensors} tensors and ${m.liveHandles} handles still alive`);
});

await runRegisteredTests();
