import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { buildCodexArgs } from "../../src/codex/codex-args.js";
import {
  classifyCodex,
  codexEarlyStop,
  codexTurnTokens,
  newCodexEvidence,
  observeCodex,
} from "../../src/codex/codex-outcome.js";
import { CodexStreamParser } from "../../src/codex/codex-stream.js";
import { estimateCostUsd, priceOf } from "../../src/providers/openai/pricing.js";

/*
 * The Codex verdicts against the output the real CLI printed (docs/codex-cli-facts/fixtures):
 * each recorded case, read by the adapter's parser, must come to the outcome the facts say.
 */

const FIXTURES = path.resolve(
  import.meta.dirname,
  "../../docs/codex-cli-facts/fixtures/codex-0.169.0",
);
const read = (name: string) =>
  fs.existsSync(path.join(FIXTURES, name)) ? fs.readFileSync(path.join(FIXTURES, name)) : null;

function judge(fixture: string, exitCode: number, resume?: string) {
  const ev = newCodexEvidence();
  const parser = new CodexStreamParser(1 << 20);
  let stop;
  for (const m of [...parser.push(read(`${fixture}.jsonl`)!), ...parser.end()]) {
    observeCodex(ev, m);
    stop ??= codexEarlyStop(m, ev, resume);
  }
  const stderr = read(`${fixture}.stderr.txt`)?.toString("utf8") ?? "";
  return {
    ev,
    stop,
    verdict: classifyCodex({
      ...(resume ? { resumeSessionId: resume } : {}),
      state: ev,
      exit: { exitCode, signal: null, stderrTail: stderr, ...(stop ? { stop } : {}) },
    }),
    unreadable: parser.counts.unreadable,
  };
}

describe("Codex verdicts on recorded output", () => {
  const rows: Array<[string, number, string, string | undefined]> = [
    ["fresh-turn", 0, "success", undefined],
    ["context-overflow-400", 1, "poisoned", undefined],
    ["context-overflow-streamed", 1, "poisoned", undefined],
    ["unauthorized-401", 1, "auth_failed", undefined],
    ["unauthorized-401-no-retries", 1, "auth_failed", undefined],
    ["missing-api-key", 1, "auth_failed", undefined],
    ["rate-limited-429", 1, "failed", undefined],
    ["quota-429", 1, "failed", undefined],
    ["server-error-500-then-ok", 0, "success", undefined],
    ["resume-unknown-uuid", 1, "resume_rejected", "01a20d55-0000-7000-8000-000000000000"],
    // A name that is no UUID makes Codex start a fresh thread: another id than asked.
    ["resume-unknown-name", 0, "resume_rejected", "01a20d55-0000-7000-8000-000000000001"],
  ];
  it.each(rows)("%s (exit %i) → %s", (fixture, exit, kind, resume) => {
    const { verdict, unreadable } = judge(fixture, exit, resume);
    expect(verdict.kind).toBe(kind);
    expect(unreadable).toBe(0);
  });

  it("a 401 stops the run at the first retry", () => {
    expect(judge("unauthorized-401", 1).stop).toMatchObject({ reason: "auth_failed" });
  });

  it("an overflow is classified as one (the runner retries it fresh as context_overflow)", () => {
    expect(judge("context-overflow-400", 1).verdict.contextOverflow).toBe(true);
    expect(judge("context-overflow-streamed", 1).verdict.contextOverflow).toBe(true);
    expect(judge("rate-limited-429", 1).verdict.contextOverflow).toBeUndefined();
  });

  it("a rate limit says so", () => {
    expect(judge("rate-limited-429", 1).verdict.detail).toMatch(/rate limit/);
  });
});

describe("a turn's usage from the thread's running totals", () => {
  it("is what the totals grew by since the rollout before the run", () => {
    const ev = newCodexEvidence();
    ev.before = {
      totals: {
        input_tokens: 9179,
        cached_input_tokens: 0,
        cache_write_input_tokens: 0,
        output_tokens: 6,
        reasoning_output_tokens: 0,
      },
      lastInputTokens: 9179,
      contextWindow: 258400,
      requests: 1,
      toolCalls: 0,
    };
    ev.completed = {
      usage: {
        input_tokens: 18438,
        cached_input_tokens: 9088,
        cache_write_input_tokens: 0,
        output_tokens: 12,
        reasoning_output_tokens: 0,
      },
    };
    expect(codexTurnTokens(ev)).toEqual({
      inputTokens: 18438 - 9179 - 9088,
      cacheReadTokens: 9088,
      cacheCreationTokens: 0,
      outputTokens: 6,
    });
  });

  it("prices by the longest matching model prefix, the gpt-5 family otherwise", () => {
    expect(priceOf("gpt-5-mini-2025")).toEqual(priceOf("gpt-5-mini"));
    expect(priceOf("gpt-5.5")).toEqual(priceOf("gpt-5"));
    expect(
      estimateCostUsd("gpt-5", {
        inputTokens: 1_000_000,
        cacheReadTokens: 1_000_000,
        cacheCreationTokens: 0,
        outputTokens: 1_000_000,
      }),
    ).toBeCloseTo(1.25 + 0.125 + 10, 6);
  });
});

