/**
 * The one WebSocket shape the client needs, and where it comes from: the browser's `WebSocket`
 * where the platform has one, the `ws` package in Node.
 *
 * @remarks
 * **Why no static import of `ws`.** The client must bundle for browsers. `ws` is loaded with a
 * dynamic import whose specifier is not a literal, only where `globalThis.WebSocket` is missing
 * (Node 20), so bundlers never follow it.
 *
 * @module
 */

/** The part of the WebSocket API (browser `WebSocket` and `ws`'s alike) the client uses. */
export interface SocketLike {
  binaryType: string;
  readonly readyState: number;
  send(data: Uint8Array): void;
  close(code?: number, reason?: string): void;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { readonly data: unknown }) => void) | null;
  onclose: ((event: { readonly code: number; readonly reason: string }) => void) | null;
  onerror: ((event: unknown) => void) | null;
}

/** Opens a socket to `url` (what {@link defaultSocketFactory} returns, or a test's own). */
export type SocketFactory = (url: string) => SocketLike | Promise<SocketLike>;

/** `readyState` of an open socket (the same in both APIs). */
export const SOCKET_OPEN = 1;

/** The module name of the Node WebSocket library, kept out of bundlers' sight (see the module doc). */
const NODE_WEBSOCKET_MODULE: string = "ws";

/**
 * The platform's WebSocket: `globalThis.WebSocket` (browsers, Deno, Node ≥ 22), else `ws`'s client
 * (Node 20), which accepts frames of any size from the server.
 */
export const defaultSocketFactory: SocketFactory = async (url) => {
  const native = (globalThis as { WebSocket?: new (url: string) => SocketLike }).WebSocket;
  if (typeof native === "function") return new native(url);
  const ws = (await import(/* @vite-ignore */ NODE_WEBSOCKET_MODULE)) as { WebSocket: new (url: string, options: object) => SocketLike };
  return new ws.WebSocket(url, { maxPayload: 0, perMessageDeflate: false });
};
