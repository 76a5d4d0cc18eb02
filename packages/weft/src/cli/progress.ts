/**
 * A progress bar for the CLI: redrawn in place with `\r` on a TTY, a few plain lines otherwise
 * (logs and CI stay readable).
 *
 * @module
 */

/** Where the CLI writes: `process.stdout` or a test's collector. */
export interface Output {
  write(text: string): unknown;
  readonly isTTY?: boolean;
}

/**
 * Tracks `total` steps. TTY: one line, rewritten on every step. Non-TTY: a line at each quarter.
 * **Invariant.** `done` never exceeds `total`; `finish()` prints the final state exactly once.
 */
export class ProgressBar {
  readonly #out: Output;
  readonly #total: number;
  readonly #label: string;
  #done = 0;
  /** Quarters already printed in non-TTY mode (0..4). */
  #quarters = 0;
  #finished = false;

  constructor(out: Output, label: string, total: number) {
    this.#out = out;
    this.#label = label;
    this.#total = Math.max(1, total);
  }

  /** Marks one more step done. */
  tick(): void {
    if (this.#done < this.#total) this.#done++;
    if (this.#out.isTTY === true) {
      this.#out.write(`\r${this.#render()}`);
      return;
    }
    const quarter = Math.floor((4 * this.#done) / this.#total);
    while (this.#quarters < quarter && this.#quarters < 3) {
      this.#quarters++;
      this.#out.write(`${this.#render()}\n`);
    }
  }

  /** Prints the final state and ends the line. */
  finish(): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#out.write(this.#out.isTTY === true ? `\r${this.#render()}\n` : `${this.#render()}\n`);
  }

  #render(): string {
    const width = 30;
    const filled = Math.round((width * this.#done) / this.#total);
    return `${this.#label} [${"#".repeat(filled)}${"-".repeat(width - filled)}] ${this.#done}/${this.#total}`;
  }
}
