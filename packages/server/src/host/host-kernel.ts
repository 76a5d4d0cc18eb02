import type { KernelDefinition } from "../compute-server.js";

/**
 * A kernel a {@link HostComputeServer} runs: plain TypeScript over byte views.
 *
 * @remarks
 * `run` gets one `Uint8Array` view per binding, in binding order, each exactly the binding's bytes
 * of host memory (writes through a view land in the buffer), and the launch's uniforms. It must not
 * call back into the server (a re-entrant call throws). A throw is a failed launch: its writes are
 * tainted with the error. `validate`, when present, runs once per key at compile time and throws
 * for a kernel that can never run (the host's compile error).
 */
export interface HostKernel extends KernelDefinition {
  run(buffers: Uint8Array[], uniforms?: Uint8Array): void;
  validate?(): void;
}
