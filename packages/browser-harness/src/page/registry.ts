/**
 * The in-page side of the browser harness: a minimal test registry whose results
 * `runInBrowser` (the Node side, `src/node/`) collects from `globalThis.__weftResults`.
 *
 * @remarks
 * **Why not vitest in the browser.** The harness must run with only Debian's Chromium and
 * playwright-core (no browser download, no network); a bundle of plain async functions is all the
 * page needs. A conformance kit runs here by registering its cases with {@link test}.
 */

/** What a browser run reports. */
export interface BrowserResults {
  readonly passed: number;
  readonly failed: number;
  /** One entry per failed test: its name and the error's message (with stack where available). */
  readonly failures: readonly { readonly name: string; readonly error: string }[];
  /** Names of the tests that passed, in order. */
  readonly names: readonly string[];
}

/** Tests registered and not yet run; emptied by {@link runRegisteredTests}. */
const registered: { name: string; fn: () => unknown }[] = [];

/** Registers a test case for the page's run. */
export function test(name: string, fn: () => unknown): void {
  registered.push({ name, fn });
}

/** Throws with `message` when `condition` is false (the page has no `expect`). */
export function check(condition: boolean, message: string): asserts condition {
  if (!condition) throw new Error(`check failed: ${message}`);
}

/** Runs every registered test in order and publishes the results on `globalThis.__weftResults`. */
export async function runRegisteredTests(): Promise<BrowserResults> {
  const failures: { name: string; error: string }[] = [];
  const names: string[] = [];
  let passed = 0;
  for (const { name, fn } of registered.splice(0)) {
    try {
      await fn();
      passed++;
      names.push(name);
    } catch (error) {
      failures.push({ name, error: error instanceof Error ? `${error.name}: ${error.message}\n${error.stack ?? ""}` : String(error) });
    }
  }
  const results: BrowserResults = { passed, failed: failures.length, failures, names };
  (globalThis as { __weftResults?: BrowserResults }).__weftResults = results;
  return results;
}
