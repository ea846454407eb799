/**
 * The egress proxy's model side (#28): only the endpoint's routes are forwarded, the answers
 * are metered (server-sent events cut at any byte, or a JSON body) and priced, and the turn's
 * budget refuses further calls once reached. A real HTTP upstream behind the proxy's real socket.
 */
import fs from "node:fs/promises";
import http from "node:http";
import zlib from "node:zlib";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anthropicCostUsd, anthropicPriceOf } from "../../src/providers/anthropic/pricing.js";
import { ANTHROPIC_ROUTES, anthropicModelAccess } from "../../src/providers/anthropic/endpoint.js";
import { CODEX_ROUTES } from "../../src/codex/model-endpoint.js";
import { estimateCostUsd } from "../../src/providers/openai/pricing.js";
import { createLogger } from "../../src/log.js";
import { ANTHROPIC_RULES } from "../../src/providers/anthropic/model-call-rules.js";
import { OPENAI_RULES } from "../../src/codex/model-call-rules.js";
import { startEgress, type Egress, type EgressOptions } from "../../src/sandbox/egress.js";

const log = createLogger("silent");

/** How the upstream answers the next request: chunks written one by one, with a content type. */
let answer: { type: string; chunks: string[] } = { type: "application/json", chunks: ["{}"] };
let hold: Promise<void> | undefined;
const seen: Array<{ method: string; url: string }> = [];
/** The bodies the upstream received, as text, and their content-length headers. */
const bodies: Array<{ text: string; length: string | undefined }> = [];
let scratch: string;
let upstream: http.Server;
let base: URL;

