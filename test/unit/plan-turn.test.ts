import { describe, expect, it } from "vitest";
import { decidePlanTurn, type PlanInput, type PlanTurn } from "../../src/core/plan-turn.js";

const base: PlanInput = {
  request: null,
  lastTurnPlanned: false,
  hasPriorTurn: false,
  setting: undefined,
};

describe("decidePlanTurn", () => {
  it.each<{ name: string; input: Partial<PlanInput>; turn: PlanTurn }>([
    { name: "a first turn, no ask", input: {}, turn: { plan: false, approved: false } },
    { name: "/plan", input: { request: "plan" }, turn: { plan: true, why: "asked" } },
    {
      name: "/plan on a follow-up",
      input: { request: "plan", hasPriorTurn: true },
      turn: { plan: true, why: "asked" },
    },
    {
      name: "a follow-up of a plan that says neither is still planning",
      input: { lastTurnPlanned: true, hasPriorTurn: true },
      turn: { plan: true, why: "still_planning" },
    },
    {
      name: "/go after a plan approves it",
      input: { request: "go", lastTurnPlanned: true, hasPriorTurn: true },
      turn: { plan: false, approved: true },
    },
    {
      name: "/go with no plan before is an ordinary turn",
      input: { request: "go", hasPriorTurn: true },
      turn: { plan: false, approved: false },
    },
    {
      name: "plan: always makes a first turn a plan",
      input: { setting: "always" },
      turn: { plan: true, why: "always" },
    },
    {
      name: "plan: always leaves a follow-up of an acting turn alone",
      input: { setting: "always", hasPriorTurn: true },
      turn: { plan: false, approved: false },
    },
    {
      name: "plan: always and /go on the first turn acts",
      input: { setting: "always", request: "go" },
      turn: { plan: false, approved: false },
    },
    {
      name: "plan: off",
      input: { setting: "off" },
      turn: { plan: false, approved: false },
    },
  ])("$name", ({ input, turn }) => {
    expect(decidePlanTurn({ ...base, ...input })).toEqual(turn);
  });
});
