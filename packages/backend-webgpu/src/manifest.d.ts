/**
 * `#manifest` is this package's own package.json (the `imports` field maps it), read for the
 * `webgpu` peer range that the "install webgpu" message names.
 */
declare module "#manifest" {
  const manifest: { readonly name: string; readonly version: string; readonly peerDependencies: { readonly webgpu: string } };
  export default manifest;
}
