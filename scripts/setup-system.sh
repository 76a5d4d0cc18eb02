#!/usr/bin/env bash
# Installs the Debian packages software WebGPU needs (Dawn on Mesa's OpenGL ES: libegl1,
# libegl-mesa0, libgles2) and Chromium for the browser suite, when they are missing.
# Needs root (CI and our machines run as root); without root it only reports what is missing.
set -euo pipefail
need=()
for p in libegl1 libegl-mesa0 libgles2 chromium; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ "${#need[@]}" -eq 0 ]; then exit 0; fi
if [ "$(id -u)" != 0 ]; then
  echo "setup-system: missing Debian packages: ${need[*]} (run as root: apt-get install ${need[*]})" >&2
  exit 0
fi
echo "setup-system: installing ${need[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
