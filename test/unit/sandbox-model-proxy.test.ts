/**
 * The egress proxy's model side (#28): only the endpoint's routes are forwarded, the answers
 * are metered (server-sent events cut at any byte, or a JSON body) and priced, and the turn's
 * budget refuses further calls once reached. A real HTTP upstream behind the proxy's real socket.
 */
import fs from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claudeCostUsd, claudePriceOf } from "../../src/claude/pricing.js";
import { CLAUDE_ROUTES } from "../../src/claude/model-endpoint.js";
import { CODEX_ROUTES } from "../../src/codex/model-endpoint.js";
import { estimateCostUsd } from "../../src/codex/pricing.js";
import { createLogger } from "../../src/log.js";
import { ANTHROPIC_RULES, OPENAI_RULES } from "../../src/sandbox/model-call-rules.js";
import { startEgress, type Egress, type EgressOptions } from "../../src/sandbox/egress.js";

const log = createLogger("silent");

/** How the upstream answers the next request: chunks written one by one, with a content type. */
let answer: { type: string; chunks: string[] } = { type: "application/json", chunks: ["{}"] };
let hold: Promise<void> | undefined;
const seen: Array<{ method: string; url: string }> = [];
let scratch: string;
let upstream: http.Server;
let base: URL;

beforeAll(async () => {
  scratch = await fs.mkdtemp(path.join(os.tmpdir(), "tether-model-proxy-"));
  upstream = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      seen.push({ method: req.method ?? "", url: req.url ?? "" });
      const a = answer;
      void (async () => {
        if (hold) await hold;
        res.writeHead(200, { "content-type": a.type });
        for (const c of a.chunks) {
          res.write(c);
          await new Promise((r) => setImmediate(r));
        }
        res.end();
      })();
    });
  });
  await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
  base = new URL(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}/`);
});
afterAll(async () => {
  upstream?.closeAllConnections();
  await new Promise((r) => upstream?.close(r));
  if (scratch) await fs.rm(scratch, { recursive: true, force: true });
});

let n = 0;
function proxy(api: "anthropic" | "openai", over: Partial<EgressOptions> = {}): Promise<Egress> {
  return startEgress({
    socketPath: path.join(scratch, `p-${++n}.sock`),
    model: {
      upstream: base,
      headers: {},
      strip: [],
      routes: api === "anthropic" ? CLAUDE_ROUTES : CODEX_ROUTES,
      rules: api === "anthropic" ? ANTHROPIC_RULES : OPENAI_RULES,
      meter:
        api === "anthropic"
          ? { api, costUsd: claudeCostUsd }
          : { api, costUsd: (u) => estimateCostUsd(u.model, u) },
    },
    network: { kind: "model-only" },
    log,
    ...over,
  });
}

function send(
  e: Egress,
  method: string,
  target: string,
  body = '{"model":"claude-sonnet-4-5"}',
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath: e.socketPath, method, path: target }, (res) => {
      let text = "";
      res.on("data", (c: Buffer) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on("error", reject);
    req.end(method === "GET" || method === "HEAD" ? undefined : body);
  });
}

/** `text` cut into pieces of `size` bytes: usage split across reads must still be found. */
const cut = (text: string, size: number) =>
  Array.from({ length: Math.ceil(text.length / size) }, (_, i) =>
    text.slice(i * size, (i + 1) * size),
  );

const sse = (events: Array<Record<string, unknown>>) =>
  events.map((e) => `event: ${String(e.type)}\r\ndata: ${JSON.stringify(e)}\r\n\r\n`).join("");

describe("routes", () => {
  it.each([
    ["GET", "/v1/files"],
    ["POST", "/v1/messages/batches"],
    ["POST", "/v1/messages/count_tokens"],
    ["POST", "/v1/%2e%2e/files"],
    ["POST", "/v1/messages%2F..%2Ffiles"],
    ["POST", "/v1/messages/../files"],
    ["POST", "/v1/messages?beta=true&x=1"],
    ["POST", "/V1/MESSAGES"],
    ["OPTIONS", "/v1/messages"],
  ])("Claude: %s %s is refused and not forwarded", async (method, target) => {
    const e = await proxy("anthropic");
    try {
      const before = seen.length;
      const r = await send(e, method, target);
      expect(r.status).toBe(403);
      expect(JSON.parse(r.body)).toMatchObject({
        type: "error",
        error: { type: "permission_error", message: expect.stringContaining("POST /v1/messages") },
      });
      expect(seen.length).toBe(before);
      expect(e.stats()).toMatchObject({ modelRequests: 0, modelRefused: [{ method, target }] });
    } finally {
      await e.close();
    }
  });

  it.each(["/v1/messages", "/v1/messages?beta=true"])("Claude: POST %s goes through", async (t) => {
    const e = await proxy("anthropic");
    try {
      expect((await send(e, "POST", t)).status).toBe(200);
      expect(seen.at(-1)).toEqual({ method: "POST", url: t });
    } finally {
      await e.close();
    }
  });
});

describe("metering", () => {
  it("Anthropic, streamed: input and cache from message_start, output from message_delta, cut at every 5 bytes", async () => {
    answer = {
      type: "text/event-stream",
      chunks: cut(
        sse([
          {
            type: "message_start",
            message: {
              model: "claude-sonnet-4-5-20250929",
              usage: {
                input_tokens: 1000,
                cache_creation_input_tokens: 2000,
                cache_read_input_tokens: 100_000,
                output_tokens: 1,
              },
            },
          },
          { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "hi" } },
          {
            type: "message_delta",
            delta: { stop_reason: "end_turn" },
            usage: { output_tokens: 500 },
          },
          { type: "message_stop" },
        ]),
        5,
      ),
    };
    const spent: number[] = [];
    const e = await proxy("anthropic", { onSpend: (usd) => spent.push(usd) });
    try {
      const r = await send(e, "POST", "/v1/messages?beta=true");
      expect(r.body).toContain("message_stop");
      // $3 / $15 a million; cache writes 1.25×, reads 0.1× the input price.
      const expected = (1000 * 3 + 2000 * 3.75 + 100_000 * 0.3 + 500 * 15) / 1e6;
      expect(e.stats().spentUsd).toBeCloseTo(expected, 9);
      expect(spent.at(-1)).toBeCloseTo(expected, 9);
      // Counted as soon as the start said what the input was, before the output was known.
      expect(spent.length).toBe(2);
      expect(spent[0]).toBeLessThan(expected);
    } finally {
      await e.close();
    }
  });

  it("Anthropic, not streamed: the usage of the JSON body, at the model the answer names", async () => {
    answer = {
      type: "application/json",
      chunks: cut(
        JSON.stringify({
          model: "claude-opus-4-1-20250805",
          content: [{ type: "text", text: "x".repeat(5000) }],
          usage: { input_tokens: 10_000, output_tokens: 2000 },
        }),
        7,
      ),
    };
    const e = await proxy("anthropic");
    try {
      await send(e, "POST", "/v1/messages");
      expect(e.stats().spentUsd).toBeCloseTo((10_000 * 15 + 2000 * 75) / 1e6, 9);
    } finally {
      await e.close();
    }
  });

  it("a model no table knows is counted at the dearest price; the request's model when the answer names none", async () => {
    expect(claudePriceOf("claude-made-up-9")).toEqual({ input: 15, output: 75 });
    expect(claudePriceOf("claude-opus-4-8[1m]")).toEqual({ input: 5, output: 25 });
    answer = {
      type: "application/json",
      chunks: [JSON.stringify({ usage: { input_tokens: 1_000_000, output_tokens: 0 } })],
    };
    const e = await proxy("anthropic");
    try {
      await send(e, "POST", "/v1/messages", '{"model":"claude-haiku-4-5"}');
      expect(e.stats().spentUsd).toBeCloseTo(1, 9);
      await send(e, "POST", "/v1/messages", '{"model":"claude-next-big"}');
      expect(e.stats().spentUsd).toBeCloseTo(16, 9);
      // A long request (history of megabytes): its model is read from its start.
      const long = JSON.stringify({
        model: "claude-haiku-4-5",
        messages: [{ role: "user", content: `say "model": "x" ${"y".repeat(300_000)}` }],
      });
      await send(e, "POST", "/v1/messages", long);
      expect(e.stats().spentUsd).toBeCloseTo(17, 9);
    } finally {
      await e.close();
    }
  });

  it("OpenAI, streamed: the usage of response.completed, cached input at the cached price", async () => {
    answer = {
      type: "text/event-stream; charset=utf-8",
      chunks: cut(
        sse([
          { type: "response.created", response: { model: "gpt-5.5", usage: null } },
          {
            type: "response.completed",
            response: {
              model: "gpt-5.5",
              usage: {
                input_tokens: 50_000,
                input_tokens_details: { cached_tokens: 40_000 },
                output_tokens: 1000,
              },
            },
          },
        ]),
        3,
      ),
    };
    const e = await proxy("openai");
    try {
      await send(e, "POST", "/responses", '{"model":"gpt-5.5"}');
      expect(e.stats().spentUsd).toBeCloseTo(
        estimateCostUsd("gpt-5.5", {
          inputTokens: 10_000,
          cacheReadTokens: 40_000,
          cacheCreationTokens: 0,
          outputTokens: 1000,
        }),
        9,
      );
      const refused = await send(e, "GET", "/models");
      expect(refused.status).toBe(403);
      expect(JSON.parse(refused.body)).toMatchObject({ error: { type: "permission_error" } });
    } finally {
      await e.close();
    }
  });
});

describe("budget", () => {
  it("once the metered spend reaches the turn's budget, the next model call is refused and not forwarded", async () => {
    answer = {
      type: "application/json",
      chunks: [JSON.stringify({ usage: { input_tokens: 1_000_000, output_tokens: 0 } })],
    };
    const over: number[] = [];
    const e = await proxy("anthropic", { budgetUsd: 2.5, onOverBudget: (usd) => over.push(usd) });
    try {
      const first = await send(e, "POST", "/v1/messages");
      expect(first.status).toBe(200);
      expect(e.stats().spentUsd).toBeCloseTo(3, 9);
      // The call that reached the budget was answered in full: nobody is told to stop yet.
      expect(over).toEqual([]);
      const before = seen.length;
      const second = await send(e, "POST", "/v1/messages");
      expect(second.status).toBe(403);
      expect(second.body).toMatch(/at or over its limit of \$2\.5/);
      expect(seen.length).toBe(before);
      expect(over).toHaveLength(1);
      expect(over[0]).toBeCloseTo(3, 9);
    } finally {
      await e.close();
    }
  });

  it("at most maxModelCalls calls in flight: the next is answered 429, and goes through once one ends", async () => {
    let release!: () => void;
    hold = new Promise<void>((r) => (release = r));
    answer = { type: "application/json", chunks: ["{}"] };
    const e = await proxy("anthropic", { maxModelCalls: 2 });
    try {
      const before = seen.length;
      const held = [send(e, "POST", "/v1/messages"), send(e, "POST", "/v1/messages")];
      // Both reached the upstream (which holds them) before the third is sent.
      while (seen.length < before + 2) await new Promise((r) => setTimeout(r, 5));
      const third = await send(e, "POST", "/v1/messages");
      expect(third.status).toBe(429);
      expect(seen.length).toBe(before + 2);
      release();
      hold = undefined;
      for (const r of await Promise.all(held)) expect(r.status).toBe(200);
      expect((await send(e, "POST", "/v1/messages")).status).toBe(200);
    } finally {
      hold = undefined;
      await e.close();
    }
  });
});
