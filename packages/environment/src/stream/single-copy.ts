/**
 * One stream registry per process: the load-time guard against a second copy of
 * `@weft/environment`.
 *
 * @remarks
 * **Why.** Stream identity (`StreamId.current()`, the policy, the async scope) is module state. Two
 * copies of this package — two versions in one `node_modules` tree, or one package bundled twice —
 * each keep their own, so the stream `@weft/weft` puts a task on is not the stream `@weft/fusion`
 * reads: tasks on streams 1, 2, 3 all record on stream 0 and lose their isolation, silently. The
 * packages are released as one fixed version group (`.changeset/config.json`), which keeps a
 * normal install to one copy; this guard turns every other case into an error at load.
 *
 * **How.** The first copy to load writes a marker (its version and module URL) under a
 * `Symbol.for` key on the global object; a copy that finds a marker from another URL throws
 * {@link DuplicateEnvironmentError} naming both. The same URL loaded again (a test runner or a dev
 * server re-evaluating the module) replaces the marker: that is the same copy starting over.
 *
 * @module
 */
import manifest from "#manifest" with { type: "json" };
import { WeftError } from "../errors/weft-error.js";

/** The version of this copy of `@weft/environment` (read from its package.json). */
export const ENVIRONMENT_VERSION: string = manifest.version;

/** The global key the loaded copy's marker sits under (shared by every copy, every realm). */
export const REGISTRY_MARKER: unique symbol = Symbol.for("@weft/environment/stream-registry");

/** Which copy of `@weft/environment` owns the stream registry: its version and module URL. */
export interface RegistryCopy {
  readonly version: string;
  readonly url: string;
}

/**
 * A second copy of `@weft/environment` was loaded next to the one that owns the stream registry.
 *
 * @remarks
 * The fix is to install one version of every `@weft` package: `npm ls @weft/environment` shows the
 * copies; align the `@weft/*` versions in package.json (they are released together) and run
 * `npm dedupe`, or make a bundler resolve `@weft/environment` to one path.
 */
export class DuplicateEnvironmentError extends WeftError {
  /** The copy that loaded first and owns the registry. */
  readonly loaded: RegistryCopy;
  /** The copy whose load was refused. */
  readonly refused: RegistryCopy;

  constructor(loaded: RegistryCopy, refused: RegistryCopy) {
    super(
      "duplicate-environment",
      `@weft/environment is loaded twice: ${loaded.version} (${loaded.url}) owns the stream registry, and ${refused.version} ` +
        `(${refused.url}) was loaded next to it. With two copies, streams set by one package are invisible to another and ` +
        "concurrent tasks silently share stream 0. Install one version of every @weft package: `npm ls @weft/environment` " +
        "lists the copies; align the @weft/* versions (they are released together) and run `npm dedupe`, or make your " +
        "bundler resolve @weft/environment to one path.",
    );
    this.loaded = loaded;
    this.refused = refused;
  }
}

/**
 * Claims the stream registry of this realm for `copy`.
 *
 * @throws DuplicateEnvironmentError when another copy (another URL) already claimed it; the claim
 *   is left to the first copy.
 */
export function claimStreamRegistry(copy: RegistryCopy, global: object = globalThis): void {
  const slot = global as { [REGISTRY_MARKER]?: RegistryCopy };
  const existing = slot[REGISTRY_MARKER];
  if (existing !== undefined && existing.url !== copy.url) throw new DuplicateEnvironmentError(existing, copy);
  Object.defineProperty(slot, REGISTRY_MARKER, { value: Object.freeze({ ...copy }), configurable: true, enumerable: false, writable: false });
}
