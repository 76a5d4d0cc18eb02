import { UnsupportedError } from "@weft/environment";
import type { CubeCount } from "@weft/server";
import type { DeviceProfile } from "../codegen/wgsl/types.js";

/**
 * A 1-D grid of `groups` workgroups laid out in 2-D when it exceeds the per-dimension limit.
 * Kernels recover the linear group as `wid.y * nwg.x + wid.x` ({@link LINEAR_GROUP}).
 */
export function dispatch1d(groups: number, profile: DeviceProfile, op: string): CubeCount {
  const max = profile.maxWorkgroupsPerDimension;
  if (groups <= max) return [Math.max(1, groups), 1, 1];
  const y = Math.ceil(groups / max);
  if (y > max) throw new UnsupportedError(`${op} dispatching ${groups} workgroups`, `more than ${max}² workgroups; split the tensor`);
  return [max, y, 1];
}

/** WGSL expression of the linear workgroup index of a {@link dispatch1d} grid. */
export const LINEAR_GROUP = "(wid.y * nwg.x + wid.x)";

/** The builtins every 1-D kernel's entry point declares. */
export const ENTRY_PARAMS =
  "@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32";
