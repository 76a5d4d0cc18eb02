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
