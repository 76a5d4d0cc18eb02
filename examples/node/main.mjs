// @ts-check
// Weft in Node: pick a device, record ops lazily (they fuse into few kernels), read results,
// manage lifetimes, and run concurrent tasks on their own streams.
//
//   npm install @weft/weft            # CPU backend (small install)
//   npm install @weft/weft webgpu     # add Dawn for WebGPU in Node (about 130 MB)
//   node main.mjs                     # WEFT_BACKEND=cpu|webgpu|auto picks the backend (default auto)
import * as weft from "@weft/weft";

const backend = /** @type {"auto" | "cpu" | "webgpu"} */ (process.env.WEFT_BACKEND ?? "auto");
// Prints one line: which backend and why ("weft: using cpu (no WebGPU adapter: …)").
const device = await weft.init({ backend });

// Ops are recorded, not run: this whole chain becomes one fused kernel when it is read. Every op
// returns a new tensor; tidy() disposes the intermediates (ones, add, mul, exp) and keeps `b`.
const a = weft.tensor([[1, 2], [3, 4]]);
const b = weft.tidy(() => weft.ones([2, 2]).add(a).mul(3).exp().log()); // = 3 * (1 + a)
console.log("chain:", await b.array()); // [[6, 9], [12, 15]] (within f32 rounding)

// Reductions, matmul, broadcasting.
const { product, rowSums, probabilities } = weft.tidy(() => {
  const x = weft.arange(0, 6).reshape([2, 3]);
  const w = weft.tensor([[1], [0], [-1]]);
  return { product: x.matmul(w), rowSums: x.sum(1), probabilities: weft.zeros([4]).softmax() };
});
console.log("x @ w:", await product.array()); // [[-2], [-2]]
console.log("row sums:", await rowSums.array()); // [3, 12]
console.log("softmax:", [...(await probabilities.data())]); // four 0.25s

// Lifetimes: tidy disposes everything created inside except what it returns; dispose() by hand
// otherwise (in TypeScript, `using t = …` disposes at the end of the block; Node 20 has no `using`).
const normalized = weft.tidy(() => {
  const v = weft.tensor([3, 4]);
  return v.div(v.square().sum().sqrt()); // the temporaries (square, sum, sqrt) are disposed here
});
console.log("normalized:", [...(await normalized.data())]); // [0.6, 0.8]
const samples = weft.rand([1000], { seed: 7 });
const mean = weft.tidy(() => samples.mean());
console.log("mean of 1000 uniform samples:", Number(await mean.item()).toFixed(2)); // about 0.5
samples.dispose();
mean.dispose();

// Concurrent tasks on their own streams: with the per-task policy every Stream.spawn gets a fresh
// stream, so one task's pending work never waits for or reorders another's. Tensors are shared
// across streams safely (here `shared`, created on the root stream).
weft.setStreamPolicy("per-task");
const shared = weft.linspace(0, 1, 5);
const results = await Promise.all(
  [1, 2, 3].map((k) =>
    weft.Stream.spawn(async () => {
      const stream = weft.StreamId.current();
      const y = weft.tidy(() => shared.mul(k).add(k));
      const values = [...(await y.data())];
      y.dispose();
      return { k, stream, values };
    }),
  ),
);
for (const r of results) console.log(`task ${r.k} on stream ${r.stream}:`, r.values);

// Everything is disposed: nothing is left on the device.
for (const t of [a, b, product, rowSums, probabilities, normalized, shared]) t.dispose();
await weft.syncAll();
console.log("live tensors at the end:", weft.memory().liveTensors, `(${device.backend})`);