describe("Codex arguments", () => {
  const settings = { model: "gpt-5.5", timeoutMs: 1, stallMs: 1, appendSystemPrompt: 'say "hi"' };
  it("a fresh run: -s for the sandbox, the prompt on stdin", () => {
    const args = buildCodexArgs(settings, undefined, {
      baseUrl: "http://127.0.0.1:8088",
      sandboxMode: "danger-full-access",
    });
    expect(args.slice(0, 2)).toEqual(["exec", "--json"]);
    expect(args).toContain(
      'model_providers.tether={name="Tether",base_url="http://127.0.0.1:8088",env_key="OPENAI_API_KEY",wire_api="responses",supports_websockets=false}',
    );
    expect(args.join(" ")).toContain("-m gpt-5.5 -s danger-full-access");
    expect(args).toContain('developer_instructions="say \\"hi\\""');
    expect(args).not.toContain("--trust");
    expect(args.at(-1)).toBe("-");
  });
  it("the operator's MCP servers (#39): -c mcp_servers.<name>.* in TOML, and the run's catalog", () => {
    const args = buildCodexArgs(settings, undefined, {
      baseUrl: "x",
      sandboxMode: "danger-full-access",
      servers: [
        {
          name: "s",
          type: "stdio",
          command: "socat",
          args: ["-", "UNIX-CONNECT:/run/x.sock"],
          env: {},
        },
        { name: "e", type: "stdio", command: "node", args: [], env: { T: 'a"b' } },
        { name: "r", type: "http", url: "http://127.0.0.1:8088/mcp/r", headers: {} },
        {
          name: "h",
          type: "http",
          url: "https://h.example/mcp",
          headers: { Authorization: "Bearer t" },
        },
      ],
      catalog: "/home/agent/catalog.json",
    });
    for (const c of [
      'mcp_servers.s.command="socat"',
      'mcp_servers.s.args=["-","UNIX-CONNECT:/run/x.sock"]',
      'mcp_servers.e.env={"T"="a\\"b"}',
      'mcp_servers.r.url="http://127.0.0.1:8088/mcp/r"',
      'mcp_servers.h.http_headers={"Authorization"="Bearer t"}',
      'model_catalog_json="/home/agent/catalog.json"',
    ])
      expect(args).toContain(c);
    expect(args.join(" ")).not.toContain("mcp_servers.s.env");
    expect(args.join(" ")).not.toContain("mcp_servers.r.http_headers");
    // Without servers, no catalog is named.
    expect(
      buildCodexArgs(settings, undefined, {
        baseUrl: "x",
        sandboxMode: "read-only",
        catalog: "/c",
      }).join(" "),
    ).not.toContain("model_catalog_json");
  });
  it("Tether's tool server: -c mcp_servers.tether.*, and the catalog without tool search beside it", () => {
    const args = buildCodexArgs(settings, undefined, {
      baseUrl: "x",
      sandboxMode: "danger-full-access",
      mcp: {
        name: "tether",
        outDir: "/run/tether/out",
        command: "/usr/bin/node",
        args: ["/app/s.mjs", "/run/tether/out/line-comments.jsonl"],
        tools: ["comment_on_line"],
      },
    });
    expect(args).toContain('mcp_servers.tether.command="/usr/bin/node"');
    expect(args).toContain(
      'mcp_servers.tether.args=["/app/s.mjs","/run/tether/out/line-comments.jsonl"]',
    );
    expect(args).toContain('model_catalog_json="/run/tether/out/codex-models.json"');
    expect(
      buildCodexArgs(settings, undefined, { baseUrl: "x", sandboxMode: "read-only" }).join(" "),
    ).not.toContain("mcp_servers");
  });
  it("a resume: exec resume, the sandbox as config (resume has no -s), the id before the prompt", () => {
    const id = "01a20d6e-2d35-7a90-b107-b3995b5de4f6";
    const args = buildCodexArgs(settings, id, { baseUrl: "x", sandboxMode: "workspace-write" });
    expect(args.slice(0, 3)).toEqual(["exec", "resume", "--json"]);
    expect(args).not.toContain("-s");
    expect(args).toContain('sandbox_mode="workspace-write"');
    expect(args.slice(-2)).toEqual([id, "-"]);
  });
});
