/**
 * Drill (#28, hole 2): the egress proxy puts the operator's API key on what it forwards, so what
 * it forwards must be the model call and nothing else, and what the agent spends through it must
 * count. Real bubblewrap sandbox, real proxy, the real Claude CLI (its Bash tool runs curl inside
 * the sandbox) against the fake Messages API, and curl in the sandbox against the fake Responses
 * API for Codex's endpoint.
 *
 * What must hold:
 * - every route but the model call (the Files, Batches and Admin APIs, token counting, model
 *   listing, `..` and percent-encoded dots and slashes, a doubled slash, an unknown query) is
 *   answered 403 by the proxy and never reaches the API;
 * - the CLI's own turn still works (it needs `POST /v1/messages?beta=true` only: seen with the
 *   pinned CLI, which sent nothing else through the proxy);
 * - a model call the agent makes itself, with a model of its choosing, is metered from the
 *   upstream's answer (server-sent events) and priced at that model's price: the turn's cost is
 *   at least that, and a turn limit stops the turn once the proxy's count reaches it.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CliAdapter, RunSpec } from "../../src/agent-cli/runtime-adapter.js";
import { codexModelAccess } from "../../src/codex/model-endpoint.js";
import { BRIDGE_URL } from "../../src/sandbox/init-script.js";
import type { Sandbox } from "../../src/sandbox/sandbox.js";
import {
  replies,
  startFakeAnthropic,
  type FakeAnthropic,
  type FakeRequest,
} from "../helpers/fake-anthropic.js";
import { startFakeOpenAI, type FakeOpenAI } from "../helpers/fake-openai.js";
import { runModelOnlyShell, sandboxedClaude } from "../helpers/sandbox-shell.js";

const KEY = "sk-ant-api03-real-key-for-the-proxy-drill";
const MODEL = "claude-sonnet-4-5";
/** The model the agent picks for its own calls: the dearest there is ($15 per million input). */
const SIDE_MODEL = "claude-opus-4-1";
const SIDE_INPUT_TOKENS = 1_000_000;
const root = fs.mkdtempSync(path.join(os.tmpdir(), "tether-model-proxy-"));
const log = pino({ level: "silent" });
let fake: FakeAnthropic;
let openai: FakeOpenAI;
let sandbox: Sandbox;
let cli: CliAdapter;

/** The script the agent's Bash tool runs for the next turn. */
let agentScript = "true";

beforeAll(async () => {
  fake = await startFakeAnthropic({
    // The agent's own call reports a million input tokens; the CLI's calls a thousand.
    usage: (req) => ({
      input_tokens: req.body?.model === SIDE_MODEL ? SIDE_INPUT_TOKENS : 1000,
      output_tokens: 10,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 0,
    }),
    // Stateless, so that a request the proxy lets through or not does not shift a script: the
    // agent's own call gets a text, the CLI's first call a Bash tool call, its next one the end.
    defaultReply: (req) => {
      if (req.body?.model === SIDE_MODEL) return replies.text("side channel answer");
      return sawToolResult(req)
        ? replies.text("DONE")
        : replies.toolUse("Bash", { command: agentScript, description: "probe the proxy" });
    },
  });
  openai = await startFakeOpenAI();
  ({ sandbox, cli } = await sandboxedClaude(root, log, KEY, fake.url));
});

afterAll(async () => {
  await cli?.cancelAll("test teardown");
  await fake?.close();
  await openai?.close();
  fs.rmSync(root, { recursive: true, force: true });
});

function sawToolResult(req: FakeRequest): boolean {
  const last = req.body?.messages?.at(-1);
  return Array.isArray(last?.content) && last.content.some((block) => block.type === "tool_result");
}

let places = 0;
function place(): { cwd: string; home: string } {
  const n = ++places;
  const cwd = path.join(root, `work-${n}`);
  const home = path.join(root, `home-${n}`);
  fs.mkdirSync(cwd);
  fs.mkdirSync(home);
  execFileSync("git", ["init", "-q"], { cwd });
  return { cwd, home };
}

function spec(p: { cwd: string; home: string }, over: Partial<RunSpec["settings"]> = {}): RunSpec {
  return {
    cwd: p.cwd,
    home: p.home,
    prompt: "Look around.",
    settings: {
      model: MODEL,
      allowedTools: ["Bash"],
      timeoutMs: 180_000,
      stallMs: 120_000,
      ...over,
    },
    sandbox: { sandbox, network: { kind: "model-only" } },
  };
}

const BODY = JSON.stringify({
  model: MODEL,
  max_tokens: 16,
  messages: [{ role: "user", content: "hi" }],
});

