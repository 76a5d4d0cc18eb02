#!/usr/bin/env node
/**
 * The `weft` executable (`bin` in package.json): runs {@link main} with the process's arguments
 * and exits with its code — through a child process that filters Dawn's native warnings when the
 * command may load WebGPU (see `cli/native-log.ts`).
 *
 * @module
 */
import { fileURLToPath } from "node:url";
import { main } from "./cli/main.js";
import { runFiltered, wantsNativeFilter } from "./cli/native-log.js";

const argv = process.argv.slice(2);
process.exitCode = wantsNativeFilter(argv, process.env)
  ? await runFiltered(fileURLToPath(import.meta.url), argv)
  : await main(argv, process.stdout, process.stderr);
