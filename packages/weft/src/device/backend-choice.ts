/**
 * Which backend `init` picks and why, as a named decision: `init` prints it in one line,
 * `weft doctor` prints it with the adapter it was based on.
 *
 * @module
 */
import type { AdapterProbe, BackendName } from "./backends.js";

/** The backend a caller asks `init` for. */
export type BackendRequest = "auto" | BackendName;

/**
 * Why a backend was chosen. Every `auto` outcome has its own kind, so the message, `weft doctor`
 * and the tests agree on one list.
 *
 * - `requested`: the caller named the backend (`backend: "cpu"` never probes).
 * - `hardware-adapter`: `auto` found a hardware WebGPU adapter.
 * - `no-adapter`: `auto` found no WebGPU adapter (`detail` says what was tried).
 * - `software-adapter`: `auto` found only a software adapter (Mesa's llvmpipe, SwiftShader,
 *   lavapipe, a fallback adapter). It emulates a GPU on the CPU and compiles every kernel through
 *   a CPU shader compiler (about half a second each on the development machine), so typical
 *   programs — many small kernels, like `weft demo` — run far slower there than on the CPU
 *   backend, and `auto` prefers the CPU. Large elementwise work can be faster on it (it runs
 *   kernels multi-threaded), so asking for `"webgpu"` explicitly still uses it.
 * - `device-failed`: `auto` found an adapter, but creating the device failed (`detail`).
 */
export type ChoiceReason =
  | { readonly kind: "requested"; readonly adapter?: string }
  | { readonly kind: "hardware-adapter"; readonly adapter: string }
  | { readonly kind: "no-adapter"; readonly detail: string }
  | { readonly kind: "software-adapter"; readonly adapter: string }
  | { readonly kind: "device-failed"; readonly detail: string };

/** What {@link decideBackend} answers before any device exists. */
export type BackendDecision =
  | { readonly backend: "cpu"; readonly reason: ChoiceReason }
  | { readonly backend: "webgpu"; readonly reason: ChoiceReason }
  /** An explicit `"webgpu"` request that cannot be served: `init` throws with `detail`. */
  | { readonly backend: "unavailable"; readonly detail: string };

/**
 * Decides from the request and the adapter probe (`undefined` when the request needs none).
 * Resolution order for `"auto"`:
 * 1. no adapter → CPU (`no-adapter`);
 * 2. only a software adapter → CPU (`software-adapter`);
 * 3. a hardware adapter → WebGPU (`hardware-adapter`; `init` falls back to the CPU with
 *    `device-failed` when the device cannot be created).
 */
export function decideBackend(request: BackendRequest, probe: AdapterProbe | undefined): BackendDecision {
  if (request === "cpu") return { backend: "cpu", reason: { kind: "requested" } };
  if (probe === undefined || !probe.available) {
    const detail = probe?.reason ?? "not probed";
    return request === "webgpu" ? { backend: "unavailable", detail: `no WebGPU adapter: ${detail}` } : { backend: "cpu", reason: { kind: "no-adapter", detail } };
  }
  if (request === "webgpu") return { backend: "webgpu", reason: { kind: "requested", adapter: adapterName(probe) } };
  const description = probe.info?.description ?? probe.reason;
  if (probe.info?.software === true) return { backend: "cpu", reason: { kind: "software-adapter", adapter: description } };
  return { backend: "webgpu", reason: { kind: "hardware-adapter", adapter: description } };
}

/** The adapter as messages name it: its description, marked when it is a software one. */
export function adapterName(probe: AdapterProbe): string {
  const description = probe.info?.description ?? probe.reason;
  return probe.info?.software === true ? `${description} (software)` : description;
}

/** The reason in words, as `init` prints it after `weft: using <backend>`. One line. */
export function describeReason(reason: ChoiceReason): string {
  switch (reason.kind) {
    case "requested":
      return reason.adapter === undefined ? "requested" : `requested; ${reason.adapter}`;
    case "hardware-adapter":
      return reason.adapter;
    case "no-adapter":
      return `no WebGPU adapter: ${reason.detail}`;
    case "software-adapter":
      return `the only WebGPU adapter is a software one (${reason.adapter}), usually slower than the CPU backend; ask for backend "webgpu" to use it anyway`;
    case "device-failed":
      return `WebGPU device creation failed: ${reason.detail}`;
    default:
      return reason satisfies never;
  }
}
