import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AutotuneKey } from "./autotune-key.js";
import { TuneCache } from "./tune-cache.js";
import { FileTuneStore, MemoryTuneStore, defaultTuneStore } from "./tune-store.js";
import type { TuneRecord } from "./tune-store.js";
import { LIBRARY_VERSION } from "./version.js";

const folders: string[] = [];
function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), "weft-tune-test-"));
  folders.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of folders.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const key = AutotuneKey.of({ shapes: [[64, 64], [64, 64]], dtypes: ["f32", "f32"] });
const record: TuneRecord = { fastest: "tiled-4x4", candidates: [{ name: "naive", bestMs: 3 }, { name: "tiled-4x4", bestMs: 1 }] };

describe("TuneCache generation", () => {
  it("changes when a result is stored, when persisted results load and when the cache is cleared; reads leave it", async () => {
    const directory = folder();
    await new TuneCache({ adapter: "gpu-a", directory }).set("matmul", key, record);
    const cache = new TuneCache({ adapter: "gpu-a", directory });
    const seen = [cache.generation];
    await cache.load();
    seen.push(cache.generation);
    cache.get("matmul", key);
    seen.push(cache.generation);
    await cache.set("matmul", AutotuneKey.of({ shapes: [[8, 8]], dtypes: ["f32"] }), record);
    seen.push(cache.generation);
    await cache.clear();
    seen.push(cache.generation);
    expect(seen[1], "load").not.toBe(seen[0]);
    expect(seen[2], "a read").toBe(seen[1]);
    expect(seen[3], "set").not.toBe(seen[2]);
    expect(seen[4], "clear").not.toBe(seen[3]);
  });
});

describe("TuneCache persistence", () => {
  it("round trip: a result written by one cache is read back by a new instance on the same folder", async () => {
    const directory = folder();
    const first = new TuneCache({ adapter: "mesa-llvmpipe", directory });
    await first.load();
    await first.set("matmul", key, record);
    const second = new TuneCache({ adapter: "mesa-llvmpipe", directory });
    expect(second.get("matmul", key), "nothing is visible before load").toBeUndefined();
    await second.load();
    expect(second.get("matmul", key), "the persisted record comes back intact").toEqual(record);
  });

  it("the key includes adapter, kernel key and library version: any difference misses", async () => {
    const directory = folder();
    await new TuneCache({ adapter: "gpu-a", directory }).set("matmul", key, record);
    const otherAdapter = new TuneCache({ adapter: "gpu-b", directory });
    const otherVersion = new TuneCache({ adapter: "gpu-a", version: "9.9.9", directory });
    const same = new TuneCache({ adapter: "gpu-a", directory });
    await Promise.all([otherAdapter.load(), otherVersion.load(), same.load()]);
    expect(otherAdapter.get("matmul", key), "measured on another adapter").toBeUndefined();
    expect(otherVersion.get("matmul", key), "measured by another library version").toBeUndefined();
    expect(same.get("reduce", key), "another kernel").toBeUndefined();
    expect(same.get("matmul", AutotuneKey.of({ shapes: [[64, 64], [64, 64]], dtypes: ["f16", "f16"] })), "another key").toBeUndefined();
    expect(same.get("matmul", key), "the same adapter, kernel, key and version").toEqual(record);
  });

  it("writes of several caches to one folder merge instead of overwriting each other", async () => {
    const directory = folder();
    await new TuneCache({ adapter: "a", directory }).set("k1", key, record);
    await new TuneCache({ adapter: "b", directory }).set("k2", key, record);
    const stored = await new FileTuneStore(directory).loadAll();
    expect(stored.size, "both records are in the file").toBe(2);
  });

  it("a malformed cache file reads as empty and is replaced by the next write", async () => {
    const directory = folder();
    const store = new FileTuneStore(directory);
    await store.clear();
    writeFileSync(store.path, "{ not json");
    const cache = new TuneCache({ adapter: "a", store });
    await cache.load();
    expect(cache.size, "a broken cache is an empty cache").toBe(0);
    await cache.set("k", key, record);
    expect(JSON.parse(readFileSync(store.path, "utf8")).format, "rewritten as a valid file").toBe(1);
  });

  it("in Node the default store is a file in $WEFT_CACHE_DIR or the given folder", () => {
    const directory = folder();
    const store = defaultTuneStore(directory);
    expect(store, "Node has node:fs through process.getBuiltinModule").toBeInstanceOf(FileTuneStore);
    expect((store as FileTuneStore).path, "in the folder the user set").toBe(join(directory, "autotune.json"));
  });

  it("the memory store keeps records for the process only", async () => {
    const store = new MemoryTuneStore();
    await new TuneCache({ adapter: "a", store }).set("k", key, record);
    const again = new TuneCache({ adapter: "a", store });
    await again.load();
    expect(again.get("k", key), "same store object: visible").toEqual(record);
  });

  it("LIBRARY_VERSION matches package.json, so cache keys change with each release", () => {
    const manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
    expect(LIBRARY_VERSION, "version.ts reads package.json through the #manifest import").toBe(manifest.version);
  });
});
