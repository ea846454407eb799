/**
 * The operator's MCP servers (#39), run for real: bubblewrap, the egress proxy, the real Claude
 * CLI against the fake Messages API, which scripts the tool calls (`mcp__<server>__<tool>`).
 *
 * What must hold:
 * - a stdio server holding a secret in its `env` runs outside the agent's sandbox and answers
 *   the CLI's tool call, and its answer reaches the model;
 * - a remote server gets its header from the egress proxy; the CLI's request carries none;
 * - from the agent's shell, no process environment or command line, no file and no socket in
 *   the sandbox shows the stdio server's secret or the remote server's token;
 * - a server that fails to start is reported failed and the turn goes on without it.
 */
import { randomBytes, createHash } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type {
  CliAdapter,
  RunEvent,
  RunOutcome,
  RunSpec,
} from "../../src/agent-cli/runtime-adapter.js";
import type { NamedMcpServer } from "../../src/config/mcp-servers.js";
import type { Sandbox } from "../../src/sandbox/sandbox.js";
import { cliAgent } from "../../src/runner/wiring/cli-agent.js";
import { createCodexCli } from "../../src/codex/codex-cli.js";
import {
  replies as codexReplies,
  startFakeOpenAI,
  toolOutputs,
  type FakeOpenAI,
} from "../helpers/fake-openai.js";
import { resolveCodexBinary } from "../helpers/real-codex.js";
import { sandboxedClaude } from "../helpers/sandbox-shell.js";
import { createOpencodeCli } from "../../src/opencode/opencode-cli.js";
import { resolveOpencodeBinary } from "../helpers/real-opencode.js";
import { resolveGeminiPath } from "../../src/gemini/gemini-cli.js";
import { GEMINI_FIXED_ENV } from "../../src/gemini/gemini-args.js";
import { geminiReplies, startFakeGemini, type FakeGemini } from "../helpers/fake-gemini.js";
import {
  replies,
  startFakeAnthropic,
  type FakeAnthropic,
  type FakeRequest,
} from "../helpers/fake-anthropic.js";

const SERVER = fileURLToPath(new URL("../helpers/mcp-stdio-server.mjs", import.meta.url));
const KEY = "sk-ant-api03-real-key-for-the-mcp-drill";
const SECRET = `mcp-secret-${randomBytes(12).toString("hex")}`;
const TOKEN = `mcp-token-${randomBytes(12).toString("hex")}`;
const root = fs.mkdtempSync(path.join(os.tmpdir(), "tether-mcp-"));
const log = pino({ level: "silent" });
let fake: FakeAnthropic;
let sandbox: Sandbox;
let cli: CliAdapter;
let remote: http.Server;
let remoteUrl: string;
/** What the remote server saw: each request's method, JSON-RPC method and Authorization. */
const remoteSeen: Array<{ method: string; rpc: string | null; auth: string | undefined }> = [];

/** A remote MCP server (streamable HTTP, JSON answers) with one tool, `ping`. */
function startRemote(): Promise<void> {
  remote = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString("utf8")));
    req.on("end", () => {
      let msg: { id?: number; method?: string; params?: { protocolVersion?: string } } = {};
      try {
        msg = body ? JSON.parse(body) : {};
      } catch {
        /* not JSON */
      }
      remoteSeen.push({
        method: req.method ?? "",
        rpc: msg.method ?? null,
        auth: req.headers.authorization,
      });
      if (req.headers.authorization !== `Bearer ${TOKEN}`) return void res.writeHead(401).end();
      if (req.method !== "POST") return void res.writeHead(405).end();
      if (msg.id === undefined) return void res.writeHead(202).end();
      const result =
        msg.method === "initialize"
          ? {
              protocolVersion: msg.params?.protocolVersion ?? "2025-06-18",
              capabilities: { tools: {} },
              serverInfo: { name: "test-http", version: "1.0.0" },
            }
          : msg.method === "tools/list"
            ? {
                tools: [
                  {
                    name: "ping",
                    description: "Answers pong.",
                    inputSchema: { type: "object", properties: {} },
                  },
                ],
              }
            : { content: [{ type: "text", text: "MCP-HTTP-ANSWER pong" }] };
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ jsonrpc: "2.0", id: msg.id, result }));
    });
  });
  return new Promise((resolve) =>
    remote.listen(0, "127.0.0.1", () => {
      const { port } = remote.address() as { port: number };
      remoteUrl = `http://127.0.0.1:${port}/mcp`;
      resolve();
    }),
  );
}

