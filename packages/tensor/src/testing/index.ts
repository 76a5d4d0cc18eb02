/**
 * `@weft/tensor/testing`: the conformance kit ({@link describeBackend}) every backend runs against
 * the unfused CPU oracle, and the pieces it is built from (case catalogue, tolerances, host data,
 * the vitest-free runner). `describeBackend` runs under vitest; everything else is also exported,
 * without vitest, from `@weft/tensor/testing/core`.
 *
 * @module
 */
export { describeBackend } from "./describe-backend.js";
export type { DescribeBackendOptions } from "./describe-backend.js";
export { conformanceCases, reductionTolerance, inputDType, ELEMENTWISE, TRANSCENDENTAL, TRIG, APPROX, RANDN, LARGE_ELEMENTWISE_LOG2, LARGE_REDUCTION_LOG2 } from "./cases.js";
export type { ConformanceCase, ConformanceCatalogueOptions } from "./cases.js";
export { EXACT, compareArrays, generate, prng, hashName } from "./host-data.js";
export type { InputSpec, InputKind, Tolerance } from "./host-data.js";
export { runConformanceCase, evaluateCase, compareOutputs, planCase, checkReleased } from "./run-case.js";
export type { CaseOutput, ConformanceResult, RunCaseOptions, CaseSelection, CasePlan } from "./run-case.js";
export { thresholdCases } from "./cases-thresholds.js";
export type { ThresholdOptions } from "./cases-thresholds.js";
export { generateProgram, runProgram, compareRuns, minimize, formatProgram, runDifferential, formatFailure, programSeed, stepInputs } from "./random-programs.js";
export type { Program, Step, Facts, ProgramOptions, ProgramRun, ReadResult, Closeness, InputData, BinaryName, ReduceName, DifferentialOptions, DifferentialTarget, DifferentialFailure, DifferentialReport } from "./random-programs.js";
export { badInputCases, environmentBadInputCases, runBadInputCase, createBadInputEnv, disposeBadInputEnv, FIX_WORDS } from "./bad-input.js";
export type { BadInputCase, BadInputEnv, BadInputVerdict } from "./bad-input.js";
export { exactCases, apiExactCases, integerScalarCases, typedArrayCases, mixedEmptyCases, issueCases, signedZeroCases, trigCases, divisionCases, indexErrorCases, runExactCase } from "./cases-api.js";
export type { ExactCase, ExactOutput } from "./cases-api.js";
export { opsExactCases, opsConformanceCases } from "./cases-ops.js";
