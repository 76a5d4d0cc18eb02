/**
 * Reading what a client sent: the hello and the batch items, field by field. Operations are read
 * by `validate-operation.ts`, which needs the session.
 *
 * @module
 */
import type { DType } from "@weft/fusion";
import type { Hello, Item, WireError } from "../protocol/messages.js";
import { type ShapeBounds, readDType, readShape } from "./validate-operation.js";
import { check } from "./violation.js";

type Raw = Record<string, unknown>;

function isRecord(v: unknown): v is Raw {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}

function id(r: Raw, key: string, what: string): number {
  const v = r[key];
  check(typeof v === "number" && Number.isSafeInteger(v) && v >= 1, () => `${what}.${key} must be a positive integer id`);
  return v;
}

function stream(r: Raw, what: string): number {
  const v = r["s"];
  check(typeof v === "number" && Number.isSafeInteger(v) && v >= 0, () => `${what}.s must be a stream id (a non-negative integer)`);
  return v;
}

/** Reads the first message of a connection; throws a `protocol` violation unless it is a hello. */
export function parseHello(raw: unknown): Hello {
  check(isRecord(raw) && raw["t"] === "hello", "the first message must be a hello");
  const v = raw["v"];
  const token = raw["token"];
  check(typeof v === "number", "hello.v must be a number");
  return { t: "hello", v, token: typeof token === "string" ? token : "" };
}

/** Reads a batch: the list of raw items (each read by {@link parseItem} as it runs). */
export function parseBatch(raw: unknown, maxItems: number): unknown[] {
  check(isRecord(raw) && raw["t"] === "batch", "expected a batch message");
  const items = raw["items"];
  check(Array.isArray(items) && items.length <= maxItems, () => `batch.items must be an array of at most ${maxItems} items`);
  return items as unknown[];
}

/**
 * Reads one item except an `op`'s operation (returned raw in `op`, read by `validateOperation`).
 * Throws a `protocol` violation for anything malformed.
 */
export function parseItem(raw: unknown, bounds: ShapeBounds): Item | { k: "op"; s: number; op: unknown } {
  check(isRecord(raw), "an item must be a map");
  const k = raw["k"];
  const what = `item ${String(k)}`;
  switch (k) {
    case "op":
      return { k, s: stream(raw, what), op: raw["op"] };
    case "upload": {
      const bytes = raw["bytes"];
      check(bytes instanceof Uint8Array, `${what}.bytes must be binary`);
      return { k, s: stream(raw, what), id: id(raw, "id", what), shape: readShape(raw["shape"], `${what}.shape`, bounds), dtype: readDType(raw["dtype"], `${what}.dtype`), bytes };
    }
    case "alias":
      return { k, s: stream(raw, what), src: id(raw, "src", what), id: id(raw, "id", what) };
    case "poison": {
      const error = raw["error"];
      check(isRecord(error) && typeof error["message"] === "string", `${what}.error must carry a message`);
      const wire: WireError = {
        kind: typeof error["kind"] === "string" ? error["kind"] : "error",
        name: typeof error["name"] === "string" ? error["name"] : "Error",
        message: String(error["message"]).slice(0, 4096),
      };
      return { k, id: id(raw, "id", what), shape: readShape(raw["shape"], `${what}.shape`, bounds), dtype: readDType(raw["dtype"], `${what}.dtype`) as DType, error: wire };
    }
    case "drop":
      return { k, id: id(raw, "id", what) };
    case "read":
      return { k, req: id(raw, "req", what), id: id(raw, "id", what) };
    case "sync":
      return { k, req: id(raw, "req", what), s: stream(raw, what) };
    case "ping":
    case "memory":
      return { k, req: id(raw, "req", what) };
    default:
      check(false, () => `unknown item kind ${JSON.stringify(k)}`);
  }
}
