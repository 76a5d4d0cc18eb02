/**
 * The wire encoding: MessagePack through `msgpackr` (see the package README for why this library),
 * one message per binary WebSocket frame. `Uint8Array` values travel as MessagePack `bin`.
 *
 * @remarks
 * **Plain MessagePack.** Records (msgpackr's structure extension) are off in both directions, so a
 * frame is ordinary MessagePack any implementation reads. Decoding never trusts its input: every
 * decoded value is checked field by field by its reader (`server/parse.ts` on the server, the
 * connection's reply reader on the client) before it is used.
 *
 * @module
 */
import { Packr, Unpackr } from "msgpackr";

const packr = new Packr({ useRecords: false, variableMapSize: true });
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true });

/** Encodes one message for a binary frame. */
export function encodeMessage(message: unknown): Uint8Array {
  return packr.pack(message);
}

/**
 * Decodes one binary frame. Throws on bytes that are not one MessagePack value (callers turn that
 * into a `protocol` failure).
 */
export function decodeMessage(frame: Uint8Array): unknown {
  return unpackr.unpack(frame);
}

/** A copy of `bytes` in a fresh, 8-byte-aligned `ArrayBuffer` (for typed-array views of any dtype). */
export function alignedCopy(bytes: Uint8Array): ArrayBuffer {
  const buffer = new ArrayBuffer(bytes.byteLength);
  new Uint8Array(buffer).set(bytes);
  return buffer;
}
