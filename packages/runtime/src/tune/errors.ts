import { WeftError } from "@weft/environment";

/**
 * Autotune could not produce a winner, or a `TunableSet` (`@weft/runtime`) is malformed. Names the
 * set, the key and, per candidate, why it was rejected.
 */
export class AutotuneError extends WeftError {
  constructor(message: string, options?: ErrorOptions) {
    super("autotune", message, options);
  }
}
