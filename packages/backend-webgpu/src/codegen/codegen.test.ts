import type { TensorId, TensorIr } from "@weft/fusion";
import { describe, expect, it } from "vitest";
import { BlockGraph } from "../fusion/block-graph.js";
import { elementwiseKernel, elementwiseUniforms } from "../kernels/elementwise.js";
import { matmulKernel } from "../kernels/matmul.js";
import { reducePassKernel } from "../kernels/reduce.js";
import { deviceProfile } from "./wgsl/types.js";

const profile = deviceProfile(
  { maxComputeInvocationsPerWorkgroup: 128, maxComputeWorkgroupSizeX: 128, maxComputeWorkgroupsPerDimension: 65535, maxStorageBuffersPerShaderStage: 8, maxComputeWorkgroupStorageSize: 16384 },
  new Set<string>(),
  64,
);
const t = (id: number, shape: number[], status: TensorIr["status"] = "ReadOnly"): TensorIr => ({ id: id as TensorId, shape, dtype: "f32", status });
const dense = (shape: number[]) => ({ shape, strides: shape.map((_, d) => shape.slice(d + 1).reduce((a, b) => a * b, 1)), offset: 0 });

describe("generated WGSL", () => {
  it("a fused chain with a broadcast input hoists shared subexpressions and emits gelu's helper once", () => {
    const block = new BlockGraph();
    block.add({ kind: "binary", op: "add", lhs: t(1, [2, 4]), rhs: t(2, [4]), out: t(3, [2, 4]) });
    block.add({ kind: "unary", op: "gelu", input: t(3, [2, 4], "ReadWrite"), out: t(4, [2, 4]) });
    block.add({ kind: "binary", op: "mul", lhs: t(4, [2, 4], "ReadWrite"), rhs: t(1, [2, 4]), out: t(5, [2, 4]) });
    const plan = elementwiseKernel(
      {
        shape: [2, 4],
        graph: block.graph,
        label: "add+gelu+mul",
        inputs: [
          { dtype: "f32", access: "read", layout: dense([2, 4]) },
          { dtype: "f32", access: "read", layout: dense([4]) },
        ],
        outputs: block.written().map((o) => ({ node: o.node, dtype: "f32" as const })),
      },
      profile,
    );
    expect(block.elided(), "t3 and t4 die inside the block").toBe(2);
    expect(plan.kernel.source).toMatchInlineSnapshot(`
      "fn weft_nonfinite(bits: u32) -> f32 {
        return bitcast<f32>(bits);
      }

      @group(0) @binding(0) var<storage, read_write> in0: array<f32>;
      @group(0) @binding(1) var<storage, read_write> in1: array<f32>;
      @group(0) @binding(2) var<storage, read_write> out0: array<f32>;

      fn weft_addIeee_f32(a: f32, b: f32) -> f32 {
        let ab = bitcast<u32>(a);
        let bb = bitcast<u32>(b);
        let ma = ab & u32(0x7fffffffu);
        let mb = bb & u32(0x7fffffffu);
        let mx = max(ma, mb);
        let nan = (mx > u32(0x7f800000u)) | ((mx == u32(0x7f800000u)) & ((ab ^ bb) == u32(0x80000000u)));
        return select(a + b, f32(weft_nonfinite(0x7fc00000u)), nan);
      }

      fn weft_gelu_f32(x: f32) -> f32 {
        let z = abs(x) * f32(0.7071067811865476);
        let t = 1.0 / (1.0 + 0.5 * z);
        let q = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
        let h = 0.5 * t * exp(q - z * z);
        return x * select(1.0 - h, h, x < f32(0.0));
      }

      fn weft_isNan_f32(x: f32) -> bool {
        return (bitcast<u32>(x) & u32(0x7fffffffu)) > u32(0x7f800000u);
      }

      fn weft_keepNan_f32(x: f32, y: f32) -> f32 {
        return select(y, x, weft_isNan_f32(x));
      }

      fn weft_mulIeee_f32(a: f32, b: f32) -> f32 {
        let ab = bitcast<u32>(a);
        let bb = bitcast<u32>(b);
        let ma = ab & u32(0x7fffffffu);
        let mb = bb & u32(0x7fffffffu);
        let mx = max(ma, mb);
        let nan = (mx > u32(0x7f800000u)) | ((mx == u32(0x7f800000u)) & (min(ma, mb) == u32(0u)));
        return select(a * b, f32(weft_nonfinite(0x7fc00000u)), nan);
      }

      @compute @workgroup_size(64)
      fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
        let i = (wid.y * nwg.x + wid.x) * 64u + lid;
        if (i >= 8u) { return; }
        let c1 = i % 4u;
        let cr1 = i / 4u;
        let c0 = cr1;
        let v0 = in0[i];
        let v1 = in1[c1];
        let v2 = weft_addIeee_f32(v0, v1);
        out0[i] = weft_mulIeee_f32(weft_keepNan_f32(v2, weft_gelu_f32(v2)), v0);
      }
      "
    `);
  });

  it("a contiguous same-shape chain is vectorised to vec4", () => {
    const block = new BlockGraph();
    block.add({ kind: "binary-scalar", op: "maximum", lhs: t(1, [8]), scalar: 0, scalarFirst: false, out: t(2, [8]) });
    const plan = elementwiseKernel(
      { shape: [8], graph: block.graph, label: "relu", inputs: [{ dtype: "f32", access: "read-write", layout: dense([8]) }], outputs: [{ node: block.written()[0]?.node ?? 0, dtype: "f32", inPlaceSlot: 0 }] },
      profile,
    );
    expect(plan.kernel.source).toMatchInlineSnapshot(`
      "@group(0) @binding(0) var<storage, read_write> in0: array<vec4<f32>>;

      struct Params {
        p0_0: f32,
      }
      @group(0) @binding(1) var<uniform> params: Params;

      fn weft_isNan_vec4f32(x: vec4<f32>) -> vec4<bool> {
        return (bitcast<vec4<u32>>(x) & vec4<u32>(0x7fffffffu)) > vec4<u32>(0x7f800000u);
      }

      fn weft_isZero_vec4f32(x: vec4<f32>) -> vec4<bool> {
        return (bitcast<vec4<u32>>(x) & vec4<u32>(0x7fffffffu)) == vec4<u32>(0u);
      }

      fn weft_maxNan_vec4f32(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
        let m = select(select(max(a, b), b, weft_isNan_vec4f32(b)), a, weft_isNan_vec4f32(a));
        return select(m, bitcast<vec4<f32>>(bitcast<vec4<u32>>(a) & bitcast<vec4<u32>>(b)), weft_isZero_vec4f32(a) & weft_isZero_vec4f32(b));
      }

      @compute @workgroup_size(64)
      fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
        let i = (wid.y * nwg.x + wid.x) * 64u + lid;
        if (i >= 2u) { return; }
        let v0 = in0[i];
        in0[i] = weft_maxNan_vec4f32(v0, vec4<f32>(params.p0_0));
      }
      "
    `);
  });

  it("a reduce with a prologue reads the prologue inside its bounded loop", () => {
    const prologue = new BlockGraph();
    prologue.add({ kind: "unary", op: "exp", input: t(1, [3, 5]), out: t(2, [3, 5]) });
    const node = prologue.leaf(t(2, [3, 5], "ReadWrite"));
    const epilogue = new BlockGraph();
    const res = epilogue.provide(t(3, [3]), "res");
    epilogue.outputs.push({ tensor: t(3, [3]), node: res, written: true });
    epilogue.add({ kind: "unary", op: "log", input: t(3, [3], "ReadWrite"), out: t(4, [3]) });
    const plan = reducePassKernel(
      {
        op: "sum",
        inputShape: [3, 5],
        axes: [1],
        valueDtype: "f32",
        label: "exp+sum+log",
        source: { kind: "graph", graph: prologue.graph, node, inputs: [{ dtype: "f32", access: "read", layout: dense([3, 5]) }] },
        sink: { kind: "final", outShape: [3], graph: epilogue.graph, inputs: [], outputs: epilogue.written().map((o) => ({ node: o.node, dtype: "f32" as const })), resultDtype: "f32" },
      },
      profile,
    );
    expect(plan.count, "one workgroup per output row").toEqual([3, 1, 1]);
    expect(plan.kernel.source).toMatchInlineSnapshot(`
      "fn weft_nonfinite(bits: u32) -> f32 {
        return bitcast<f32>(bits);
      }

      @group(0) @binding(0) var<storage, read_write> in0: array<f32>;
      @group(0) @binding(1) var<storage, read_write> out0: array<f32>;

      var<workgroup> sv: array<f32, 64>;

      fn weft_exp_f32(x: f32) -> f32 {
        let b = bitcast<u32>(x);
        return select(select(exp(x), f32(0.0), b == u32(0xff800000u)), x, weft_isNan_f32(x) | (b == u32(0x7f800000u)));
      }

      fn weft_isNan_f32(x: f32) -> bool {
        return (bitcast<u32>(x) & u32(0x7fffffffu)) > u32(0x7f800000u);
      }

      fn weft_isZero_f32(x: f32) -> bool {
        return (bitcast<u32>(x) & u32(0x7fffffffu)) == u32(0u);
      }

      fn weft_log_f32(x: f32) -> f32 {
        let r = select(log(x), f32(weft_nonfinite(0xff800000u)), weft_isZero_f32(x));
        let posInf = bitcast<u32>(x) == u32(0x7f800000u);
        return select(select(r, f32(weft_nonfinite(0x7fc00000u)), weft_signBit_f32(x) & !weft_isZero_f32(x)), x, weft_isNan_f32(x) | posInf);
      }

      fn weft_signBit_f32(x: f32) -> bool {
        return (bitcast<u32>(x) & u32(0x80000000u)) != u32(0u);
      }

      @compute @workgroup_size(64)
      fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
        let g = (wid.y * nwg.x + wid.x);
        if (g >= 3u) { return; }
        let o = g / 1u;
        let k = g % 1u;
        var av = 0.0f;
        let q0 = o;
        for (var j = 0u; j < 1u; j = j + 1u) {
          let r = k * 4096u + j * 64u + lid;
          if (r < 5u) {
            let p0 = r;
            let v0 = in0[q0 * 5u + p0];
            let bv = weft_exp_f32(v0);
            av = av + bv;
          }
        }
        sv[lid] = av;
        workgroupBarrier();
        for (var s = 32u; s > 0u; s = s >> 1u) {
          if (lid < s) {
            var xv = sv[lid];
            xv = xv + sv[lid + s];
            sv[lid] = xv;
          }
          workgroupBarrier();
        }
        if (lid == 0u) {
          let res = sv[0];
          out0[o] = weft_log_f32(res);
        }
      }
      "
    `);
  });

  it("a tiled matmul with a bias epilogue stages tiles in workgroup memory", () => {
    const epilogue = new BlockGraph();
    const res = epilogue.provide(t(3, [4, 4]), "res");
    epilogue.outputs.push({ tensor: t(3, [4, 4]), node: res, written: true });
    epilogue.add({ kind: "binary", op: "add", lhs: t(3, [4, 4], "ReadWrite"), rhs: t(5, [4]), out: t(6, [4, 4]) });
    const plan = matmulKernel(
      {
        lhs: dense([4, 8]),
        rhs: dense([8, 4]),
        dtype: "f32",
        outShape: [4, 4],
        config: { kind: "tiled", wx: 2, wy: 2, rm: 2, rn: 2, tk: 4 },
        epilogue: { graph: epilogue.graph, inputs: [{ dtype: "f32", access: "read", layout: dense([4]) }], outputs: epilogue.written().map((o) => ({ node: o.node, dtype: "f32" as const })) },
        label: "matmul+add",
      },
      profile,
    );
    expect(plan.kernel.source).toMatchInlineSnapshot(`
      "fn weft_nonfinite(bits: u32) -> f32 {
        return bitcast<f32>(bits);
      }

      @group(0) @binding(0) var<storage, read_write> lhs: array<f32>;
      @group(0) @binding(1) var<storage, read_write> rhs: array<f32>;
      @group(0) @binding(2) var<storage, read_write> ep0: array<f32>;
      @group(0) @binding(3) var<storage, read_write> out0: array<f32>;

      var<workgroup> ta: array<f32, 16>;
      var<workgroup> tb: array<f32, 16>;

      fn weft_addIeee_f32(a: f32, b: f32) -> f32 {
        let ab = bitcast<u32>(a);
        let bb = bitcast<u32>(b);
        let ma = ab & u32(0x7fffffffu);
        let mb = bb & u32(0x7fffffffu);
        let mx = max(ma, mb);
        let nan = (mx > u32(0x7f800000u)) | ((mx == u32(0x7f800000u)) & ((ab ^ bb) == u32(0x80000000u)));
        return select(a + b, f32(weft_nonfinite(0x7fc00000u)), nan);
      }

      fn weft_isZero_f32(x: f32) -> bool {
        return (bitcast<u32>(x) & u32(0x7fffffffu)) == u32(0u);
      }

      fn weft_plusZero_f32(x: f32) -> f32 {
        return bitcast<f32>(select(bitcast<u32>(x), u32(0u), weft_isZero_f32(x)));
      }

      @compute @workgroup_size(2, 2)
      fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
        let batch = wid.z;
        let aBase = 0u;
        let bBase = 0u;
        let row0 = wid.y * 4u + lid3.y * 2u;
        let col0 = wid.x * 4u + lid3.x * 2u;
        var acc: array<f32, 4>;
        for (var t = 0u; t < 4u; t = t + 1u) {
          acc[t] = 0.0f;
        }
        for (var t = 0u; t < 2u; t = t + 1u) {
          for (var e = lid; e < 16u; e = e + 4u) {
            let gr = wid.y * 4u + e / 4u;
            let gk = t * 4u + e % 4u;
            var v = 0.0f;
            if (gr < 4u && gk < 8u) {
              v = lhs[aBase + gr * 8u + gk * 1u];
            }
            ta[e] = v;
          }
          for (var e = lid; e < 16u; e = e + 4u) {
            let gk = t * 4u + e / 4u;
            let gc = wid.x * 4u + e % 4u;
            var v = 0.0f;
            if (gk < 8u && gc < 4u) {
              v = rhs[bBase + gk * 4u + gc * 1u];
            }
            tb[e] = v;
          }
          workgroupBarrier();
          for (var kk = 0u; kk < 4u; kk = kk + 1u) {
            for (var i = 0u; i < 2u; i = i + 1u) {
              let a = ta[(lid3.y * 2u + i) * 4u + kk];
              for (var j = 0u; j < 2u; j = j + 1u) {
                acc[i * 2u + j] = acc[i * 2u + j] + a * tb[kk * 4u + lid3.x * 2u + j];
              }
            }
          }
          workgroupBarrier();
        }
        for (var i = 0u; i < 2u; i = i + 1u) {
          for (var j = 0u; j < 2u; j = j + 1u) {
            let row = row0 + i;
            let col = col0 + j;
            if (row < 4u && col < 4u) {
              let o = batch * 16u + row * 4u + col;
              let res = weft_plusZero_f32(acc[i * 2u + j]);
              let e1 = o % 4u;
              let er1 = o / 4u;
              let e0 = er1;
              let v1 = ep0[e1];
              out0[o] = weft_addIeee_f32(res, v1);
            }
          }
        }
      }
      "
    `);
  });
});

