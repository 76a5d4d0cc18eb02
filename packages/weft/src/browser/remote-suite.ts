import type { ConformanceCatalogueOptions } from "@weft/tensor/testing/core";

/**
 * What the remote browser run (`remote.entry.ts`) and its driver (`remote-browser.test.ts`) agree
 * on: the names of the page's first and last tests.
 *
 * @module
 */

/** The page's first test: it connected to both servers with the browser's WebSocket. */
export const REMOTE_CONNECT_TEST = "the page connects to two weft serve processes with the browser's WebSocket";

/** The page's last test: nothing left on the client or on either server. */
export const REMOTE_RELEASE_TEST = "releases every tensor, on the client and on both servers";

/**
 * The catalogue of the remote browser run: every case, with the large elementwise chain at 2^16
 * instead of 2^20 (in this run its time is the page's unfused CPU oracle, not the path under test;
 * the Node run, `conformance-remote.test.ts`, keeps the full sizes through the same servers).
 */
export const REMOTE_BROWSER_CATALOGUE: ConformanceCatalogueOptions = { largeElementwiseLog2: 16 };
