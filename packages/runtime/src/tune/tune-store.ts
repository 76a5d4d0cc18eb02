/**
 * Where autotune results (and the fusion engine's execution plans) persist: a JSON file in Node,
 * IndexedDB in browsers, memory elsewhere.
 *
 * @remarks
 * Node built-ins are reached through `process.getBuiltinModule` (Node ≥ 20.16), never imported at
 * the top level, so a browser can load this module.
 *
 * @module
 */
import type * as NodeFs from "node:fs";
import type * as NodeOs from "node:os";
import type * as NodePath from "node:path";
import { Mutex, UnsupportedError } from "@weft/environment";

/** One tuning result, as persisted. */
export interface TuneRecord {
  /** The winning candidate's name (names are stable across releases; indices are not). */
  readonly fastest: string;
  /**
   * Every candidate's outcome, in the set's order: its best time (see `Tuner`), why it was
   * rejected, or why it was not measured for this key (`TunableSetOptions.skip`).
   */
  readonly candidates: ReadonlyArray<{
    readonly name: string;
    readonly bestMs?: number;
    readonly rejected?: string;
    readonly skipped?: string;
  }>;
}

/**
 * A persistent key-value store of {@link TuneRecord}s; keys are built by `TuneCache` and already
 * hold the adapter, the library version, the kernel (set) name and the autotune key. The same
 * stores keep other JSON records under another name (`R`): `@weft/fusion` persists its execution
 * plans in a `"plans"` store, one record per plan key.
 */
export interface TuneStore<R = TuneRecord> {
  /** A name for messages (`"file:/tmp/weft-cache/autotune.json"`, `"indexeddb"`, `"memory"`). */
  readonly name: string;
  /** Every stored record. */
  loadAll(): Promise<Map<string, R>>;
  /** Stores (or replaces) one record. */
  put(key: string, record: R): Promise<void>;
  /** Removes every record. */
  clear(): Promise<void>;
}

/** Reaches a Node built-in without a top-level import; `undefined` outside Node (≥ 20.16). */
function nodeBuiltin<T>(id: string): T | undefined {
  const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  return proc?.getBuiltinModule?.(id) as T | undefined;
}

/** A store that lives as long as the process: the fallback where nothing persists. */
export class MemoryTuneStore<R = TuneRecord> implements TuneStore<R> {
  readonly name = "memory";
  /** The records; bounded by the distinct keys put since the last `clear`. */
  readonly #records = new Map<string, R>();

  async loadAll(): Promise<Map<string, R>> {
    return new Map(this.#records);
  }

  async put(key: string, record: R): Promise<void> {
    this.#records.set(key, record);
  }

  async clear(): Promise<void> {
    this.#records.clear();
  }
}

/** The JSON document a {@link FileTuneStore} writes. */
interface TuneFile<R> {
  readonly format: 1;
  readonly entries: Record<string, R>;
}

/** What a store persists: autotune results, or the fusion engine's execution plans. */
export type StoreName = "autotune" | "plans";

/**
 * Records in one JSON file, `autotune.json` (or `<name>.json`) in a cache folder (Node only).
 *
 * @remarks
 * **Folder.** The one given, else `$WEFT_CACHE_DIR`, else `<os.tmpdir()>/weft-cache`.
 * **Writes.** Read, merge, write a temporary file and rename it over the old one, so a reader never
 * sees half a file and records another process wrote meanwhile are kept. Writes of one store are
 * serialised by a {@link Mutex}. An unreadable or malformed file reads as empty (it is a cache).
 */
export class FileTuneStore<R = TuneRecord> implements TuneStore<R> {
  readonly name: string;
  /** The file's path. */
  readonly path: string;
  readonly #fs: typeof NodeFs;
  readonly #pathModule: typeof NodePath;
  readonly #lock = new Mutex();

  /** @throws UnsupportedError outside Node ≥ 20.16 (check {@link FileTuneStore.available}). */
  constructor(directory?: string, store: StoreName = "autotune") {
    const fs = nodeBuiltin<typeof NodeFs>("node:fs");
    const path = nodeBuiltin<typeof NodePath>("node:path");
    const os = nodeBuiltin<typeof NodeOs>("node:os");
    if (fs === undefined || path === undefined || os === undefined) {
      throw new UnsupportedError(
        "a file autotune cache (node:fs through process.getBuiltinModule, Node ≥ 20.16)",
        "use IndexedDbTuneStore in browsers or MemoryTuneStore",
      );
    }
    const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
    const folder = directory ?? env?.["WEFT_CACHE_DIR"] ?? path.join(os.tmpdir(), "weft-cache");
    this.#fs = fs;
    this.#pathModule = path;
    this.path = path.join(folder, `${store}.json`);
    this.name = `file:${this.path}`;
  }

  /** Whether this runtime has the Node built-ins the store needs. */
  static get available(): boolean {
    return nodeBuiltin("node:fs") !== undefined;
  }

  async loadAll(): Promise<Map<string, R>> {
    return new Map(Object.entries((await this.#read()).entries));
  }

  async put(key: string, record: R): Promise<void> {
    await this.#lock.runExclusive(async () => {
      const file = await this.#read();
      await this.#write({ format: 1, entries: { ...file.entries, [key]: record } });
    });
  }

  async clear(): Promise<void> {
    await this.#lock.runExclusive(() => this.#write({ format: 1, entries: {} }));
  }

  async #read(): Promise<TuneFile<R>> {
    let text: string;
    try {
      text = await this.#fs.promises.readFile(this.path, "utf8");
    } catch {
      return { format: 1, entries: {} };
    }
    try {
      const parsed = JSON.parse(text) as Partial<TuneFile<R>>;
      if (parsed.format === 1 && typeof parsed.entries === "object" && parsed.entries !== null) {
        return { format: 1, entries: parsed.entries };
      }
    } catch {
      // A malformed cache file is an empty cache.
    }
    return { format: 1, entries: {} };
  }

