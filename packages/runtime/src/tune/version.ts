import manifest from "#manifest" with { type: "json" };

/**
 * The library version autotune results are keyed by: a new release may change kernels, so
 * results measured by another version are never reused. Read from this package's package.json,
 * so `changeset version` changes it with the release.
 */
export const LIBRARY_VERSION: string = manifest.version;
