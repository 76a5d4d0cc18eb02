/**
 * Bad input and faults against a real `weft serve` process on 127.0.0.1 (one per file, small
 * limits), each with its typed error on the client and nothing left on either side:
 * a wrong or missing token; a forged id (sessions never see each other's tensors); malformed,
 * text and oversized frames; each session limit; a client that disconnects; a dropped connection
 * (through a loopback proxy cut mid-read); a server that hangs (SIGSTOP) or dies (SIGKILL), after
 * which the client can init again. Through all of it the server stays up for the other sessions.
 * Every wait is bounded (polls of at most 5 s).
 */
import { type Server, type Socket, connect, createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setDevice, tensor } from "@weft/tensor";
import {
  RemoteAuthError,
  type RemoteDevice,
  RemoteLimitError,
  RemoteSessionError,
  type ServerMemory,
  type SocketLike,
  createRemoteDevice,
  defaultSocketFactory,
} from "@weft/remote";
import { TensorComputationError } from "@weft/fusion";
import { init } from "../device/init.js";
import { SERVE_TOKEN, type ServeProcess, startServe } from "./serve-process.js";

/**
 * The root of a failed read: a read always rejects with `TensorComputationError` (one class for
 * every failed read, issue 9), whose `root` is the session's `RemoteSessionError`.
 */
function rootOfRead(error: unknown): unknown {
  expect(error, "a failed read rejects with TensorComputationError").toBeInstanceOf(TensorComputationError);
  return (error as TensorComputationError).root;
}

const FRAME = 1 << 20;
const MAX_TENSORS = 256;
const SESSION_BYTES = 8 << 20;

let server: ServeProcess;
let watcher: RemoteDevice;

/** Polls `probe` every 50 ms until it holds, for at most `ms`. */
async function eventually(probe: () => Promise<boolean>, ms = 5_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await probe()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return probe();
}

/** The server device's state as another session sees it. */
async function serverState(): Promise<ServerMemory> {
  const [m] = await watcher.serverMemory();
  if (m === undefined) throw new Error("no memory reply");
  return m;
}

/** A device whose raw socket the test can misuse. */
async function withSocket(url = server.url, timeoutMs = 20_000): Promise<{ device: RemoteDevice; socket: () => SocketLike }> {
  let captured: SocketLike | undefined;
  const device = await createRemoteDevice({
    url,
    token: SERVE_TOKEN,
    heartbeatMs: 200,
    timeoutMs,
    socket: async (u) => (captured = await defaultSocketFactory(u)),
  });
  return { device, socket: () => captured as SocketLike };
}

/** Nothing of any other session is left on the server: only the watcher, holding no tensor. */
async function serverClean(): Promise<boolean> {
  const m = await serverState();
  return m.sessions === 1 && m.device.liveTensors === 0;
}

beforeAll(async () => {
  server = await startServe({ args: ["--max-frame-bytes", String(FRAME), "--max-tensors-per-session", String(MAX_TENSORS), "--max-session-bytes", String(SESSION_BYTES)] });
  watcher = await createRemoteDevice({ url: server.url, token: SERVE_TOKEN });
});

afterAll(async () => {
  watcher?.close();
  await server?.stop();
});

describe("remote: refused at init", () => {
  it("a wrong token is refused with RemoteAuthError", async () => {
    await expect(init({ backend: "remote", url: server.url, token: "nope", log: null })).rejects.toBeInstanceOf(RemoteAuthError);
  });

  it("a missing token is refused with RemoteAuthError", async () => {
    await expect(init({ backend: "remote", url: server.url, log: null })).rejects.toBeInstanceOf(RemoteAuthError);
  });

  it("no server at the address is a RemoteSessionError (connection-lost), and a bad url a ValueError", async () => {
    const probe: Server = createServer();
    await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const refused = await init({ backend: "remote", url: `ws://127.0.0.1:${port}`, token: SERVE_TOKEN, log: null }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RemoteSessionError);
    expect((refused as RemoteSessionError).reason).toBe("connection-lost");
    await expect(init({ backend: "remote", url: "http://x", token: SERVE_TOKEN, log: null })).rejects.toMatchObject({ kind: "value" });
    expect(await eventually(serverClean), "refused connections leave nothing").toBe(true);
  });
});

