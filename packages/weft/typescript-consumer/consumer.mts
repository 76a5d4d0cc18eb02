// A consumer of the published types, typechecked (never run) by src/typescript.test.ts under the
// compiler settings the README documents: module resolution node16 and bundler, the lib with
// `esnext.disposable`. It imports the package by its name, as an installed dependency would.
import * as weft from "@weft/weft";
import type { DeviceChoice, Scope, Tensor } from "@weft/weft";

export async function consume(): Promise<number[]> {
  const device = await weft.init({ backend: "cpu", log: null });
  const choice: DeviceChoice = await weft.chooseDevice({ backend: "cpu" });
  using a = weft.tensor([[1, 2], [3, 4]]);
  const s: Tensor = weft.scalar(2, { dtype: "f32" });
  const total = await weft.scope(async (scope: Scope) => {
    const y = scope.track(weft.exp(a.mul(s)));
    const summed: Tensor = weft.sum(y, 0, { keepDims: true });
    return summed.data();
  });
  const kept = weft.keep(weft.zeros([2]));
  weft.dispose({ kept, s });
  const tasks = await Promise.all([1, 2].map((k) => weft.Stream.spawn(async () => a.mul(k).sum().item())));
  await a.print();
  const text: string = `${a}`;
  return [device.backend.length, choice.reason.length, ...Array.from(total), ...tasks.map(Number), text.length];
}
