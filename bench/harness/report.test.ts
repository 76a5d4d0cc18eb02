import { describe, expect, it } from "vitest";
import { type Measurement, Report } from "./report.js";

const m = (variant: string, ms: number, value: number, check = "ok"): Measurement => ({
  workload: "w",
  variant,
  method: "latency",
  size: "s",
  status: "ok",
  ms,
  value,
  check,
});

describe("Report.ratio", () => {
  it("inverts times: the faster numerator gets the larger ratio", () => {
    const r = new Report();
    r.ratio("w", "fast vs slow", m("fast", 1, 0), m("slow", 4, 0), { text: "≥ 2", min: 2 }, { time: true });
    expect(r.ratios[0]?.value, "4 ms / 1 ms is 4×").toBe(4);
    expect(r.ratios[0]?.meets).toBe(true);
  });

  it("divides figures directly when they are rates", () => {
    const r = new Report();
    r.ratio("w", "bandwidth", m("a", 1, 50), m("b", 1, 100), { text: "≥ 0.5", min: 0.5 });
    expect(r.ratios[0]?.value).toBe(0.5);
    expect(r.ratios[0]?.meets, "exactly the target meets it").toBe(true);
  });

  it("a wrong result never meets its target, however fast", () => {
    const r = new Report();
    r.ratio("w", "wrong but fast", m("fast", 0.001, 0, "WRONG: rel err 1"), m("slow", 10, 0), { text: "≥ 2", min: 2 }, { time: true });
    expect(r.ratios[0]?.meets, "speed of a wrong answer does not count").toBe(false);
    expect(r.ratios[0]?.note).toMatch(/WRONG/);
  });

  it("records a missing side as no value rather than a made-up one", () => {
    const r = new Report();
    r.ratio("w", "missing", m("a", 1, 1), undefined, { text: "≥ 1", min: 1 }, { time: true });
    expect(r.ratios[0]?.value).toBeUndefined();
    expect(r.ratios[0]?.meets).toBeUndefined();
    expect(r.ratios[0]?.note).toMatch(/denominator/);
  });
});

describe("Report.find", () => {
  it("ignores unavailable rows", () => {
    const r = new Report();
    const log = console.log;
    console.log = () => {};
    try {
      r.add({ workload: "w", variant: "tfjs", method: "latency", size: "s", status: "unavailable: no adapter" });
    } finally {
      console.log = log;
    }
    expect(r.find("w", "tfjs", "latency"), "an unavailable row has no figure to compare").toBeUndefined();
  });
});