describe("remote: sessions are isolated", () => {
  it("a forged id (another session's) is rejected and ends only the forging session", async () => {
    const a = await createRemoteDevice({ url: server.url, token: SERVE_TOKEN });
    const b = await createRemoteDevice({ url: server.url, token: SERVE_TOKEN });
    setDevice(a);
    const x = tensor([1, 2, 3]);
    expect(Array.from(await x.data())).toEqual([1, 2, 3]);
    const forged = b.runtime.connections[0]?.read(1); // id 1 is a's tensor, in a's session
    const error = await forged?.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RemoteSessionError);
    expect((error as RemoteSessionError).reason).toBe("protocol");
    expect((error as Error).message).toMatch(/not a live tensor of this session/);
    expect(Array.from(await x.data()), "the other session is untouched").toEqual([1, 2, 3]);
    x.dispose();
    a.close();
    b.close();
    expect(await eventually(serverClean), "both sessions' tensors are freed").toBe(true);
  });
});

describe("remote: malformed and oversized frames close that session only", () => {
  for (const [name, frame] of [
    ["bytes that are not MessagePack", new Uint8Array([0xc1, 0xc1, 0xc1])],
    ["a MessagePack value that is not a batch", new Uint8Array([0x93, 1, 2, 3])],
  ] as const) {
    it(`${name}: pending reads reject with RemoteSessionError (protocol); the server stays up`, async () => {
      const { device, socket } = await withSocket();
      setDevice(device);
      const x = tensor([1, 2]);
      expect(Array.from(await x.data())).toEqual([1, 2]);
      const pending = x.add(1);
      socket().send(frame);
      const error = await pending.data().catch(rootOfRead);
      expect(error).toBeInstanceOf(RemoteSessionError);
      expect((error as RemoteSessionError).reason).toBe("protocol");
      expect(await x.data().catch(rootOfRead), "every later read fails the same way").toBeInstanceOf(RemoteSessionError);
      x.dispose();
      pending.dispose();
      expect(device.memory().liveHandles, "the client holds nothing once disposed").toBe(0);
      expect(await eventually(serverClean), "the server freed the session").toBe(true);
    });
  }

  it("an operation whose shapes do not fit is refused (protocol), not run", async () => {
    const { device, socket } = await withSocket();
    setDevice(device);
    const x = tensor([1, 2, 3]);
    expect(Array.from(await x.data())).toEqual([1, 2, 3]);
    const { encodeMessage } = await import("@weft/remote");
    const bad = { kind: "binary", op: "add", lhs: { id: 1, shape: [3], dtype: "f32", status: "ReadOnly" }, rhs: { id: 1, shape: [3], dtype: "f32", status: "ReadOnly" }, out: { id: 99, shape: [1000000], dtype: "f32", status: "NotInit" } };
    socket().send(encodeMessage({ t: "batch", items: [{ k: "op", s: 0, op: bad }, { k: "read", req: 999, id: 99 }] }));
    const error = await x.data().catch(rootOfRead);
    expect(error).toBeInstanceOf(RemoteSessionError);
    expect((error as Error).message).toMatch(/the inputs give \[3\]/);
    x.dispose();
    expect(await eventually(serverClean)).toBe(true);
  });

  it("an upload larger than the server's frame limit is refused at the call with RemoteLimitError", async () => {
    const device = await createRemoteDevice({ url: server.url, token: SERVE_TOKEN });
    setDevice(device);
    expect(() => tensor(new Float32Array(FRAME / 4 + 16))).toThrow(RemoteLimitError);
    const x = tensor([5]);
    expect(Array.from(await x.data()), "the session goes on").toEqual([5]);
    x.dispose();
    device.close();
    expect(await eventually(serverClean)).toBe(true);
  });

  it("a raw frame over the limit closes the session with frame-too-large", async () => {
    const { device, socket } = await withSocket();
    setDevice(device);
    const x = tensor([1]);
    await x.data();
    socket().send(new Uint8Array(FRAME + 1024));
    const error = await x.data().catch(rootOfRead);
    expect(error).toBeInstanceOf(RemoteSessionError);
    expect((error as RemoteSessionError).reason).toBe("frame-too-large");
    x.dispose();
    expect(await eventually(serverClean)).toBe(true);
  });
});

