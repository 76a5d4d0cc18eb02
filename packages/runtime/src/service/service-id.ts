/**
 * Device service identity: which device a {@link Client} reaches.
 *
 * @module
 */
import type { ComputeServer } from "@weft/server";

/**
 * The identity of one device's service (its `ComputeServer`), as its clients reach it.
 *
 * @remarks
 * **Why.** Stream ids are the process's, not a device's: stream 3 exists on every device. A
 * {@link StreamModeOverride} therefore keys on `(service, stream)`, so a measurement on one device
 * leaves the same stream of every other device alone (docs/concepts.md#streammode-overrides).
 * **Why branded.** Service ids, stream ids and allocation ids are all numbers; the brand keeps them
 * apart at compile time.
 * **Invariant.** Ids handed out by {@link ServiceId.allocate} are never reused within a process.
 */
export type ServiceId = number & { readonly __brand: "ServiceId" };

/** The next id {@link ServiceId.allocate} hands out. Only grows. */
let nextService = 0;

/**
 * The service id each server was given by {@link ServiceId.of}. A `WeakMap`: an entry lives exactly
 * as long as its server, so the map never keeps a dead device alive.
 */
const byServer = new WeakMap<object, ServiceId>();

/** Functions over {@link ServiceId}. Named like the type so `ServiceId.allocate()` reads as in CubeCL. */
export const ServiceId = {
  /** A fresh service id, distinct from every id handed out before in this process. */
  allocate(): ServiceId {
    return nextService++ as ServiceId;
  },

  /**
   * The service id of `server`: allocated on first use, then the same for every later call, so
   * every {@link Client} of one server agrees on its service without being told.
   */
  of(server: ComputeServer<never> | object): ServiceId {
    let id = byServer.get(server);
    if (id === undefined) {
      id = ServiceId.allocate();
      byServer.set(server, id);
    }
    return id;
  },
};