  async #write(file: TuneFile<R>): Promise<void> {
    const fsp = this.#fs.promises;
    await fsp.mkdir(this.#pathModule.dirname(this.path), { recursive: true });
    const temporary = `${this.path}.${Date.now().toString(36)}${Math.random().toString(36).slice(2)}.tmp`;
    await fsp.writeFile(temporary, JSON.stringify(file, null, 1));
    await fsp.rename(temporary, this.path);
  }
}

/** The part of the IndexedDB API {@link IndexedDbTuneStore} uses (no DOM lib in this package). */
interface IdbRequest<T> {
  result: T;
  error: unknown;
  onsuccess: (() => void) | null;
  onerror: (() => void) | null;
}
interface IdbOpenRequest extends IdbRequest<IdbDatabase> {
  onupgradeneeded: (() => void) | null;
}
interface IdbCursor {
  readonly key: unknown;
  readonly value: unknown;
  continue(): void;
}
interface IdbObjectStore {
  put(value: unknown, key: string): IdbRequest<unknown>;
  clear(): IdbRequest<unknown>;
  openCursor(): IdbRequest<IdbCursor | null>;
}
interface IdbTransaction {
  objectStore(name: string): IdbObjectStore;
  oncomplete: (() => void) | null;
  onerror: (() => void) | null;
  onabort: (() => void) | null;
  error: unknown;
}
interface IdbDatabase {
  readonly objectStoreNames: { contains(name: string): boolean };
  createObjectStore(name: string): unknown;
  transaction(store: string, mode: "readonly" | "readwrite"): IdbTransaction;
}
interface IdbFactory {
  open(name: string, version: number): IdbOpenRequest;
}

/**
 * Records in IndexedDB (browsers): database `weft`, object store `autotune` (or `plans`), one
 * record per key. Version 2 of the database has both object stores.
 */
export class IndexedDbTuneStore<R = TuneRecord> implements TuneStore<R> {
  readonly name: string;
  static readonly DATABASE = "weft";
  static readonly STORE = "autotune";
  /** Every object store of the database (created by the version upgrade). */
  static readonly STORES: readonly StoreName[] = ["autotune", "plans"];
  /** The object store this instance reads and writes. */
  readonly store: StoreName;
  #db: Promise<IdbDatabase> | undefined;
  readonly #factory: IdbFactory;

  /** @throws UnsupportedError where there is no IndexedDB and no `factory` is given. */
  constructor(factory?: unknown, store: StoreName = "autotune") {
    const found = factory ?? (globalThis as { indexedDB?: unknown }).indexedDB;
    if (found === undefined) {
      throw new UnsupportedError("an IndexedDB autotune cache (globalThis.indexedDB)", "use MemoryTuneStore here");
    }
    this.#factory = found as IdbFactory;
    this.store = store;
    this.name = store === "autotune" ? "indexeddb" : `indexeddb:${store}`;
  }

  /** Whether this runtime has IndexedDB. */
  static get available(): boolean {
    return (globalThis as { indexedDB?: unknown }).indexedDB !== undefined;
  }

  async loadAll(): Promise<Map<string, R>> {
    const db = await this.#open();
    const tx = db.transaction(this.store, "readonly");
    const request = tx.objectStore(this.store).openCursor();
    const out = new Map<string, R>();
    await new Promise<void>((resolve, reject) => {
      request.onsuccess = () => {
        const cursor = request.result;
        if (cursor === null) return resolve();
        if (typeof cursor.key === "string") out.set(cursor.key, cursor.value as R);
        cursor.continue();
      };
      request.onerror = () => reject(request.error);
    });
    return out;
  }

  async put(key: string, record: R): Promise<void> {
    await this.#write((store) => store.put(record, key));
  }

  async clear(): Promise<void> {
    await this.#write((store) => store.clear());
  }

  async #write(fn: (store: IdbObjectStore) => void): Promise<void> {
    const db = await this.#open();
    const tx = db.transaction(this.store, "readwrite");
    fn(tx.objectStore(this.store));
    await new Promise<void>((resolve, reject) => {
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error);
    });
  }

  #open(): Promise<IdbDatabase> {
    this.#db ??= new Promise<IdbDatabase>((resolve, reject) => {
      const request = this.#factory.open(IndexedDbTuneStore.DATABASE, 2);
      request.onupgradeneeded = () => {
        const db = request.result;
        for (const name of IndexedDbTuneStore.STORES) if (!db.objectStoreNames.contains(name)) db.createObjectStore(name);
      };
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
    return this.#db;
  }
}

/**
 * The store this runtime persists `name` to (default autotune results): a {@link FileTuneStore}
 * in Node (in `directory`, else `$WEFT_CACHE_DIR`, else the OS temp folder), an
 * {@link IndexedDbTuneStore} in browsers, else a {@link MemoryTuneStore}.
 */
export function defaultTuneStore<R = TuneRecord>(directory?: string, name: StoreName = "autotune"): TuneStore<R> {
  if (FileTuneStore.available) return new FileTuneStore<R>(directory, name);
  if (IndexedDbTuneStore.available) return new IndexedDbTuneStore<R>(undefined, name);
  return new MemoryTuneStore<R>();
}
