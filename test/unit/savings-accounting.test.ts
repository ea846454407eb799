/**
 * The savings benchmark's billing rule (bench/savings-accounting.ts): whole-block prefixes
 * repeated from any earlier request of the same model are cache reads at 0.1×, the rest is
 * input at 1×, writes optionally at 1.25×, and the floor of a resumed turn.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  accountRequests,
  cacheOrder,
  tokens,
  type PromptBody,
} from "../../bench/savings-accounting.js";

const CC = { type: "ephemeral" };
const text = (t: string, marked = false) => ({
  type: "text",
  text: t,
  ...(marked ? { cache_control: CC } : {}),
});
const tool = (name: string) => ({
  name,
  description: `The ${name} tool.`,
  input_schema: { type: "object" },
});
const bytesOf = (block: Record<string, unknown>) => {
  const { cache_control: _cc, ...rest } = block;
  return Buffer.byteLength(JSON.stringify(rest));
};

const TOOLS = [tool("Bash"), tool("Read")];
const SYSTEM = [text("You are Claude Code."), text("Standing instructions.", true)];
const base = (messages: PromptBody["messages"], model = "m"): PromptBody => ({
  model,
  tools: TOOLS,
  system: SYSTEM,
  messages,
});
const prefixBytes =
  TOOLS.reduce((n, t) => n + bytesOf(t), 0) + SYSTEM.reduce((n, s) => n + bytesOf(s), 0);

// A session as the CLI sends it: turn 1, then a resume that carries turn 1 and its answer.
const Q1 = "first question, long enough to matter ".repeat(20);
const A1 = "the first answer";
const Q2 = "the second question";
const turn1 = base([{ role: "user", content: [text(Q1, true)] }]);
const turn2 = base([
  { role: "user", content: Q1 }, // the same text, now a plain string without the marker
  { role: "assistant", content: [text(A1)] },
  { role: "user", content: [text(Q2, true)] },
]);

describe("cacheOrder", () => {
  it("puts tools first, then system, then message blocks, strings read as one text block", () => {
    const blocks = cacheOrder({ ...turn2, system: "one string" });
    expect(blocks.map((b) => `${b.section}/${b.role ?? "-"}/${b.message ?? "-"}`)).toEqual([
      "tools/-/-",
      "tools/-/-",
      "system/-/-",
      "messages/user/0",
      "messages/assistant/1",
      "messages/user/2",
    ]);
    expect(blocks[2]!.bytes).toBe(bytesOf(text("one string")));
    expect(blocks.map((b) => b.breakpoint)).toEqual([false, false, false, false, false, true]);
  });

  it("ignores cache_control and key order when telling blocks apart", () => {
    const [a] = cacheOrder({ messages: [{ role: "user", content: [text("x", true)] }] });
    const [b] = cacheOrder({
      messages: [{ role: "user", content: [{ text: "x", type: "text" }] }],
    });
    const [c] = cacheOrder({ messages: [{ role: "user", content: "x" }] });
    const [d] = cacheOrder({ messages: [{ role: "assistant", content: "x" }] });
    expect(a!.key).toBe(b!.key);
    expect(a!.key).toBe(c!.key);
    expect(a!.key).not.toBe(d!.key);
  });
});

describe("accountRequests", () => {
  it("first request: nothing read, everything input, written up to the last breakpoint", () => {
    const [r] = accountRequests([turn1]);
    const q1 = bytesOf(text(Q1));
    expect(r).toMatchObject({
      totalBytes: prefixBytes + q1,
      readBytes: 0,
      uncachedBytes: prefixBytes + q1,
      writeBytes: prefixBytes + q1,
      newMessageBytes: q1,
      priorBytes: prefixBytes,
      billedBytes: prefixBytes + q1,
    });
    expect(r!.billedWithWritesBytes).toBeCloseTo((prefixBytes + q1) * 1.25);
  });

  it("a resumed turn reads everything up to the earlier answer; it is within a hair of its floor", () => {
    const [, r] = accountRequests([turn1, turn2]);
    const q1 = bytesOf(text(Q1));
    const a1 = bytesOf(text(A1));
    const q2 = bytesOf(text(Q2));
    expect(r!.readBytes).toBe(prefixBytes + q1);
    expect(r!.strictReadBytes).toBe(prefixBytes + q1); // turn 1 had its breakpoint there
    expect(r!.uncachedBytes).toBe(a1 + q2);
    expect(r!.writeBytes).toBe(a1 + q2);
    expect(r!.newMessageBytes).toBe(q2);
    expect(r!.priorBytes).toBe(prefixBytes + q1 + a1);
    expect(r!.billedBytes).toBeCloseTo((prefixBytes + q1) * 0.1 + a1 + q2);
    expect(r!.floorBytes).toBeCloseTo((prefixBytes + q1 + a1) * 0.1 + q2);
    // The only gap to the floor is the earlier answer, which no request had sent before.
    expect(r!.billedBytes - r!.floorBytes).toBeCloseTo(a1 * 0.9);
  });

  const cold = (thread: string) => base([{ role: "user", content: [text(thread, true)] }]);
  const cases: Array<{
    name: string;
    requests: PromptBody[];
    read: number;
    strict?: number;
  }> = [
    {
      name: "a cold prompt that starts like the last one but is longer: only tools and system",
      requests: [
        cold("issue body " + "x".repeat(500)),
        cold("issue body " + "x".repeat(500) + " more"),
      ],
      read: prefixBytes,
    },
    {
      name: "an identical request: all of it",
      requests: [turn1, turn1],
      read: prefixBytes + bytesOf(text(Q1)),
    },
    {
      name: "another model: nothing",
      requests: [turn1, { ...turn1, model: "other" }],
      read: 0,
    },
    {
      name: "a changed tool: nothing after it (tools come first)",
      requests: [turn1, { ...turn1, tools: [tool("Bash"), tool("Write")] }],
      read: bytesOf(tool("Bash")),
      strict: 0, // no breakpoint after the first tool
    },
    {
      name: "a changed system block: the tools only",
      requests: [turn1, { ...turn1, system: [text("You are Claude Code."), text("Other.", true)] }],
      read: prefixBytes - bytesOf(text("Standing instructions.")),
      strict: 0,
    },
    {
      name: "a prefix from any earlier request, not only the last one",
      requests: [turn1, { ...turn1, model: "other" }, turn2],
      read: prefixBytes + bytesOf(text(Q1)),
    },
    {
      name: "whole blocks only: a longer block sharing its start is not read",
      requests: [
        base([{ role: "user", content: [text("abc", true)] }]),
        base([{ role: "user", content: [text("abcdef", true)] }]),
      ],
      read: prefixBytes,
    },
    {
      name: "strict: a shared prefix past the earlier breakpoint is read by the rule, not by strict",
      requests: [
        base([{ role: "user", content: [text("reminder"), text("q1", true)] }]),
        base([{ role: "user", content: [text("reminder"), text("q2", true)] }]),
      ],
      read: prefixBytes + bytesOf(text("reminder")),
      strict: prefixBytes,
    },
  ];
  it.each(cases)("$name", ({ requests, read, strict }) => {
    const last = accountRequests(requests).at(-1)!;
    expect(last.readBytes).toBe(read);
    expect(last.strictReadBytes).toBe(strict ?? read);
    expect(last.billedBytes).toBeCloseTo(read * 0.1 + (last.totalBytes - read));
  });

  it("a last message that is not the user's has no floor of its own", () => {
    const [r] = accountRequests([base([{ role: "assistant", content: "hi" }])]);
    expect(r!.newMessageBytes).toBe(0);
    expect(r!.floorBytes).toBeCloseTo(r!.totalBytes * 0.1);
  });

  it("tokens are bytes ÷ 4", () => {
    expect(tokens(4000)).toBe(1000);
  });

  it("holds its bounds for any sequence of requests", () => {
    const block = fc.record({
      text: fc.constantFrom("a", "b", "c", "long text ".repeat(10)),
      marked: fc.boolean(),
    });
    const message = fc.record({
      role: fc.constantFrom("user", "assistant"),
      content: fc.array(block, { minLength: 1, maxLength: 3 }),
    });
    const request = fc.record({
      model: fc.constantFrom("m1", "m2"),
      messages: fc.array(message, { minLength: 1, maxLength: 4 }),
    });
    fc.assert(
      fc.property(fc.array(request, { minLength: 1, maxLength: 6 }), (reqs) => {
        const bodies: PromptBody[] = reqs.map((r) =>
          base(
            r.messages.map((m) => ({
              role: m.role,
              content: m.content.map((b) => text(b.text, b.marked)),
            })),
            r.model,
          ),
        );
        const accounts = accountRequests(bodies);
        accounts.forEach((a, i) => {
          expect(a.strictReadBytes).toBeLessThanOrEqual(a.readBytes);
          expect(a.readBytes).toBeLessThanOrEqual(a.totalBytes);
          expect(a.billedBytes).toBeGreaterThanOrEqual(a.totalBytes * 0.1 - 1e-9);
          expect(a.billedBytes).toBeLessThanOrEqual(a.totalBytes + 1e-9);
          expect(a.strictBilledBytes).toBeGreaterThanOrEqual(a.billedBytes - 1e-9);
          expect(a.newMessageBytes + a.priorBytes).toBe(a.totalBytes);
          // A request sent again in full is read in full.
          const again = accountRequests([...bodies.slice(0, i + 1), bodies[i]!]).at(-1)!;
          expect(again.readBytes).toBe(again.totalBytes);
        });
      }),
      { numRuns: 150 },
    );
  });
});