beforeAll(async () => {
  scratch = await fs.mkdtemp(path.join(os.tmpdir(), "tether-model-proxy-"));
  upstream = http.createServer((req, res) => {
    let text = "";
    req.on("data", (c: Buffer) => (text += c.toString("utf8")));
    req.on("end", () => {
      seen.push({ method: req.method ?? "", url: req.url ?? "" });
      bodies.push({ text, length: req.headers["content-length"] });
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
      routes: api === "anthropic" ? ANTHROPIC_ROUTES : CODEX_ROUTES,
      rules: api === "anthropic" ? ANTHROPIC_RULES : OPENAI_RULES,
      meter:
        api === "anthropic"
          ? { api, costUsd: anthropicCostUsd }
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
  body: string | Buffer = '{"model":"claude-sonnet-4-5"}',
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath: e.socketPath, method, path: target, headers }, (res) => {
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
    expect(anthropicPriceOf("claude-made-up-9")).toEqual({ input: 15, output: 75 });
    expect(anthropicPriceOf("claude-opus-4-8[1m]")).toEqual({ input: 5, output: 25 });
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

describe("body rules (#38)", () => {
  const claudeBody = (extra: Record<string, unknown> = {}) =>
    JSON.stringify({
      model: "claude-sonnet-4-5",
      max_tokens: 100,
      stream: true,
      messages: [{ role: "user", content: "hi" }],
      tools: [{ name: "Bash", input_schema: { type: "object" } }],
      ...extra,
    });

  /** Posts `body` and expects a 403 in the API's error shape that nothing reached the upstream. */
  async function refused(
    e: Egress,
    target: string,
    body: string | Buffer,
    headers: Record<string, string>,
    says: string,
    status = 403,
  ): Promise<void> {
    const before = seen.length;
    const r = await send(e, "POST", target, body, headers);
    expect(r.status, r.body).toBe(status);
    expect(r.body).toContain(says);
    expect(seen.length).toBe(before);
  }

  it.each([
    [
      "mcp_servers",
      claudeBody({ mcp_servers: [{ type: "url", url: "https://evil.example/mcp", name: "x" }] }),
      { "anthropic-beta": "mcp-client-2025-04-04" },
      "`mcp_servers`",
    ],
    [
      "web_fetch",
      claudeBody({ tools: [{ type: "web_fetch_20250910", name: "web_fetch" }] }),
      {},
      "web_fetch_20250910",
    ],
    [
      "web_search",
      claudeBody({ tools: [{ type: "web_search_20250305", name: "web_search" }] }),
      {},
      "web_search_20250305",
    ],
    [
      "code_execution",
      claudeBody({ tools: [{ type: "code_execution_20250825", name: "code_execution" }] }),
      {},
      "code_execution_20250825",
    ],
    ["container", claudeBody({ container: "container_1" }), {}, "`container`"],
    [
      "a URL image",
      claudeBody({
        messages: [
          {
            role: "user",
            content: [{ type: "image", source: { type: "url", url: "https://evil/?d=x" } }],
          },
        ],
      }),
      {},
      "source is a URL",
    ],
    [
      "an unknown beta",
      claudeBody(),
      { "anthropic-beta": "claude-code-20250219,files-api-2025-04-14" },
      "files-api-2025-04-14",
    ],
    ["a body that is not JSON", "model=claude", {}, "not JSON"],
    // JSON.parse keeps the last of two equal keys: the forbidden tool is what is checked.
    [
      "a duplicated key",
      `{"model":"m","tools":[],"tools":[{"type":"web_fetch_20250910","name":"f"}]}`,
      {},
      "web_fetch_20250910",
    ],
  ] as const)(
    "Anthropic: %s is refused with a 403 that says why, and never reaches the API",
    async (_n, body, headers, says) => {
      const e = await proxy("anthropic");
      try {
        await refused(e, "/v1/messages?beta=true", body, headers, says);
        expect(
          JSON.parse((await send(e, "POST", "/v1/messages", body, headers)).body),
        ).toMatchObject({
          type: "error",
          error: {
            type: "permission_error",
            message: expect.stringMatching(/^Tether's sandbox refused this model call/),
          },
        });
        expect(e.stats()).toMatchObject({ modelRequests: 0 });
        expect(e.stats().modelRefused.at(-1)?.reason).toContain(says);
      } finally {
        await e.close();
      }
    },
  );

  it("Anthropic: web_search goes through when the operator allows it, and each search is metered at $0.01", async () => {
    answer = {
      type: "application/json",
      chunks: [
        JSON.stringify({
          model: "claude-sonnet-4-5",
          usage: { input_tokens: 0, output_tokens: 0, server_tool_use: { web_search_requests: 3 } },
        }),
      ],
    };
    const body = claudeBody({ tools: [{ type: "web_search_20250305", name: "web_search" }] });
    const closed = await proxy("anthropic");
    try {
      await refused(closed, "/v1/messages", body, {}, "TETHER_PROXY_SERVER_TOOLS");
    } finally {
      await closed.close();
    }
    const e = await proxy("anthropic", {
      serverTools: ["web_search"],
      model: {
        upstream: base,
        headers: {},
        strip: [],
        routes: ANTHROPIC_ROUTES,
        rules: ANTHROPIC_RULES,
        meter: { api: "anthropic", costUsd: anthropicModelAccess({}).endpoint.meter!.costUsd },
      },
    });
    try {
      expect((await send(e, "POST", "/v1/messages", body)).status).toBe(200);
      expect(e.stats().spentUsd).toBeCloseTo(0.03, 9);
    } finally {
      await e.close();
    }
  });

  it("what reaches the API is the body that was checked, whole, with its own length", async () => {
    answer = { type: "application/json", chunks: ["{}"] };
    const e = await proxy("anthropic");
    try {
      const history = "x".repeat(300_000);
      const body = claudeBody({ messages: [{ role: "user", content: history }] });
      const chunked = await new Promise<number>((resolve, reject) => {
        const req = http.request(
          { socketPath: e.socketPath, method: "POST", path: "/v1/messages" },
          (res) => {
            res.resume();
            res.on("end", () => resolve(res.statusCode ?? 0));
          },
        );
        req.on("error", reject);
        // Streamed in pieces, no content-length: the proxy reads it all before it decides.
        for (let i = 0; i < body.length; i += 10_000) req.write(body.slice(i, i + 10_000));
        req.end();
      });
      expect(chunked).toBe(200);
      expect(JSON.parse(bodies.at(-1)!.text)).toEqual(JSON.parse(body));
      expect(bodies.at(-1)!.length).toBe(String(Buffer.byteLength(bodies.at(-1)!.text)));
      // Two equal keys reach the API as one: the one the rules read.
      await send(e, "POST", "/v1/messages", '{"model":"a","model":"claude-haiku-4-5"}');
      expect(bodies.at(-1)!.text).toBe('{"model":"claude-haiku-4-5"}');
    } finally {
      await e.close();
    }
  });

  it("a body over the limit gets a 413 that says so, streamed or announced, and is not forwarded", async () => {
    const e = await proxy("anthropic", { maxModelBodyBytes: 50_000 });
    try {
      const big = claudeBody({ messages: [{ role: "user", content: "y".repeat(60_000) }] });
      await refused(e, "/v1/messages", big, {}, "larger than 50000 bytes", 413);
      const before = seen.length;
      const status = await new Promise<number>((resolve, reject) => {
        const req = http.request(
          { socketPath: e.socketPath, method: "POST", path: "/v1/messages" },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on("error", reject);
        for (let i = 0; i < 20; i++) req.write("z".repeat(10_000));
        req.end();
      });
      expect(status).toBe(413);
      expect(seen.length).toBe(before);
      // Below the limit, the same proxy forwards.
      answer = { type: "application/json", chunks: ["{}"] };
      expect((await send(e, "POST", "/v1/messages", claudeBody())).status).toBe(200);
    } finally {
      await e.close();
    }
  });

  it("a compressed body is refused: the proxy reads only what it can check", async () => {
    const e = await proxy("anthropic");
    try {
      const gz = zlib.gzipSync(claudeBody({ mcp_servers: [{ url: "https://evil" }] }));
      await refused(e, "/v1/messages", gz, { "content-encoding": "gzip" }, "encoded (gzip)");
    } finally {
      await e.close();
    }
  });

  it("OpenAI: previous_response_id passes only for a response this proxy's calls were answered with", async () => {
    answer = {
      type: "text/event-stream",
      chunks: [
        sse([
          { type: "response.created", response: { id: "resp_mine", model: "gpt-5.5" } },
          {
            type: "response.completed",
            response: {
              id: "resp_mine",
              model: "gpt-5.5",
              usage: { input_tokens: 1, output_tokens: 1 },
            },
          },
        ]),
      ],
    };
    const e = await proxy("openai");
    try {
      const body = (extra: Record<string, unknown>) =>
        JSON.stringify({ model: "gpt-5.5", input: "hi", ...extra });
      await refused(
        e,
        "/responses",
        body({ previous_response_id: "resp_mine" }),
        {},
        "previous_response_id",
      );
      expect((await send(e, "POST", "/responses", body({}))).status).toBe(200);
      expect(
        (await send(e, "POST", "/responses", body({ previous_response_id: "resp_mine" }))).status,
      ).toBe(200);
      await refused(
        e,
        "/responses",
        body({ previous_response_id: "resp_someone_else" }),
        {},
        "previous_response_id",
      );
      await refused(
        e,
        "/responses",
        body({ tools: [{ type: "mcp", server_url: "https://evil" }] }),
        {},
        "`mcp`",
      );
      await refused(e, "/responses", body({ background: true }), {}, "`background`");
      const r = await send(e, "POST", "/responses", body({ tools: [{ type: "web_search" }] }));
      expect(JSON.parse(r.body)).toMatchObject({
        error: {
          type: "permission_error",
          code: "tether_refused",
          message: expect.stringContaining("`web_search`"),
        },
      });
    } finally {
      await e.close();
    }
  });
});