/** Tool results in the request's history: which step of the script comes next. */
function toolResults(req: FakeRequest): string[] {
  const out: string[] = [];
  for (const m of req.body?.messages ?? []) {
    if (!Array.isArray(m.content)) continue;
    for (const b of m.content) {
      if (b.type !== "tool_result") continue;
      const c = b.content;
      out.push(typeof c === "string" ? c : JSON.stringify(c));
    }
  }
  return out;
}

const DRILL = [
  // Only in the sandbox (the agent seam's own run is not sandboxed: nothing to drill there).
  "[ -d /workspace ] || exit 0",
  "set +e",
  "out=/workspace/drill.txt",
  "{",
  "echo '== environ and cmdline of every process'",
  "for f in /proc/[0-9]*/environ /proc/[0-9]*/task/*/environ /proc/[0-9]*/cmdline; do tr '\\0' '\\n' < \"$f\"; echo; done",
  "echo '== env'; env",
  "echo '== /run/tether'; ls -la /run/tether",
  "echo '== files naming the markers'",
  "grep -rsl -e mcp-secret- -e mcp-token- /run /home /tmp /workspace /etc --exclude=drill.txt",
  "echo '== the socket'",
  `printf '%s\\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}' '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' | timeout 8 socat -t 5 - UNIX-CONNECT:/run/tether/mcp-secretive.sock`,
  "echo; echo DRILL-END",
  "} > $out 2>&1",
  "echo drill written",
].join("\n");

beforeAll(async () => {
  await startRemote();
  fake = await startFakeAnthropic({
    defaultReply: (req) => {
      const done = toolResults(req).length;
      if (done === 0) return replies.toolUse("mcp__secretive__whoami", {});
      if (done === 1) return replies.toolUse("mcp__remote__ping", {});
      if (done === 2)
        return replies.toolUse("Bash", { command: DRILL, description: "look for secrets" });
      return replies.text("DONE");
    },
  });
  ({ sandbox, cli } = await sandboxedClaude(root, log, KEY, fake.url));
});

afterAll(async () => {
  await cli?.cancelAll("test teardown");
  await fake?.close();
  await new Promise((r) => remote?.close(r));
  fs.rmSync(root, { recursive: true, force: true });
});

/** The operator's file, as loadEnv reads it: a stdio server with a secret, a remote one, a broken one. */
function operatorServers(): NamedMcpServer[] {
  return [
    {
      name: "secretive",
      type: "stdio",
      command: "node",
      args: [SERVER],
      env: { MCP_TEST_SECRET: SECRET },
      network: [],
    },
    { name: "remote", type: "http", url: remoteUrl, headers: { Authorization: `Bearer ${TOKEN}` } },
    {
      name: "broken",
      type: "stdio",
      command: "node",
      args: [SERVER, "--fail"],
      env: { MCP_TEST_SECRET: "broken-secret-value" },
      network: [],
    },
  ];
}

/**
 * One turn of `cli` in the sandbox, in a fresh git workspace (`work<dir>`, HOME `home<dir>`),
 * with `servers` offered; it must succeed.
 */
async function turnWithServers(
  cli: CliAdapter,
  dir: string,
  settings: RunSpec["settings"],
  servers: NamedMcpServer[],
): Promise<{ outcome: RunOutcome; events: RunEvent[]; cwd: string }> {
  const cwd = path.join(root, `work${dir}`);
  const home = path.join(root, `home${dir}`);
  fs.mkdirSync(cwd);
  fs.mkdirSync(home);
  execFileSync("git", ["init", "-q"], { cwd });
  const events: RunEvent[] = [];
  const run = cli.start({
    cwd,
    home,
    prompt: "Use your tools.",
    settings,
    sandbox: { sandbox, network: { kind: "model-only" } },
    mcpServers: servers,
    onEvent: (e) => void events.push(e),
  });
  const outcome = await run.outcome;
  expect(outcome.kind, outcome.detail + outcome.stderrTail).toBe("success");
  return { outcome, events, cwd };
}

/** A CLI's base environment here: HOME the temp root, and the model API's key and URL. */
const cliEnv = (model: Record<string, string>) => ({
  PATH: process.env.PATH,
  HOME: root,
  LANG: "C.UTF-8",
  ...model,
});

