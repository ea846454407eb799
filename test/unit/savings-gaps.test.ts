import { describe, expect, it } from "vitest";
import type { PromptBody } from "../../bench/savings-accounting.js";
import { accountAtGap, cheapestOverGaps, gapTable, WRITE_PRICE } from "../../bench/savings-gaps.js";

const MIN = 60_000;
const big = "x".repeat(4000);
const marked = (text: string) => ({ type: "text", text, cache_control: { type: "ephemeral" } });
/** A resumed conversation: turn n re-sends the n − 1 earlier messages and adds one. */
const conversation = (turns: number): PromptBody[][] =>
  Array.from({ length: turns }, (_, t) => [
    {
      model: "m",
      system: [marked(big)],
      messages: Array.from({ length: t + 1 }, (_, i) => ({
        role: i % 2 === 0 ? "user" : "assistant",
        content: [marked(`message ${i} ${big}`)],
      })),
    },
  ]);

describe("accountAtGap: a cache that forgets", () => {
  it("within the lifetime, a turn reads what the turn before it sent", () => {
    const [first, second] = accountAtGap(conversation(2), 2 * MIN, "5m");
    expect(first!.readBytes).toBe(0);
    expect(second!.readBytes).toBeGreaterThan(0);
    expect(second!.writeBytes).toBeLessThan(first!.writeBytes + 5000);
  });

  it("past the lifetime, nothing is read and everything is written again", () => {
    const [first, second] = accountAtGap(conversation(2), 10 * MIN, "5m");
    expect(second!.readBytes).toBe(0);
    expect(second!.writeBytes).toBeGreaterThan(first!.writeBytes);
  });

  it("an hour's lifetime holds across 30 minutes; its writes cost 2× the input price", () => {
    const turns = accountAtGap(conversation(2), 30 * MIN, "1h");
    expect(turns[1]!.readBytes).toBeGreaterThan(0);
    expect(turns.every((t) => t.ttl === "1h")).toBe(true);
    const t = turns[0]!;
    expect(t.billedBytes).toBeCloseTo(t.writeBytes * WRITE_PRICE["1h"] + t.inputBytes, 6);
  });

  it("a hit refreshes the entry: turns 4 minutes apart keep a five-minute cache for 20 minutes", () => {
    const turns = accountAtGap(conversation(6), 4 * MIN, "5m");
    expect(turns.slice(1).every((t) => t.readBytes > 0)).toBe(true);
  });

  it("auto: five minutes on the first turn, an hour once the conversation is active, five again when it went quiet", () => {
    expect(accountAtGap(conversation(3), 10 * MIN, "auto").map((t) => t.ttl)).toEqual([
      "5m",
      "1h",
      "1h",
    ]);
    expect(accountAtGap(conversation(3), 2 * 60 * MIN, "auto").map((t) => t.ttl)).toEqual([
      "5m",
      "5m",
      "5m",
    ]);
  });
});

describe("gapTable", () => {
  it("resumed ÷ cold: a resumed thread against one that re-sends everything as one new message each turn", () => {
    const resume = conversation(5);
    // The cold arm sends the whole thread as one new user message every turn.
    const cold = resume.map(([body]) => [
      {
        model: "m",
        system: body!.system,
        messages: [
          {
            role: "user",
            content: [marked(JSON.stringify(body!.messages))],
          },
        ],
      },
    ]);
    const rows = gapTable({ resume, cold }, [2, 5]);
    const at = (gap: string, lifetime: string) =>
      rows.find((r) => r.gap === gap && r.lifetime === lifetime)!;
    // Within the lifetime the resumed turn reads its history; the cold one cannot.
    expect(at("1 min", "5m").ratioAt[5]).toBeLessThan(0.5);
    // Past five minutes only an hour's cache still helps.
    expect(at("30 min", "5m").ratioAt[5]).toBeGreaterThan(0.9);
    expect(at("30 min", "1h").ratioAt[5]).toBeLessThan(0.5);
    // Past every lifetime nothing is cached for either arm.
    expect(at("1 day", "1h").ratioAt[5]).toBeGreaterThan(0.9);
    expect(cheapestOverGaps(rows).lifetime).toBe("auto");
  });
});
