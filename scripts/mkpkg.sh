#!/usr/bin/env bash
# scaffold: mkpkg.sh dir name "deps" "description"
set -e
dir=packages/$1; name=$2; deps=$3; desc=$4
mkdir -p $dir/src
depjson=""; refs=""
for d in $deps; do depjson="$depjson\"@weft/$d\": \"0.1.0\","; refs="$refs{ \"path\": \"../$d/tsconfig.lib.json\" },"; done
depjson=${depjson%,}; refs=${refs%,}
cat > $dir/package.json <<J
{
  "name": "$name",
  "version": "0.1.0",
  "description": "$desc",
  "type": "module",
  "license": "MIT",
  "exports": {
    ".": { "types": "./dist/index.d.ts", "import": "./dist/index.js" },
    "./package.json": "./package.json"
  },
  "main": "./dist/index.js",
  "types": "./dist/index.d.ts",
  "files": ["dist", "!dist/**/*.test.*", "!dist/**/*.tsbuildinfo"],
  "sideEffects": false,
  "publishConfig": { "access": "public" },
  "scripts": {
    "build": "rm -rf dist && tsc -b tsconfig.lib.json",
    "typecheck": "tsc -p tsconfig.json",
    "lint": "node ../../scripts/lint-deps.mjs $1",
    "test": "vitest run --reporter=default --reporter=json --outputFile.json=test-results.json"
  },
  "dependencies": { $depjson }
}
J
cat > $dir/tsconfig.lib.json <<J
{
  "extends": "../../tsconfig.base.json",
  "compilerOptions": {
    "composite": true,
    "rootDir": "src",
    "outDir": "dist",
    "tsBuildInfoFile": "dist/tsconfig.lib.tsbuildinfo",
    "types": ["node"]
  },
  "include": ["src/**/*.ts"],
  "exclude": ["src/**/*.test.ts"],
  "references": [$refs]
}
J
cat > $dir/tsconfig.json <<J
{
  "extends": "../../tsconfig.base.json",
  "compilerOptions": { "noEmit": true, "types": ["node"] },
  "include": ["src/**/*.ts", "vitest.config.ts"]
}
J
cat > $dir/vitest.config.ts <<J
import { defineConfig } from "vitest/config";

export default defineConfig({ test: { include: ["src/**/*.test.ts"], environment: "node" } });
J
