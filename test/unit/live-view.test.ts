/**
 * The live view's pure parts (#40): the signed link, what an event becomes as a row, and when a
 * progress event edits the tracking comment; and, through the bench's fake-clock turn, how many
 * edits a long busy turn costs with the live view linked and without it.
 */
import { describe, expect, it } from "vitest";
import { livePath, liveUrl, signLiveLink, verifyLiveLink } from "../../src/core/live-link.js";
import { clip, liveRow, scrubDeep } from "../../src/runner/render/live-recorder.js";
import { progressEditDue, trackingComment } from "../../src/runner/render/tracking-comment.js";
import { renderTracking } from "../../src/runner/render/thread-comments.js";
import { longTurnEdits } from "../../bench/long-turn-edits.js";

const KEY = Buffer.alloc(32, 7);
const NOW = new Date("2026-03-01T12:00:00Z");
const LATER = new Date("2026-03-08T12:00:00Z");

describe("the live link", () => {
  const s = signLiveLink(KEY, 42, LATER);
  it.each([
    {
      name: "its own task, before expiry",
      task: 42,
      exp: String(s.exp),
      sig: s.sig,
      key: KEY,
      ok: true,
    },
    { name: "another task", task: 43, exp: String(s.exp), sig: s.sig, key: KEY, ok: false },
    {
      name: "a later expiry",
      task: 42,
      exp: String(s.exp + 86_400),
      sig: s.sig,
      key: KEY,
      ok: false,
    },
    {
      name: "another key",
      task: 42,
      exp: String(s.exp),
      sig: s.sig,
      key: Buffer.alloc(32, 8),
      ok: false,
    },
    { name: "no signature", task: 42, exp: String(s.exp), sig: null, key: KEY, ok: false },
    {
      name: "a malformed signature",
      task: 42,
      exp: String(s.exp),
      sig: "x'><",
      key: KEY,
      ok: false,
    },
    { name: "a malformed expiry", task: 42, exp: "1e9", sig: s.sig, key: KEY, ok: false },
  ])("$name: ok=$ok", ({ task, exp, sig, key, ok }) => {
    expect(verifyLiveLink(key, task, exp, sig, NOW).ok).toBe(ok);
  });

  it("expires", () => {
    expect(verifyLiveLink(KEY, 42, String(s.exp), s.sig, new Date(LATER.getTime() + 1000))).toEqual(
      {
        ok: false,
        reason: expect.stringContaining("expired"),
      },
    );
  });

  it("is the task's path, signed or plain", () => {
    expect(livePath(42)).toBe("/live/42");
    expect(liveUrl("https://t.example/", 42, s)).toBe(
      `https://t.example/live/42?exp=${s.exp}&sig=${s.sig}`,
    );
    expect(liveUrl("https://t.example", 42, null)).toBe("https://t.example/live/42");
  });
});

describe("what the live view keeps of an event", () => {
  it.each([
    {
      event: {
        type: "tool_use",
        id: "t1",
        name: "Bash",
        input: { command: "ls" },
        parentToolUseId: null,
      },
      row: {
        kind: "tool_use",
        body: { id: "t1", name: "Bash", input: '{"command":"ls"}', sub: false },
      },
    },
    {
      event: { type: "tool_result", toolUseId: "t1", isError: true, output: "boom" },
      row: { kind: "tool_result", body: { toolUseId: "t1", isError: true, output: "boom" } },
    },
    {
      event: { type: "text", text: "hi", parentToolUseId: "t1" },
      row: { kind: "text", body: { text: "hi", sub: true } },
    },
    {
      event: { type: "usage", inputTokens: 10, outputTokens: 2, costUsd: 0.5 },
      row: { kind: "usage", body: { inputTokens: 10, outputTokens: 2, costUsd: 0.5 } },
    },
  ] as const)("$event.type", ({ event, row }) => {
    expect(liveRow(event as never)).toEqual(row);
  });

  it("clips a long tool input and says how much", () => {
    const row = liveRow({
      type: "tool_use",
      id: "t",
      name: "Write",
      input: { content: "x".repeat(10_000) },
      parentToolUseId: null,
    });
    const input = (row?.body as { input: string }).input;
    expect(input.length).toBeLessThan(2100);
    expect(input).toMatch(/… \(\d+ more characters\)$/);
    expect(clip("abc", 5)).toBe("abc");
  });

  it("scrubs every string inside a row", () => {
    const scrub = (s: string) => s.replaceAll("ghs_secret", "[redacted]");
    expect(scrubDeep({ a: ["ghs_secret x"], b: { c: "ghs_secret" }, n: 1 }, scrub)).toEqual({
      a: ["[redacted] x"],
      b: { c: "[redacted]" },
      n: 1,
    });
  });
});

describe("when a progress event edits the tracking comment", () => {
  it.each([
    { live: false, firstTool: true, since: 1000, interval: 3000, due: false },
    { live: false, firstTool: false, since: 3000, interval: 3000, due: true },
    { live: true, firstTool: true, since: 10, interval: 60_000, due: true },
    { live: true, firstTool: false, since: 59_999, interval: 60_000, due: false },
    { live: true, firstTool: false, since: 60_000, interval: 60_000, due: true },
  ])("live=$live firstTool=$firstTool after $since ms: $due", (r) => {
    expect(
      progressEditDue({
        live: r.live,
        firstTool: r.firstTool,
        sinceLastEditMs: r.since,
        intervalMs: r.interval,
      }),
    ).toBe(r.due);
  });

  it("links the live view from the comment", () => {
    const body = renderTracking({
      taskId: 1,
      agent: "tether",
      resumed: false,
      reason: "no_prior_session",
      tools: [],
      lastText: null,
      startedAt: NOW,
      now: NOW,
      liveUrl: "https://t.example/live/1?exp=1&sig=s",
    });
    expect(body).toContain("[watch live](https://t.example/live/1?exp=1&sig=s)");
  });

  it("a ten-minute busy turn edits it at most 12 times with the live view linked, ~200 without", async () => {
    const before = await longTurnEdits(trackingComment, { intervalMs: 3000 });
    const after = await longTurnEdits(trackingComment, {
      intervalMs: 60_000,
      liveUrl: "https://t.example/live/1",
    });
    expect(before.edits).toBeGreaterThanOrEqual(190);
    expect(after.edits).toBeLessThanOrEqual(12);
    expect(after.edits).toBeGreaterThanOrEqual(10); // first tool, every minute, the answer
    expect(after.creates).toBe(1);
  });
});