describe("remote: session limits", () => {
  it(`more than ${MAX_TENSORS} live tensors ends the session with a limit error naming maxTensorsPerSession`, async () => {
    const device = await createRemoteDevice({ url: server.url, token: SERVE_TOKEN });
    setDevice(device);
    const xs = Array.from({ length: MAX_TENSORS + 1 }, (_, i) => tensor([i]));
    const error = await (xs[0] as ReturnType<typeof tensor>).data().catch(rootOfRead);
    expect(error).toBeInstanceOf(RemoteSessionError);
    expect((error as RemoteSessionError).reason).toBe("limit");
    expect((error as RemoteSessionError).limit).toBe("maxTensorsPerSession");
    for (const x of xs) x.dispose();
    expect(device.memory().liveHandles).toBe(0);
    expect(await eventually(serverClean)).toBe(true);
  });

  it("more bytes than maxSessionBytes ends the session with a limit error naming it", async () => {
    const device = await createRemoteDevice({ url: server.url, token: SERVE_TOKEN });
    setDevice(device);
    const big = tensor(new Float32Array(200_000)); // 800 KB, under the frame limit
    const many = Array.from({ length: 12 }, () => big.add(1)); // 12 × 800 KB > 8 MiB
    const error = await (many[11] as ReturnType<typeof tensor>).data().catch(rootOfRead);
    expect((error as RemoteSessionError).limit).toBe("maxSessionBytes");
    for (const t of [big, ...many]) t.dispose();
    expect(await eventually(serverClean)).toBe(true);
  });
});

describe("remote: disconnects and dead servers", () => {
  it("a client that disconnects has all its server-side tensors freed", async () => {
    const { device, socket } = await withSocket();
    setDevice(device);
    const xs = Array.from({ length: 10 }, (_, i) => tensor([i, i]));
    await (xs[9] as ReturnType<typeof tensor>).data();
    expect((await serverState()).device.liveTensors, "the server holds the client's tensors").toBeGreaterThanOrEqual(10);
    socket().close(1000, "client going away");
    expect(await eventually(serverClean), "…and frees them when it leaves").toBe(true);
    for (const x of xs) x.dispose();
  });

  it("a dropped connection rejects every pending read with connection-lost within seconds", async () => {
    const sockets = new Set<Socket>();
    // A loopback TCP proxy in front of the server, whose sockets the test cuts mid-read.
    const proxy = createServer((client: Socket) => {
      const up = connect(server.port, "127.0.0.1");
      sockets.add(client).add(up);
      client.pipe(up).pipe(client);
      client.on("error", () => undefined);
      up.on("error", () => undefined);
    });
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
    const url = `ws://127.0.0.1:${(proxy.address() as { port: number }).port}`;
    const { device } = await withSocket(url);
    setDevice(device);
    const x = tensor([1, 2]);
    expect(Array.from(await x.data())).toEqual([1, 2]);
    process.kill(server.child.pid as number, "SIGSTOP"); // hold the read pending
    const started = Date.now();
    const reading = x.add(1).data();
    for (const s of sockets) s.destroy();
    const error = await reading.catch(rootOfRead);
    process.kill(server.child.pid as number, "SIGCONT");
    expect(error).toBeInstanceOf(RemoteSessionError);
    expect((error as RemoteSessionError).reason).toBe("connection-lost");
    expect(Date.now() - started, "noticed at once").toBeLessThan(5_000);
    await new Promise<void>((r) => proxy.close(() => r()));
    expect(await eventually(serverClean), "the server freed the dropped session").toBe(true);
  });

  it("a server that stops answering rejects pending reads after the client's timeout", async () => {
    const { device } = await withSocket(server.url, 1_500);
    setDevice(device);
    const x = tensor([3]);
    await x.data();
    process.kill(server.child.pid as number, "SIGSTOP");
    const started = Date.now();
    const error = await x.data().catch(rootOfRead);
    process.kill(server.child.pid as number, "SIGCONT");
    expect(error).toBeInstanceOf(RemoteSessionError);
    expect((error as RemoteSessionError).reason).toBe("connection-lost");
    expect(Date.now() - started).toBeLessThan(5_000);
    x.dispose();
    expect(await eventually(serverClean), "the server, running again, frees the session").toBe(true);
  });

  it("the server stayed up through every misbehaving client, then dies: pending reads reject, and init works again elsewhere", async () => {
    expect(server.child.exitCode, "the server is still running").toBeNull();
    const device = await createRemoteDevice({ url: server.url, token: SERVE_TOKEN });
    setDevice(device);
    const x = tensor([4]);
    await x.data();
    process.kill(server.child.pid as number, "SIGSTOP");
    const reading = x.mul(2).data();
    const started = Date.now();
    process.kill(server.child.pid as number, "SIGKILL");
    const error = await reading.catch(rootOfRead);
    expect(error).toBeInstanceOf(RemoteSessionError);
    expect(Date.now() - started).toBeLessThan(5_000);
    watcher.close();
    const replacement = await startServe();
    try {
      const again = await init({ backend: "remote", url: replacement.url, token: SERVE_TOKEN, log: null });
      const y = tensor([1, 2], { device: again });
      expect(Array.from(await y.mul(3).data())).toEqual([3, 6]);
    } finally {
      await replacement.stop();
    }
  });
});