/** Routes an agent could try with the key the proxy adds: none is the model call. */
const ANTHROPIC_REFUSED: Array<[method: string, target: string]> = [
  ["GET", "/v1/files"],
  ["DELETE", "/v1/files/file_011CNha8iCJcU1wXNR6q4V8w"],
  ["GET", "/v1/messages/batches"],
  ["POST", "/v1/messages/batches"],
  ["GET", "/v1/organizations/api_keys"],
  ["GET", "/v1/models"],
  ["POST", "/v1/messages/count_tokens"],
  ["GET", "/v1/messages"],
  ["PUT", "/v1/messages"],
  ["POST", "/v1/../../other"],
  ["POST", "/v1/messages/../files"],
  ["POST", "/v1/messages/.."],
  ["POST", "/v1/%2e%2e/files"],
  ["POST", "/v1/%2E%2E/%2E%2E/other"],
  ["POST", "/v1/messages%2f..%2f..%2ffiles"],
  ["POST", "/v1/messages%2Fbatches"],
  ["POST", "/v1/messages%5c..%5cfiles"],
  ["POST", "//v1/messages"],
  ["POST", "/v1//messages"],
  ["POST", "/v1/messages/"],
  ["POST", "/v1/messages?beta=true&path=../files"],
  ["POST", "/"],
  ["HEAD", "/v1/files"],
];

/** A shell line that sends one request through the bridge and writes `METHOD TARGET STATUS`. */
function probeLine(method: string, target: string, out: string): string {
  const data = method === "POST" || method === "PUT" ? `--data '${BODY}'` : "";
  const how = method === "HEAD" ? "--head" : `-X ${method}`;
  return (
    `printf '%s %s %s\\n' '${method}' '${target}' "$(curl -s -o /dev/null --path-as-is ${how} ` +
    `-H 'content-type: application/json' -H 'anthropic-version: 2023-06-01' ${data} ` +
    `-w '%{http_code}' '${BRIDGE_URL}${target}')" >> ${out}`
  );
}

/** The agent's own model call: stream, a model of its choosing, the largest max_tokens. */
function sideCall(out: string): string {
  const body = JSON.stringify({
    model: SIDE_MODEL,
    max_tokens: 64_000,
    stream: true,
    messages: [{ role: "user", content: "spend" }],
  });
  return (
    `curl -s -o ${out} -w '%{http_code}\\n' -X POST -H 'content-type: application/json' ` +
    `-H 'anthropic-version: 2023-06-01' --data '${body}' '${BRIDGE_URL}/v1/messages'`
  );
}

function statuses(file: string): Array<{ route: string; status: string }> {
  return fs
    .readFileSync(file, "utf8")
    .trim()
    .split("\n")
    .map((line) => {
      const i = line.lastIndexOf(" ");
      return { route: line.slice(0, i), status: line.slice(i + 1) };
    });
}

