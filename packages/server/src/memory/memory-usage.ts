import type { MemoryUsage } from "../compute-server.js";

/**
 * The memory report of a server with several streams: the sum of each stream's manager's report,
 * plus `extraReserved` bytes of device memory the server holds outside its managers (buffers its
 * shared storage retains for reuse). The one place a server's report is added up.
 */
export function totalMemoryUsage<S>(streams: Iterable<S>, usage: (stream: S) => MemoryUsage, extraReserved = 0): MemoryUsage {
  const total = { bytesInUse: 0, bytesReserved: extraReserved, pages: 0, slices: 0, liveAllocations: 0, streams: 0 };
  for (const s of streams) {
    const u = usage(s);
    total.bytesInUse += u.bytesInUse;
    total.bytesReserved += u.bytesReserved;
    total.pages += u.pages;
    total.slices += u.slices;
    total.liveAllocations += u.liveAllocations;
    total.streams += u.streams;
  }
  return total;
}