/** A turn's tool results: the stdio server's (which had its secret), then the remote's. */
function expectBothAnswered(results: Array<string | undefined>): void {
  const digest = createHash("sha256").update(SECRET).digest("hex").slice(0, 16);
  expect(results[0]).toContain(`MCP-STDIO-ANSWER digest=${digest}`);
  expect(results[1]).toContain("MCP-HTTP-ANSWER pong");
}

describe(
  "the operator's MCP servers, with the real Claude CLI in the sandbox (#39)",
  { timeout: 300_000 },
  () => {
    it("a stdio server holding a secret and a remote server with a header answer the agent's tool calls; neither credential is anywhere the agent can look; a server that fails is reported and the turn goes on", async () => {
      const { outcome, events, cwd } = await turnWithServers(
        cli,
        "",
        {
          model: "claude-sonnet-4-5",
          allowedTools: ["Bash"],
          timeoutMs: 240_000,
          stallMs: 180_000,
        },
        operatorServers(),
      );
      expect(outcome.resultText).toBe("DONE");

      // The CLI started the servers it could, and said which one it could not.
      const init = events.find((e) => e.type === "init");
      expect(init?.type === "init" && init.mcpServers).toEqual(
        expect.arrayContaining([
          { name: "secretive", status: "connected" },
          { name: "remote", status: "connected" },
          { name: "broken", status: "failed" },
        ]),
      );

      const calls = fake.messageRequests();
      const results = toolResults(calls.at(-1)!);
      // The stdio server had the secret (its digest) and its answer reached the model; the
      // remote server answered, and got the operator's header on every request it saw.
      expectBothAnswered(results);
      expect(remoteSeen.length).toBeGreaterThan(0);
      expect(remoteSeen.filter((r) => r.rpc === "tools/call")).toHaveLength(1);
      expect(remoteSeen.every((r) => r.auth === `Bearer ${TOKEN}`)).toBe(true);
      // The tools were in the request's tool list from the first call (loaded up front).
      const firstTools = (calls[0]!.body?.tools ?? []).map((t) => t.name);
      expect(firstTools).toEqual(
        expect.arrayContaining(["mcp__secretive__whoami", "mcp__remote__ping"]),
      );

      // The drill ran to its end, and found no credential anywhere: processes, environment,
      // files, the socket.
      const drill = fs.readFileSync(path.join(cwd, "drill.txt"), "utf8");
      expect(drill).toContain("DRILL-END");
      expect(drill).toMatch(/claude/); // it did read the CLI's command line
      expect(drill).not.toContain(SECRET);
      expect(drill).not.toContain(TOKEN);
      expect(drill).not.toContain("broken-secret-value");
      expect(drill).not.toContain("MCP_TEST_SECRET");
      // It did look: it saw the socket and talked to the server through it.
      expect(drill).toContain("mcp-secretive.sock");
      expect(drill).toContain('"whoami"');
      // Nor did anything the model was sent.
      const sent = JSON.stringify(calls.map((c) => c.body));
      expect(sent).not.toContain(SECRET);
      expect(sent).not.toContain(TOKEN);
    });

    it("through the runner's agent: each server's tool calls are counted, and the one that did not start is named for the footer", async () => {
      const cwd = path.join(root, "work-agent");
      const home = path.join(root, "home-agent");
      fs.mkdirSync(cwd);
      fs.mkdirSync(home);
      execFileSync("git", ["init", "-q"], { cwd });
      // Unsandboxed here (the agent seam's own test): the CLI gets the servers as the file has them.
      const offered = Object.fromEntries(operatorServers().map(({ name, ...s }) => [name, s]));
      const agent = cliAgent(cli, { log, home, mcpServers: offered });
      const result = await agent.run({
        key: { repoId: 1, repo: "octo/mcp", issueNumber: 1, agent: "tether" },
        cwd,
        prompt: "Use your tools.",
        resumeSessionId: null,
        settings: {
          name: "tether",
          cli: "claude",
          model: "claude-sonnet-4-5",
          timeoutMinutes: 4,
          stallMinutes: 3,
          allowedTools: ["Bash"],
          mcpServers: ["secretive", "remote", "broken", "unknown"],
        },
        systemPrompt: "",
        signal: new AbortController().signal,
        onSession: () => {},
        onProgress: () => {},
      });
      expect(result.outcome, result.detail ?? "").toBe("success");
      expect(result.mcp).toEqual({
        failed: expect.arrayContaining([
          { name: "unknown", why: "not configured on this runner" },
          { name: "broken", why: "failed" },
        ]),
        toolCalls: { secretive: 1, remote: 1, broken: 0, unknown: 0 },
      });
      expect(result.mcp?.failed).toHaveLength(2);
    });
  },
);

