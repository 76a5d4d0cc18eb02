import { UnsupportedError } from "@weft/environment";
import type { DType } from "@weft/fusion";

/**
 * A value type inside a kernel: a scalar dtype, or a `vec4` of it when the kernel is vectorised.
 * `bool` is a WGSL `bool` in registers and a `u32` in buffers.
 */
export interface ValueType {
  readonly dtype: DType;
  /** 1 (scalar) or 4 (`vec4`). */
  readonly width: 1 | 4;
}

/** The WGSL scalar type used in registers for `dtype`. */
export function wgslScalar(dtype: DType): string {
  return dtype === "bool" ? "bool" : dtype;
}

/** The WGSL type of a value in registers (`f32`, `vec4<f32>`, `bool`, `vec4<bool>`). */
export function wgslType(t: ValueType): string {
  const s = wgslScalar(t.dtype);
  return t.width === 1 ? s : `vec4<${s}>`;
}

/** The WGSL element type of a storage buffer holding `dtype` (`bool` is stored as `u32`). */
export function storageElement(dtype: DType, width: 1 | 4): string {
  const s = dtype === "bool" ? "u32" : dtype;
  return width === 1 ? s : `vec4<${s}>`;
}

/** Whether `dtype` is a floating-point type. */
export function isFloat(dtype: DType): boolean {
  return dtype === "f32" || dtype === "f16";
}

/**
 * What a generated kernel may assume about the device: sizes from its limits, and its features.
 *
 * @remarks
 * **Why.** Compatibility-mode and software adapters have small limits (workgroup size ≤ 128 on the
 * Mesa GLES adapter); codegen reads them here instead of assuming desktop values. The profile's
 * {@link DeviceProfile.key} goes into every kernel key, so two devices never share a pipeline that
 * depends on a limit.
 * **Invariant.** `workgroupSize` is a power of two ≤ the device's `maxComputeInvocationsPerWorkgroup`
 * and `maxComputeWorkgroupSizeX`.
 */
export interface DeviceProfile {
  /** Threads per workgroup for 1-D kernels (power of two). */
  readonly workgroupSize: number;
  /** `maxComputeWorkgroupsPerDimension`. */
  readonly maxWorkgroupsPerDimension: number;
  /** `maxStorageBuffersPerShaderStage`. */
  readonly maxStorageBuffers: number;
  /** `maxComputeWorkgroupStorageSize` in bytes. */
  readonly maxWorkgroupStorage: number;
  /** `maxComputeInvocationsPerWorkgroup`. */
  readonly maxInvocations: number;
  /** Whether `shader-f16` is enabled. */
  readonly f16: boolean;
  /** Canonical text of everything above, for kernel keys. */
  readonly key: string;
}

/** The subset of `GPUSupportedLimits` a {@link DeviceProfile} is derived from. */
export interface ProfileLimits {
  readonly maxComputeInvocationsPerWorkgroup: number;
  readonly maxComputeWorkgroupSizeX: number;
  readonly maxComputeWorkgroupsPerDimension: number;
  readonly maxStorageBuffersPerShaderStage: number;
  readonly maxComputeWorkgroupStorageSize: number;
}

/**
 * The 1-D workgroup size kernels use where the device allows it: 256 (8 warps / 4 wavefronts) keeps
 * enough invocations resident per SM/CU to hide memory latency on desktop GPUs (the H200 included),
 * while compatibility-mode adapters (≤ 128 invocations) are capped to their limits.
 */
export const PREFERRED_WORKGROUP_SIZE = 256;

/**
 * Builds a {@link DeviceProfile}; `preferred` caps the 1-D workgroup size (default
 * `PREFERRED_WORKGROUP_SIZE`, lowered to the device's `maxComputeInvocationsPerWorkgroup`
 * and `maxComputeWorkgroupSizeX`).
 */
export function deviceProfile(limits: ProfileLimits, features: { has(name: string): boolean }, preferred = PREFERRED_WORKGROUP_SIZE): DeviceProfile {
  let wg = 1;
  const cap = Math.min(preferred, limits.maxComputeInvocationsPerWorkgroup, limits.maxComputeWorkgroupSizeX);
  while (wg * 2 <= cap) wg *= 2;
  const f16 = features.has("shader-f16");
  const profile = {
    workgroupSize: wg,
    maxWorkgroupsPerDimension: limits.maxComputeWorkgroupsPerDimension,
    maxStorageBuffers: limits.maxStorageBuffersPerShaderStage,
    maxWorkgroupStorage: limits.maxComputeWorkgroupStorageSize,
    maxInvocations: limits.maxComputeInvocationsPerWorkgroup,
    f16,
  };
  return { ...profile, key: `wg${wg}|d${profile.maxWorkgroupsPerDimension}|sb${profile.maxStorageBuffers}|ws${profile.maxWorkgroupStorage}|f16${f16 ? 1 : 0}` };
}

/** Throws when `dtype` is `f16` and the device lacks `shader-f16`. */
export function checkDType(dtype: DType, profile: DeviceProfile, op: string): void {
  if (dtype === "f16" && !profile.f16) {
    throw new UnsupportedError("f16 on an adapter without shader-f16", `${op} needs f16; use f32, or a device with shader-f16`);
  }
}

/** A WGSL literal of `value` as `t` (non-finite floats through `bitcast`). */
export function literal(value: number, t: ValueType): string {
  const s = scalarLiteral(value, t.dtype);
  return t.width === 1 ? s : `${wgslType(t)}(${s})`;
}

function scalarLiteral(value: number, dtype: DType): string {
  switch (dtype) {
    case "bool":
      return value !== 0 ? "true" : "false";
    case "u32":
      return `${value >>> 0}u`;
    case "i32": {
      const v = value | 0;
      return v === -2147483648 ? "i32(-2147483647 - 1)" : `${v}i`;
    }
    case "f32":
    case "f16": {
      const v = dtype === "f32" ? Math.fround(value) : value;
      if (!Number.isFinite(v)) {
        const bits = Number.isNaN(v) ? "0x7fc00000u" : v > 0 ? "0x7f800000u" : "0xff800000u";
        return dtype === "f32" ? `${NONFINITE}(${bits})` : `f16(${NONFINITE}(${bits}))`;
      }
      let text = v.toString();
      if (!/[.e]/.test(text)) text += ".0";
      return `${text}${dtype === "f32" ? "f" : "h"}`;
    }
    default:
      return dtype satisfies never;
  }
}

/**
 * Name of the helper that makes non-finite floats. WGSL constant evaluation rejects `inf`/`NaN`
 * (`bitcast<f32>(0x7f800000u)` of a literal is a compile error), but a user function's result is
 * never a constant expression, so the value is built at run time.
 */
export const NONFINITE = "weft_nonfinite";

/** Prepends the {@link NONFINITE} helper to `source` when the kernel uses it (emit only what is used). */
export function finishSource(source: string): string {
  if (!source.includes(`${NONFINITE}(`)) return source;
  const helper = `fn ${NONFINITE}(bits: u32) -> f32 {\n  return bitcast<f32>(bits);\n}\n\n`;
  const enable = source.startsWith("enable f16;\n\n") ? "enable f16;\n\n" : "";
  return enable + helper + source.slice(enable.length);
}
