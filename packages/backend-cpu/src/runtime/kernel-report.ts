/**
 * What `weft doctor` and `weft demo --backend cpu` say about the CPU backend's kernels: which
 * path elementwise programs take and whether matmul and the reductions run on WebAssembly SIMD,
 * with the reasons.
 *
 * @module
 */
import { codeGeneration, resolveKernelPath, type KernelPath } from "../kernels/kernel-path.js";
import { wasmSupport } from "../kernels/matmul-wasm.js";
import { wasmReduceSupport } from "../kernels/reduce-wasm.js";
import { cpuThreads } from "../kernels/matmul-threads.js";

/** The kernel paths a CPU runtime created with default options takes here. */
export interface CpuKernelReport {
  readonly elementwise: KernelPath;
  /** Why (`new Function is allowed`, or the refusal). */
  readonly elementwiseReason: string;
  readonly matmul: "webassembly-simd" | "javascript";
  /** Why (`module compiled, f64x2 lanes`, or why not). */
  readonly matmulReason: string;
  /** Threads a large matmul runs on (1: single-threaded; `matmul-threads.ts`). */
  readonly matmulThreads: number;
  /** f32 `sum`/`mean`/`max`/`min` over contiguous runs (`reduce-wasm.ts`). */
  readonly reductions: "webassembly-simd" | "javascript";
  /** Why (`module compiled, f64x2 lanes`, or why not). */
  readonly reductionsReason: string;
}

/** Detects (once per process) and reports the CPU backend's kernel paths. */
export function cpuKernelReport(): CpuKernelReport {
  const wasm = wasmSupport();
  const reduce = wasmReduceSupport();
  return {
    elementwise: resolveKernelPath("auto"),
    elementwiseReason: codeGeneration().reason,
    matmul: wasm.available ? "webassembly-simd" : "javascript",
    matmulReason: wasm.reason,
    matmulThreads: wasm.available ? cpuThreads() : 1,
    reductions: reduce.available ? "webassembly-simd" : "javascript",
    reductionsReason: reduce.reason,
  };
}

/**
 * {@link cpuKernelReport} on one line:
 * `elementwise: generated JavaScript (…); matmul: WebAssembly SIMD (…); reductions: WebAssembly SIMD (…)`.
 */
export function describeCpuKernels(report: CpuKernelReport = cpuKernelReport()): string {
  const elementwise = report.elementwise === "generated" ? "generated JavaScript" : "interpreted";
  // Elementwise launches share the matmul's thread count (generated code only: `elementwise-threads.ts`).
  const ewThreads = report.elementwise === "generated" && cpuThreads() > 1 ? `; ${cpuThreads()} threads from 2^18 estimated cost` : "";
  const matmul = report.matmul === "webassembly-simd" ? "WebAssembly SIMD" : "JavaScript";
  const reductions = report.reductions === "webassembly-simd" ? "WebAssembly SIMD" : "JavaScript";
  const threads = report.matmulThreads > 1 ? `; ${report.matmulThreads} threads from 2^22 multiply-adds` : "";
  return `elementwise: ${elementwise} (${report.elementwiseReason}${ewThreads}); matmul: ${matmul} (${report.matmulReason}${threads}); reductions: ${reductions} (${report.reductionsReason})`;
}