describe(
  "the operator's MCP servers, with the real Codex CLI in the sandbox (#39)",
  { timeout: 300_000 },
  () => {
    let openai: FakeOpenAI;
    beforeAll(async () => {
      openai = await startFakeOpenAI({
        defaultReply: (req) => {
          const done = toolOutputs(req).length;
          if (done === 0) return codexReplies.namespacedCall("mcp__secretive", "whoami", {});
          if (done === 1) return codexReplies.namespacedCall("mcp__remote", "ping", {});
          if (done === 2) return codexReplies.shell(DRILL);
          return codexReplies.text("DONE");
        },
      });
    });
    afterAll(async () => {
      await openai?.close();
    });

    it("Codex: both servers answer with their tools in the request up front, the tool calls count per server, and the drill finds neither credential", async () => {
      remoteSeen.length = 0;
      const codex = createCodexCli({
        path: resolveCodexBinary(),
        log,
        baseEnv: cliEnv({
          OPENAI_API_KEY: "sk-real-openai-key-for-the-mcp-drill",
          OPENAI_BASE_URL: openai.url,
        }),
      });
      const { events, cwd } = await turnWithServers(
        codex,
        "-codex",
        { model: "gpt-5.5", timeoutMs: 240_000, stallMs: 180_000 },
        operatorServers().filter((s) => s.name !== "broken"),
      );
      const calls = openai.responseRequests();
      const first = JSON.stringify(calls[0]!.body?.tools ?? []);
      expect(first).toContain("mcp__secretive");
      expect(first).toContain("mcp__remote");
      expectBothAnswered(toolOutputs(calls.at(-1)!).map((o) => o.output));
      expect(remoteSeen.every((r) => r.auth === `Bearer ${TOKEN}`)).toBe(true);
      const names = events.flatMap((e) => (e.type === "tool_use" ? [e.name] : []));
      expect(names).toEqual(
        expect.arrayContaining(["mcp__secretive__whoami", "mcp__remote__ping"]),
      );
      const drill = fs.readFileSync(path.join(cwd, "drill.txt"), "utf8");
      expect(drill).toContain("DRILL-END");
      expect(drill).not.toContain(SECRET);
      expect(drill).not.toContain(TOKEN);
      expect(drill).not.toContain("MCP_TEST_SECRET");
      expect(drill).toContain('"whoami"');
    });
  },
);

describe(
  "the operator's MCP servers, with the real opencode CLI in the sandbox (#39)",
  { timeout: 300_000 },
  () => {
    let anthropic: FakeAnthropic;
    beforeAll(async () => {
      // opencode names an MCP tool `<server>_<tool>`; its shell tool is `bash`.
      anthropic = await startFakeAnthropic({
        defaultReply: (req) => {
          const done = toolResults(req).length;
          if (done === 0) return replies.toolUse("secretive_whoami", {});
          if (done === 1) return replies.toolUse("remote_ping", {});
          if (done === 2)
            return replies.toolUse("bash", { command: DRILL, description: "look for secrets" });
          return replies.text("DONE");
        },
      });
    });
    afterAll(async () => {
      await anthropic?.close();
    });

    it("opencode: both servers answer with their tools in the first request, the tool calls are named per server, and the drill finds neither credential", async () => {
      remoteSeen.length = 0;
      const opencode = createOpencodeCli({
        path: resolveOpencodeBinary(),
        log,
        baseEnv: cliEnv({ ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: anthropic.url }),
      });
      const { outcome, events, cwd } = await turnWithServers(
        opencode,
        "-opencode",
        { model: "claude-sonnet-4-5", timeoutMs: 240_000, stallMs: 180_000 },
        operatorServers().filter((s) => s.name !== "broken"),
      );
      expect(outcome.resultText).toBe("DONE");
      const calls = anthropic.messageRequests();
      const firstTools = (calls[0]!.body?.tools ?? []).map((t) => t.name);
      expect(firstTools).toEqual(expect.arrayContaining(["secretive_whoami", "remote_ping"]));
      expectBothAnswered(toolResults(calls.at(-1)!));
      expect(remoteSeen.filter((r) => r.rpc === "tools/call")).toHaveLength(1);
      expect(remoteSeen.every((r) => r.auth === `Bearer ${TOKEN}`)).toBe(true);
      // Named as the runner counts them, per server.
      const names = events.flatMap((e) => (e.type === "tool_use" ? [e.name] : []));
      expect(names).toEqual(
        expect.arrayContaining(["mcp__secretive__whoami", "mcp__remote__ping", "bash"]),
      );
      const drill = fs.readFileSync(path.join(cwd, "drill.txt"), "utf8");
      expect(drill).toContain("DRILL-END");
      expect(drill).toMatch(/opencode/); // it did read the CLI's command line
      expect(drill).toContain("OPENCODE_CONFIG_CONTENT"); // and its environment, with the config
      expect(drill).not.toContain(SECRET);
      expect(drill).not.toContain(TOKEN);
      expect(drill).not.toContain("MCP_TEST_SECRET");
      expect(drill).toContain("mcp-secretive.sock");
      expect(drill).toContain('"whoami"');
      const sent = JSON.stringify(calls.map((c) => c.body));
      expect(sent).not.toContain(SECRET);
      expect(sent).not.toContain(TOKEN);
    });
  },
);

