/**
 * Accumulates WGSL source line by line with structured indentation.
 *
 * @remarks
 * **Why.** Kernels are generated in layers (docs/style.md#kernels): an expression IR, an op table, then
 * this builder. Control flow stays indented through {@link WgslBuilder.block} instead of string
 * arithmetic inside templates.
 * **Invariant.** Indentation never goes negative: every `block` closes what it opened.
 */
export class WgslBuilder {
  /** Emitted lines, already indented; grows until `toString()`. */
  readonly #lines: string[] = [];
  /** Current depth in units of two spaces. */
  #depth = 0;

  /** Appends lines at the current indentation (empty strings become blank lines). */
  line(...lines: string[]): this {
    for (const l of lines) this.#lines.push(l === "" ? "" : "  ".repeat(this.#depth) + l);
    return this;
  }

  /** Emits `header {`, the body one level deeper, then `}` (plus `suffix`). */
  block(header: string, body: (w: this) => void, suffix = ""): this {
    this.line(`${header} {`);
    this.#depth++;
    body(this);
    this.#depth--;
    this.line(`}${suffix}`);
    return this;
  }

  /** The module text, newline-terminated. */
  toString(): string {
    return this.#lines.join("\n") + "\n";
  }
}
