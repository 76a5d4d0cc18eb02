/**
 * Where code generation is refused (a browser page whose Content-Security-Policy has no
 * `'unsafe-eval'`), the CPU backend detects it once and runs its elementwise interpreter, and
 * `weft doctor` says so. The refusal is real, not mocked: a child Node process runs with
 * `--disallow-code-generation-from-strings` (V8 then throws `EvalError` from `new Function`, as a
 * strict CSP does), prints doctor's report and computes a program on the default CPU device
 * (fused elementwise with NaN/±Inf/-0, f32 reductions past the WebAssembly threshold, a matmul);
 * this process computes the same program on generated kernels, and the two must agree bit for bit
 * (every NaN counted as one pattern: a NaN's sign and payload are not part of the semantics).
 * The child imports the built package (`dist/`), which the suite builds before testing.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { type Device, tensor, tidy } from "@weft/tensor";
import { createCpuDevice } from "../device/backends.js";

/** The program both processes run (its source is also written into the child's script). */
const PROGRAM = `async function program(device, { tensor, tidy }) {
  const n = 4099;
  const values = Array.from({ length: n }, (_, i) => [NaN, Infinity, -Infinity, -0, 0][i % 97] ?? Math.sin(i) * 3);
  const x = tensor(values, { device, shape: [n] });
  const finite = tensor(values.map((v) => (Number.isFinite(v) ? v : 0.25)), { device, shape: [n] });
  const outs = tidy(() => [
    x.mul(0.5).add(1).exp().neg().add(x).relu(),
    finite.sum(), finite.max(), finite.min(), x.max(),
    finite.reshape([1, n]).matmul(finite.reshape([n, 1])),
    finite.square().mean(),
  ]);
  const bits = [];
  // Bits, with every NaN as one pattern (a NaN's sign and payload are not part of the semantics).
  const isNaNBits = (b) => (b & 0x7f800000) === 0x7f800000 && (b & 0x7fffff) !== 0;
  for (const t of outs) bits.push(Array.from(new Uint32Array(Float32Array.from(await t.data()).buffer), (b) => (isNaNBits(b) ? 0x7fc00000 : b)));
  for (const t of [x, finite, ...outs]) t.dispose();
  return { bits, live: device.memory().liveTensors };
}`;

const CHILD = (weftDist: string, doctorDist: string): string => `
import { createCpuDevice, tensor, tidy } from ${JSON.stringify(weftDist)};
import { runDoctor } from ${JSON.stringify(doctorDist)};
${PROGRAM}
let text = "";
await runDoctor({ out: { write: (t) => void (text += t), isTTY: false }, probe: async () => ({ available: false, reason: "no adapter in this test" }) });
const device = createCpuDevice();
let generated = "";
try { createCpuDevice({ kernels: "generated" }); generated = "created"; } catch (error) { generated = error.name + ": " + error.message; }
const result = await program(device, { tensor, tidy });
process.stdout.write(JSON.stringify({ doctor: text, label: device.label, generated, ...result }));
`;

interface ChildReport {
  readonly doctor: string;
  readonly label: string;
  readonly generated: string;
  readonly bits: number[][];
  readonly live: number;
}

function runChild(): ChildReport {
  const dist = (p: string): string => new URL(`../../dist/${p}`, import.meta.url).href;
  const dir = mkdtempSync(join(tmpdir(), "weft-csp-"));
  try {
    const script = join(dir, "child.mjs");
    writeFileSync(script, CHILD(dist("index.js"), dist("cli/doctor.js")));
    const r = spawnSync(process.execPath, ["--disallow-code-generation-from-strings", script], {
      encoding: "utf8",
      cwd: fileURLToPath(new URL("../..", import.meta.url)),
      timeout: 60_000,
    });
    if (r.status !== 0) throw new Error(`child exited ${r.status}: ${r.stderr}`);
    return JSON.parse(r.stdout) as ChildReport;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("code generation refused (Content-Security-Policy without 'unsafe-eval')", () => {
  it("runs the interpreter, says so in weft doctor, and computes the same bits as generated kernels", async () => {
    const child = runChild();
    expect(child.doctor, "doctor names the interpreter and why").toContain(
      "cpu backend kernels: elementwise: interpreted (new Function is refused (EvalError: a Content-Security-Policy without 'unsafe-eval'))",
    );
    expect(child.doctor, "WebAssembly is a separate permission ('wasm-unsafe-eval'): it still runs").toContain("matmul: WebAssembly SIMD");
    expect(child.doctor).toContain("reductions: WebAssembly SIMD");
    expect(child.label).toBe("cpu (interpreted kernels, WebAssembly SIMD matmul)");
    expect(child.generated, "asking for generated kernels is a typed error").toMatch(/^UnsupportedError: .*generated CPU kernels/);
    expect(child.live, "every tensor released in the child").toBe(0);

    const device: Device = createCpuDevice({ kernels: "generated" });
    const program = new Function("return " + PROGRAM)() as (d: Device, api: { tensor: typeof tensor; tidy: typeof tidy }) => Promise<{ bits: number[][]; live: number }>;
    const here = await program(device, { tensor, tidy });
    expect(here.live).toBe(0);
    expect(child.bits.length).toBe(here.bits.length);
    for (let k = 0; k < here.bits.length; k++) expect(child.bits[k], `output ${k}`).toEqual(here.bits[k]);
    expect(here.bits[0]?.filter((b) => b === 0x7fc00000).length, "NaN reaches the chain's output").toBeGreaterThan(0);
    expect(here.bits[4], "max with a NaN is NaN").toEqual([0x7fc00000]);
  }, 90_000);
});