/**
 * Why a `gemini` agent is refused MCP servers (src/gemini/entry.ts): Gemini CLI starts no MCP
 * server in a workspace it does not trust, even one from the user's own settings, and Tether
 * never trusts a checkout (GEMINI_CLI_TRUST_WORKSPACE=false: trusted, the checkout's GEMINI.md
 * files, hooks, policies and skills would apply). Run on the CLI itself, outside Tether's
 * adapter (which writes its own settings), so a CLI that changes this shows here.
 */
describe(
  "Gemini CLI and MCP servers: none in an untrusted workspace (#39)",
  { timeout: 240_000 },
  () => {
    let gemini: FakeGemini;
    beforeAll(async () => {
      gemini = await startFakeGemini({ defaultReply: () => geminiReplies.text("DONE") });
    });
    afterAll(async () => {
      await gemini?.close();
    });

    /** The function names the CLI declared to the API in one headless run, trusted or not. */
    async function declared(trusted: boolean): Promise<string[]> {
      const home = fs.mkdtempSync(path.join(root, "gemini-home-"));
      const cwd = fs.mkdtempSync(path.join(root, "gemini-work-"));
      fs.mkdirSync(path.join(home, ".gemini"));
      fs.writeFileSync(
        path.join(home, ".gemini", "settings.json"),
        JSON.stringify({
          security: { auth: { selectedType: "gemini-api-key" }, folderTrust: { enabled: false } },
          advanced: { ignoreLocalEnv: true },
          privacy: { usageStatisticsEnabled: false },
          telemetry: { enabled: false },
          general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
          mcpServers: {
            secretive: {
              command: "node",
              args: [SERVER],
              env: { MCP_TEST_SECRET: SECRET },
              trust: true,
            },
          },
        }),
      );
      const from = gemini.turnRequests().length;
      // Not execFileSync: the fake API answers from this process's event loop.
      await execa(
        resolveGeminiPath({}),
        ["--prompt=", "--output-format", "stream-json", "-m", "gemini-2.5-flash"],
        {
          cwd,
          input: "Use your tools.",
          timeout: 180_000,
          extendEnv: false,
          env: {
            PATH: process.env.PATH,
            HOME: home,
            LANG: "C.UTF-8",
            GEMINI_API_KEY: "AIza-gemini-key-for-the-mcp-check-000",
            GOOGLE_GEMINI_BASE_URL: gemini.url,
            ...GEMINI_FIXED_ENV,
            GEMINI_CLI_TRUST_WORKSPACE: trusted ? "true" : "false",
          },
        },
      );
      const reqs = gemini.turnRequests().slice(from);
      expect(reqs.length).toBeGreaterThan(0);
      return (reqs[0]!.body?.tools ?? []).flatMap((t) =>
        (t.functionDeclarations ?? []).map((f) => f.name),
      );
    }

    it("untrusted (as Tether runs it) the server's tool is not offered, though the server is trusted; in a trusted workspace it is", async () => {
      const untrusted = await declared(false);
      expect(untrusted.length).toBeGreaterThan(0); // the CLI's own tools were declared
      expect(untrusted.filter((n) => n.includes("whoami"))).toEqual([]);
      const trusted = await declared(true);
      // Trusted, with `trust: true` (else headless it leaves out a tool that would ask), the CLI
      // names it mcp_<server>_<tool>.
      expect(trusted).toContain("mcp_secretive_whoami");
    });
  },
);
