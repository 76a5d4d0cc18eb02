/**
 * The message a Node user gets when Dawn is needed: `webgpu` is an optional peer, so a CPU-only or
 * browser install leaves it out and the first WebGPU request must say how to add it.
 */
import { describe, expect, it } from "vitest";
import { UnsupportedError } from "@weft/environment";
import { WEBGPU_PEER_RANGE, webGpuPackageError } from "./gpu-provider.js";

/** The error Node's ESM loader raises for a package that is not installed. */
async function notFound(specifier: string): Promise<unknown> {
  try {
    await import(/* @vite-ignore */ specifier);
  } catch (error) {
    return error;
  }
  throw new Error(`${specifier} unexpectedly resolved`);
}

describe("loading the optional webgpu peer", () => {
  it("the peer range is package.json's", async () => {
    const manifest = (await import("../../package.json", { with: { type: "json" } })).default as { peerDependencies: { webgpu: string } };
    expect(WEBGPU_PEER_RANGE).toBe(manifest.peerDependencies.webgpu);
  });

  it("a missing 'webgpu' package names the install command and the CPU fallback", () => {
    const cause = Object.assign(new Error("Cannot find package 'webgpu' imported from /app/node_modules/@weft/backend-webgpu/dist/device/gpu-provider.js"), {
      code: "ERR_MODULE_NOT_FOUND",
    });
    const error = webGpuPackageError(cause);
    expect(error).toBeInstanceOf(UnsupportedError);
    expect(error.message, "says it is an optional peer that is not installed").toContain("optional peer package 'webgpu'");
    expect(error.message, "gives the command with the supported range").toContain(`npm install webgpu@${WEBGPU_PEER_RANGE}`);
    expect(error.message, "names the fallback").toContain("CPU backend");
    expect(error.cause).toBe(cause);
  });

  it("a package that is installed but fails to load is not reported as missing", async () => {
    const cause = await notFound("weft-no-such-package-for-this-test");
    const error = webGpuPackageError(new Error(`dlopen failed: libEGL.so.1: cannot open shared object file (${String(cause)})`));
    expect(error.message, "names the load failure").toContain("installed but could not be loaded");
    expect(error.message).toContain("libEGL.so.1");
  });

  it("Node's own not-found error for another package is not taken for a missing webgpu", async () => {
    const cause = await notFound("weft-no-such-package-for-this-test");
    expect((cause as { code?: string }).code, "Node's loader error code").toBe("ERR_MODULE_NOT_FOUND");
    expect(webGpuPackageError(cause).message).toContain("installed but could not be loaded");
  });
});
