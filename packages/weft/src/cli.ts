#!/usr/bin/env node
/**
 * The `weft` executable (`bin` in package.json): runs {@link main} with the process's arguments
 * and exits with its code.
 *
 * @module
 */
import { main } from "./cli/main.js";

const code = await main(process.argv.slice(2), process.stdout, process.stderr);
process.exitCode = code;