describe(
  "the model proxy lets the model call through, and nothing else (#28)",
  { timeout: 300_000 },
  () => {
    it("Anthropic: every other route and spelling is refused at the proxy and never reaches the API; the agent's own model call is metered and counted in the turn's cost", async () => {
      const p = place();
      agentScript = [
        ...ANTHROPIC_REFUSED.map(([m, t]) => probeLine(m, t, "/workspace/probes.txt")),
        // The absolute form for the bridge's own address is a model request too.
        `printf 'ABS %s\\n' "$(curl -s -o /dev/null --noproxy '' -x ${BRIDGE_URL} -w '%{http_code}' ${BRIDGE_URL}/v1/files)" >> /workspace/probes.txt`,
        `${sideCall("/workspace/side.txt")} > /workspace/side-status.txt`,
      ].join("\n");
      const before = fake.requests.length;
      const o = await cli.start(spec(p)).outcome;
      expect(o.kind, o.detail).toBe("success");

      const seen = statuses(path.join(p.cwd, "probes.txt"));
      expect(seen).toHaveLength(ANTHROPIC_REFUSED.length + 1);
      for (const { route, status } of seen) expect(status, route).toBe("403");

      // Nothing but model calls reached the API, each with the operator's key.
      const reached = fake.requests.slice(before);
      expect(reached.map((r) => `${r.method} ${r.path}`)).toEqual(
        reached.map(() => "POST /v1/messages"),
      );
      for (const r of reached) expect(r.headers["x-api-key"]).toBe(KEY);
      // The CLI's two calls and the agent's one.
      expect(reached.filter((r) => r.body?.model === MODEL)).toHaveLength(2);
      expect(reached.filter((r) => r.body?.model === SIDE_MODEL)).toHaveLength(1);
      expect(fs.readFileSync(path.join(p.cwd, "side-status.txt"), "utf8").trim()).toBe("200");
      // The agent got its answer (the proxy passes the stream through as it meters it).
      const side = fs.readFileSync(path.join(p.cwd, "side.txt"), "utf8");
      expect(side).toContain("event: message_start");
      expect(side).toContain("event: message_stop");

      // A million input tokens at $15 a million: the turn cost at least that, whatever the CLI
      // reported for its own calls (about a cent).
      expect(o.usage.costUsd).toBeGreaterThanOrEqual(15);
      expect(o.usage.costUsd).toBeLessThan(16);
    });

    it("Anthropic: the turn limit holds against the agent's own model calls: once the proxy's count reaches it, the next call is refused and the turn ends", async () => {
      const p = place();
      agentScript = [
        `${sideCall("/workspace/side-1.txt")} > /workspace/side-1-status.txt`,
        `${sideCall("/workspace/side-2.txt")} > /workspace/side-2-status.txt`,
      ].join("\n");
      const before = fake.requests.length;
      const o = await cli.start(spec(p, { maxBudgetUsd: 2 })).outcome;
      expect(o.kind, o.detail).toBe("turn_limit");
      expect(o.detail).toMatch(/proxy came to \$15\./);
      expect(o.usage.costUsd).toBeGreaterThanOrEqual(15);
      expect(o.usage.costUsd).toBeLessThan(16);
      // The call that reached the limit was answered; the next was refused at the proxy, never
      // reached the API, and ended the turn (so its curl may not have written what it got).
      expect(fs.readFileSync(path.join(p.cwd, "side-1-status.txt"), "utf8").trim()).toBe("200");
      const reached = fake.requests.slice(before);
      expect(reached.filter((r) => r.body?.model === SIDE_MODEL)).toHaveLength(1);
      // The CLI's first call only: the turn ended before it could make another.
      expect(reached.filter((r) => r.body?.model === MODEL)).toHaveLength(1);
    });

    it("OpenAI (Codex's endpoint): only POST /responses goes through; the rest is refused and never reaches the API; a response is metered", async () => {
      const access = codexModelAccess({
        OPENAI_API_KEY: "sk-real-openai-key-for-the-drill",
        OPENAI_BASE_URL: openai.url,
      });
      const refused: Array<[string, string]> = [
        ["GET", "/models"],
        ["GET", "/files"],
        ["POST", "/files"],
        ["GET", "/responses"],
        ["GET", "/responses/resp_123"],
        ["DELETE", "/responses/resp_123"],
        ["POST", "/responses/resp_123/cancel"],
        ["POST", "/chat/completions"],
        ["POST", "/embeddings"],
        ["GET", "/organization/admin_api_keys"],
        ["POST", "/../v1/files"],
        ["POST", "/responses/../files"],
        ["POST", "/%2e%2e/files"],
        ["POST", "/responses%2f..%2ffiles"],
        ["POST", "//responses"],
        ["POST", "/v1/responses"],
      ];
      const ws = fs.mkdtempSync(path.join(root, "codex-ws-"));
      const responseBody = JSON.stringify({
        model: "gpt-5.5",
        stream: true,
        input: [{ role: "user", content: [{ type: "input_text", text: "hi" }] }],
      });
      const script = [
        ...refused.map(([m, t]) => probeLine(m, t, "/workspace/probes.txt")),
        `curl -s -o /workspace/response.txt -w '%{http_code}\\n' -X POST -H 'content-type: application/json' --data '${responseBody}' '${BRIDGE_URL}/responses' > /workspace/response-status.txt`,
      ].join("\n");
      const before = openai.requests.length;
      const egress = await runModelOnlyShell(sandbox, ws, access, script);
      for (const { route, status } of statuses(path.join(ws, "probes.txt")))
        expect(status, route).toBe("403");
      expect(fs.readFileSync(path.join(ws, "response-status.txt"), "utf8").trim()).toBe("200");
      const reached = openai.requests.slice(before);
      expect(reached.map((r) => `${r.method} ${r.path}`)).toEqual(["POST /v1/responses"]);
      const usage = reached[0]!.usage!;
      const metered = egress!.stats().spentUsd;
      // gpt-5.5 is priced as the gpt-5 family: $1.25 a million input, $10 a million output.
      const expected =
        (usage.input_tokens * 1.25 + usage.output_tokens * 10) / 1_000_000 -
        (usage.input_tokens_details.cached_tokens * (1.25 - 0.125)) / 1_000_000;
      expect(metered).toBeGreaterThan(0);
      expect(metered).toBeCloseTo(expected, 6);
    });
  },
);
