/**
 * `#manifest` is this package's own package.json (the `imports` field maps it), read for the
 * version so that a release (`changeset version`) changes the version in one place only.
 */
declare module "#manifest" {
  const manifest: { readonly name: string; readonly version: string };
  export default manifest;
}
