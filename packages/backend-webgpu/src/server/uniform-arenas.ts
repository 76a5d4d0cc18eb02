/// <reference types="@webgpu/types" preserve="true" />
import { BufferUsage } from "../device/gpu-constants.js";

/**
 * Free arenas kept for reuse; beyond it a recycled arena is destroyed. Each stream recording in a
 * turn holds one arena until the turn's shared submit gives them all back, so this covers the
 * default 32 stream slots with room to spare (at most 64 × 64 KiB buffers plus their mirrors):
 * with 8, serving 32 requests in flight created and destroyed 24 arenas per turn.
 */
const KEPT_ARENAS = 64;

/**
 * One uniform buffer and its host mirror: launches copy their parameters into `mirror` at their
 * (aligned) offset and bind the buffer with a dynamic offset; the stream writes `mirror[0, used)`
 * to `buffer` once, before the submit of the commands that read it.
 */
export interface UniformArena {
  readonly buffer: GPUBuffer;
  readonly mirror: Uint8Array;
}

/**
 * The uniform arenas of one server: fixed-size `UNIFORM | COPY_DST` buffers a stream carves its
 * launches' parameter regions from, handed back right after the submit of the launches that read
 * them.
 *
 * @remarks
 * **Why arenas.** A launch's parameters are a few bytes; one buffer per launch would be a driver
 * call and an allocation each. A stream fills regions of its current arena's host mirror, writes
 * each arena once per submit, and binds the arena with a dynamic offset, so bind groups stay
 * cached (the arena, not the offset, is part of their key).
 * **Reuse right after the submit.** WebGPU orders queue operations: a `writeBuffer` into an arena
 * issued after a `queue.submit` takes effect after that submit's commands, so they still read the
 * bytes written before it. An arena therefore goes back to the free list at submit, not when the
 * GPU finished: a loop that submits every iteration reuses one arena (and its cached bind groups)
 * instead of creating a 64 KiB buffer, and paying Dawn's lazy zero-fill of it, per submit
 * (docs/performance.md#shared-submits).
 * **Bounded** by {@link KEPT_ARENAS} free arenas; the ones in use are bounded by the streams'
 * unsubmitted and in-flight launches.
 */
export class UniformArenas {
  /** Bytes of one arena; a launch's uniforms must fit in one. */
  readonly arenaBytes = 64 * 1024;
  readonly #device: GPUDevice;
  /** Called before an arena's buffer is destroyed (the bind-group cache forgets it). */
  readonly #onDestroy: (buffer: GPUBuffer) => void;
  /** Free arenas, at most {@link KEPT_ARENAS}. */
  readonly #free: UniformArena[] = [];

  constructor(device: GPUDevice, onDestroy: (buffer: GPUBuffer) => void) {
    this.#device = device;
    this.#onDestroy = onDestroy;
  }

  /** A free arena, or a new one. */
  acquire(): UniformArena {
    return (
      this.#free.pop() ?? {
        buffer: this.#device.createBuffer({ label: "weft uniforms", size: this.arenaBytes, usage: BufferUsage.UNIFORM | BufferUsage.COPY_DST }),
        mirror: new Uint8Array(this.arenaBytes),
      }
    );
  }

  /** Destroys every free arena (the server's `destroy`); arenas held by unsubmitted work are destroyed when recycled after loss. */
  destroyAll(): void {
    for (const arena of this.#free.splice(0)) {
      this.#onDestroy(arena.buffer);
      arena.buffer.destroy();
    }
  }

  /** Takes back an arena whose launches were submitted: kept for reuse, or destroyed (beyond the bound, or after device loss). */
  recycle(arena: UniformArena, lost: boolean): void {
    if (this.#free.length < KEPT_ARENAS && !lost) {
      this.#free.push(arena);
      return;
    }
    this.#onDestroy(arena.buffer);
    arena.buffer.destroy();
  }
}
