import manifest from "#manifest" with { type: "json" };

/**
 * The version of `@weft/weft`, read from its package.json (so `changeset version` changes it with
 * the release); `weft --version` prints it. Every `@weft` package carries the same version (one
 * fixed release group).
 */
export const VERSION: string = manifest.version;