describe("NaN-safe helpers", () => {
  const kernelOf = (dtype: "f32" | "i32", ops: (block: BlockGraph, x: TensorIr) => void): string => {
    const block = new BlockGraph();
    const x: TensorIr = { ...t(1, [8]), dtype };
    ops(block, x);
    return elementwiseKernel(
      {
        shape: [8],
        graph: block.graph,
        label: "nan",
        inputs: [{ dtype, access: "read", layout: dense([8]) }],
        outputs: block.written().map((o) => ({ node: o.node, dtype: o.tensor.dtype })),
      },
      profile,
    ).kernel.source;
  };
  const count = (source: string, text: string): number => source.split(text).length - 1;

  it("float maximum, minimum and compares emit each helper once, integers emit none", () => {
    const float = kernelOf("f32", (b, x) => {
      b.add({ kind: "binary-scalar", op: "maximum", lhs: x, scalar: 0, scalarFirst: false, out: t(2, [8]) });
      b.add({ kind: "binary-scalar", op: "minimum", lhs: x, scalar: 1, scalarFirst: false, out: t(3, [8]) });
      b.add({ kind: "binary-scalar", op: "maximum", lhs: x, scalar: 2, scalarFirst: false, out: t(4, [8]) });
      b.add({ kind: "binary-scalar", op: "lt", lhs: x, scalar: 2, scalarFirst: false, out: { ...t(5, [8]), dtype: "bool" } });
    });
    expect(count(float, "fn weft_isNan_vec4f32("), "isNan is defined once, shared by every helper that needs it").toBe(1);
    expect(count(float, "fn weft_maxNan_vec4f32("), "maxNan is defined once for two maximums").toBe(1);
    expect(count(float, "fn weft_minNan_vec4f32("), "minimum needs minNan").toBe(1);
    expect(count(float, "fn weft_ordered_vec4f32("), "a float compare is guarded by ordered").toBe(1);
    expect(float, "no raw max survives outside the helper body").not.toMatch(/= max\(/);

    const int = kernelOf("i32", (b, x) => {
      b.add({ kind: "binary-scalar", op: "maximum", lhs: x, scalar: 0, scalarFirst: false, out: { ...t(2, [8]), dtype: "i32" } });
      b.add({ kind: "binary-scalar", op: "lt", lhs: x, scalar: 2, scalarFirst: false, out: { ...t(3, [8]), dtype: "bool" } });
    });
    expect(int, "integers have no NaN: no helper is emitted").not.toContain("weft_");
  });

  it("a transcendental goes through its guarding helper, and clamp through clampNan with runtime bounds", () => {
    const source = kernelOf("f32", (b, x) => {
      b.add({ kind: "unary", op: "exp", input: x, out: t(2, [8]) });
      b.add({ kind: "clamp", input: x, min: -1, max: 1, out: t(3, [8]) });
    });
    expect(source, "exp decides NaN and ±Inf on the bits").toContain("weft_exp_vec4f32(v0)");
    expect(source, "exp(-Inf) is 0 whatever the built-in does").toContain("select(exp(x), vec4<f32>(0.0), b == vec4<u32>(0xff800000u))");
    expect(source, "clamp keeps a NaN x; its bounds are uniforms").toContain("weft_clampNan_vec4f32(v0, vec4<f32>(params.p0_0), vec4<f32>(params.p0_1))");
    expect(source, "the NaN test is on the bits, never x != x").toContain("bitcast<vec4<u32>>(x) & vec4<u32>(0x7fffffffu)");
  });
});

describe("runtime values are parameters, never shader text", () => {
  const kernelOf = (dtype: "f32" | "i32" | "u32", scalar: number, op: "add" | "mod" | "div" | "mul" = "add"): { source: string; key: string; uniforms: Uint8Array | undefined } => {
    const block = new BlockGraph();
    const x: TensorIr = { ...t(1, [7]), dtype };
    block.add({ kind: "binary-scalar", op, lhs: x, scalar, scalarFirst: false, out: { ...t(2, [7]), dtype } });
    const spec = { shape: [7], graph: block.graph, label: op, inputs: [{ dtype, access: "read" as const, layout: dense([7]) }], outputs: block.written().map((o) => ({ node: o.node, dtype })) };
    const plan = elementwiseKernel(spec, profile);
    return { source: plan.kernel.source, key: plan.kernel.key, uniforms: elementwiseUniforms(spec) };
  };

  it("a new scalar gives the same kernel (key and source) and new uniform bytes", () => {
    const a = kernelOf("f32", 0.5);
    const b = kernelOf("f32", 1e30);
    expect(b.key, "the key holds the structure only").toBe(a.key);
    expect(b.source, "the WGSL is identical").toBe(a.source);
    expect(a.source).toContain("var<uniform> params: Params;");
    expect([...new Float32Array((a.uniforms as Uint8Array).buffer)], "the value travels as a uniform").toEqual([0.5]);
    expect([...new Float32Array((b.uniforms as Uint8Array).buffer)]).toEqual([Math.fround(1e30)]);
  });

  it("a zero divisor is never a constant: integer mod and div by 0 compile and select 0", () => {
    const mod = kernelOf("i32", 0, "mod");
    expect(mod.source, "no literal divisor reaches WGSL's % (a constant 0 is a shader-creation error)").not.toMatch(/% 0i/);
    expect(mod.source, "the divisor is made non-zero before %").toContain("select(params.p0_0, 1i, params.p0_0 == 0i)");
    const div = kernelOf("u32", 0, "div");
    expect(div.source).toContain("select(v0 / select(params.p0_0, 1u, params.p0_0 == 0u), 0u, params.p0_0 == 0u)");
  });

  it("integer scalars are saturated into the dtype on the host, like the oracle's conversion", () => {
    const bytes = (dtype: "i32" | "u32", v: number): number => {
      const u = kernelOf(dtype, v).uniforms as Uint8Array;
      return dtype === "i32" ? (new Int32Array(u.buffer)[0] ?? NaN) : (new Uint32Array(u.buffer)[0] ?? NaN);
    };
    expect([bytes("u32", -2), bytes("u32", 5e9), bytes("u32", Number.NaN), bytes("u32", 2.7)]).toEqual([0, 4294967295, 0, 2]);
    expect([bytes("i32", -3e9), bytes("i32", 3e9), bytes("i32", -2.7)]).toEqual([-2147483648, 2147483647, -2]);
  });
});
