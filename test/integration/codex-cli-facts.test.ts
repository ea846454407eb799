import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  codexProviderArgs,
  isCompactionRequest,
  lastUserText,
  messages,
  replies,
  startFakeOpenAI,
  toolOutputs,
  userTexts,
  type FakeOpenAI,
  type FakeRequest,
} from "../helpers/fake-openai.js";
import {
  completedItems,
  resolveCodexBinary,
  runCodex,
  threadIdOf,
  type CodexEvent,
  type CodexRunResult,
} from "../helpers/real-codex.js";

/*
 * The facts of docs/codex-cli-facts.md, proved with the real Codex CLI (the pinned
 * @openai/codex native binary) against the fake Responses API on 127.0.0.1. Each run takes
 * one to two seconds of the CLI's own start-up; the timeouts are generous for a loaded machine.
 */

const VERSION = "0.169.0";
const MODEL = "gpt-5.5";
const RUN_MS = 120_000;
const TEST_MS = 240_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const binary = resolveCodexBinary();
const root = fs.mkdtempSync(path.join(os.tmpdir(), "tether-codex-"));
const home = path.join(root, "home");
const codexHome = path.join(home, ".codex");
// Not a parent of CODEX_HOME: Codex refuses to set up its sandbox helper under TMPDIR.
const tmpDir = path.join(root, "tmp");
fs.mkdirSync(codexHome, { recursive: true });
fs.mkdirSync(tmpDir);
let fake: FakeOpenAI;

beforeAll(async () => {
  fake = await startFakeOpenAI();
});
afterAll(async () => {
  await fake?.close();
  fs.rmSync(root, { recursive: true, force: true });
});
// A scripted reply left over would be answered to the next test's CLI instead.
afterEach(() => {
  const left = fake.pending();
  fake.reset();
  expect(left).toBe(0);
});

let dirs = 0;
function workDir(): string {
  const dir = path.join(root, `work-${++dirs}`);
  fs.mkdirSync(dir);
  execFileSync("git", ["init", "-q"], { cwd: dir });
  return dir;
}

interface Run {
  cwd: string;
  prompt?: string;
  /** Flags before the prompt ("-", read from stdin). */
  flags?: string[];
  provider?: Parameters<typeof codexProviderArgs>[1];
  model?: string | null;
  signal?: AbortSignal;
  onEvent?: (event: CodexEvent) => void;
}

/** Flags of every run: the fake as provider, no plugin sync and no analytics (no network). */
function common(run: Run): string[] {
  return [
    ...codexProviderArgs(fake.url, run.provider),
    "--disable",
    "plugins",
    "-c",
    "analytics.enabled=false",
    ...(run.model === null ? [] : ["-m", run.model ?? MODEL]),
    ...(run.flags ?? []),
  ];
}

function codex(args: string[], run: Run): Promise<CodexRunResult> {
  return runCodex({
    binary,
    args,
    prompt: run.prompt ?? "hello",
    cwd: run.cwd,
    env: {
      PATH: process.env.PATH,
      HOME: home,
      CODEX_HOME: codexHome,
      TMPDIR: tmpDir,
      OPENAI_API_KEY: "sk-test",
      LANG: "C.UTF-8",
    },
    timeoutMs: RUN_MS,
    ...(run.signal ? { signal: run.signal } : {}),
    ...(run.onEvent ? { onEvent: run.onEvent } : {}),
  });
}

const fresh = (run: Run) => codex(["exec", "--json", ...common(run), "-"], run);
const resume = (id: string, run: Run) =>
  codex(["exec", "resume", "--json", ...common(run), id, "-"], run);

/** The responses requests a run made (those after `before`). */
const since = (before: number): FakeRequest[] => fake.responseRequests().slice(before);

function agentText(result: CodexRunResult): string | undefined {
  const item = completedItems(result).findLast((i) => i.type === "agent_message");
  return typeof item?.text === "string" ? item.text : undefined;
}

type Usage = {
  input_tokens: number;
  cached_input_tokens: number;
  output_tokens: number;
  reasoning_output_tokens: number;
};
function turnUsage(result: CodexRunResult): Usage | undefined {
  return result.events.find((e) => e.type === "turn.completed")?.usage as Usage | undefined;
}

function rolloutOf(id: string): string | undefined {
  const walk = (dir: string): string[] =>
    fs.existsSync(dir)
      ? fs
          .readdirSync(dir, { withFileTypes: true })
          .flatMap((e) =>
            e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)],
          )
      : [];
  return walk(path.join(codexHome, "sessions")).find((f) => f.endsWith(`-${id}.jsonl`));
}

describe(`Codex CLI ${VERSION}, the real binary against a fake Responses API`, () => {
  it("the pinned binary says its version, and `exec resume` takes a session id", () => {
    expect(execFileSync(binary, ["--version"], { encoding: "utf8" }).trim()).toBe(
      `codex-cli ${VERSION}`,
    );
    const help = execFileSync(binary, ["exec", "resume", "--help"], { encoding: "utf8" });
    expect(help).toContain("[SESSION_ID]");
    expect(help).toContain("--last");
    expect(help).toContain("--json");
  });

  let first: { id: string; cwd: string; request: FakeRequest; usage: Usage };

  it(
    "a fresh turn: thread.started (the thread id) first, then the answer and the usage",
    async () => {
      const cwd = workDir();
      const before = fake.responseRequests().length;
      const result = await fresh({ cwd, prompt: "What does widgets do?" });

      expect(result.exitCode).toBe(0);
      expect(result.events.map((e) => e.type)).toEqual([
        "thread.started",
        "turn.started",
        "item.completed",
        "turn.completed",
      ]);
      const id = threadIdOf(result);
      expect(id).toMatch(UUID);

      const [request] = since(before);
      expect(request?.body).toMatchObject({
        model: MODEL,
        stream: true,
        store: false,
        prompt_cache_key: id,
      });
      expect(request?.body?.previous_response_id).toBeUndefined();
      expect(userTexts(request!)).toEqual(["What does widgets do?"]);
      expect(agentText(result)).toBe(`reply#${request!.n} input_items=4`);

      // Usage is the API's, renamed: cached_tokens -> cached_input_tokens.
      const usage = turnUsage(result)!;
      expect(usage).toMatchObject({
        input_tokens: request!.usage!.input_tokens,
        cached_input_tokens: request!.usage!.input_tokens_details.cached_tokens,
        output_tokens: request!.usage!.output_tokens,
      });
      expect(usage.input_tokens).toBeGreaterThan(5000); // ~38 KB of instructions and tools

      // The session file: $CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl
      const rollout = rolloutOf(id!);
      expect(rollout).toMatch(/sessions\/\d{4}\/\d{2}\/\d{2}\/rollout-[\dT-]+-[\da-f-]+\.jsonl$/);
      const meta = JSON.parse(fs.readFileSync(rollout!, "utf8").split("\n")[0]!) as {
        type: string;
        payload: { id: string; cwd: string; cli_version: string };
      };
      expect(meta).toMatchObject({
        type: "session_meta",
        payload: { id, cwd, cli_version: VERSION },
      });
      first = { id: id!, cwd, request: request!, usage };
    },
    TEST_MS,
  );

  it(
    "a resume keeps the thread id and sends the earlier turns again, byte for byte",
    async () => {
      const before = fake.responseRequests().length;
      const result = await resume(first.id, { cwd: first.cwd, prompt: "And gadgets?" });

      expect(result.exitCode).toBe(0);
      expect(result.events[0]).toEqual({ type: "thread.started", thread_id: first.id });
      const [request] = since(before);
      const body = request!.body!;
      // Stateless: no previous_response_id, the whole history is in `input`.
      expect(body.previous_response_id).toBeUndefined();
      expect(body.store).toBe(false);
      expect(body.prompt_cache_key).toBe(first.id);
      const earlier = first.request.body!.input as unknown[];
      const now = body.input as unknown[];
      expect(now.slice(0, earlier.length)).toEqual(earlier);
      expect(JSON.stringify(body.tools)).toBe(JSON.stringify(first.request.body!.tools));
      expect(messages(request!).slice(-2)).toEqual([
        { role: "assistant", text: `reply#${first.request.n} input_items=4` },
        { role: "user", text: "And gadgets?" },
      ]);
      expect(userTexts(request!)).toEqual(["What does widgets do?", "And gadgets?"]);
      // The unchanged prefix is what the API's prompt cache can serve.
      expect(request!.usage!.input_tokens_details.cached_tokens).toBeGreaterThan(5000);

      // turn.completed reports the thread's running total, not this turn's.
      expect(turnUsage(result)!.input_tokens).toBe(
        first.usage.input_tokens + request!.usage!.input_tokens,
      );
    },
    TEST_MS,
  );

  it(
    "a resume from another working directory continues the same thread there",
    async () => {
      const cwd = workDir();
      const before = fake.responseRequests().length;
      const result = await resume(first.id, { cwd, prompt: "From elsewhere." });

      expect(result.exitCode).toBe(0);
      expect(threadIdOf(result)).toBe(first.id);
      const [request] = since(before);
      expect(userTexts(request!)).toEqual([
        "What does widgets do?",
        "And gadgets?",
        "From elsewhere.",
      ]);
      const contexts = messages(request!).filter((m) => m.text.startsWith("<environment_context>"));
      expect(contexts.at(-1)?.text).toContain(`<cwd>${cwd}</cwd>`);
    },
    TEST_MS,
  );

  it(
    "a resume without -m runs on the default model, and compacts the thread first",
    async () => {
      const cwd = workDir();
      const created = await fresh({ cwd, prompt: "Start on gpt-5.5." });
      const id = threadIdOf(created)!;
      const before = fake.responseRequests().length;
      const result = await resume(id, { cwd, prompt: "Go on.", model: null });

      expect(result.exitCode).toBe(0);
      expect(threadIdOf(result)).toBe(id);
      const [compaction, turn] = since(before);
      expect(isCompactionRequest(compaction!)).toBe(true);
      expect(compaction!.body?.model).toBe(MODEL);
      expect(turn!.body?.model).not.toBe(MODEL);
      expect(lastUserText(turn!)).toBe("Go on.");
      const warning = completedItems(result).find((i) => i.type === "error");
      expect(warning?.message).toContain(`recorded with model \`${MODEL}\` but is resuming with`);
    },
    TEST_MS,
  );

  it(
    "the thread id is reported before the API answers, and a killed turn can be resumed",
    async () => {
      const cwd = workDir();
      fake.script(replies.hang());
      const before = fake.responseRequests().length;
      const seen: CodexEvent[] = [];
      const stop = new AbortController();
      const running = fresh({
        cwd,
        prompt: "Never answered.",
        signal: stop.signal,
        onEvent: (e) => seen.push(e),
      });
      await fake.waitFor(() => since(before).length === 1, RUN_MS);
      await until(() => seen.length > 0);
      expect(seen[0]?.type).toBe("thread.started");
      const id = seen[0]!.thread_id as string;
      stop.abort();
      const killed = await running;
      expect(killed.stopped).toBe(true);
      expect(killed.events.some((e) => e.type === "turn.completed")).toBe(false);

      const result = await resume(id, { cwd, prompt: "Try again." });
      expect(result.exitCode).toBe(0);
      expect(threadIdOf(result)).toBe(id);
      expect(userTexts(since(before).at(-1)!)).toEqual(["Never answered.", "Try again."]);
    },
    TEST_MS,
  );

  it(
    "an unknown thread id: exit 1, nothing on stdout, no API call",
    async () => {
      const before = fake.requests.length;
      const unknown = "01a20d55-0000-7000-8000-000000000000";
      const result = await resume(unknown, { cwd: first.cwd });

      expect(result.exitCode).toBe(1);
      expect(result.events).toEqual([]);
      expect(result.stderr).toContain(
        `thread/resume failed: no rollout found for thread id ${unknown}`,
      );
      expect(fake.requests.length).toBe(before);
    },
    TEST_MS,
  );

  it(
    "an id that is not a UUID and names no thread starts a fresh thread: exit 0, another id",
    async () => {
      const result = await resume("no-such-thread", { cwd: first.cwd, prompt: "Hello?" });

      expect(result.exitCode).toBe(0);
      const id = threadIdOf(result);
      expect(id).toMatch(UUID);
      expect(id).not.toBe(first.id);
      expect(userTexts(fake.responseRequests().at(-1)!)).toEqual(["Hello?"]);
    },
    TEST_MS,
  );

  it.each([
    ["HTTP 400 context_length_exceeded", replies.contextOverflow()],
    ["response.failed context_length_exceeded", replies.contextOverflowStreamed()],
  ])(
    "context overflow (%s): exit 1, error then turn.failed, no retry",
    async (_name, reply) => {
      fake.script(reply);
      const before = fake.responseRequests().length;
      const result = await fresh({ cwd: first.cwd });

      const message =
        "Codex ran out of room in the model's context window. Start a new thread or clear earlier history before retrying.";
      expect(result.exitCode).toBe(1);
      expect(result.events.map((e) => e.type)).toEqual([
        "thread.started",
        "turn.started",
        "error",
        "turn.failed",
      ]);
      expect(result.events[2]).toEqual({ type: "error", message });
      expect(result.events[3]).toEqual({ type: "turn.failed", error: { message } });
      expect(since(before)).toHaveLength(1);
    },
    TEST_MS,
  );

  it(
    "401: Codex retries 5 times (6 requests), then exit 1 with the API's message",
    async () => {
      fake.setDefault(replies.unauthorized());
      const before = fake.responseRequests().length;
      const result = await fresh({ cwd: first.cwd });

      expect(result.exitCode).toBe(1);
      expect(since(before)).toHaveLength(6);
      const errors = result.events.filter((e) => e.type === "error").map((e) => e.message);
      expect(errors.slice(0, 5).every((m) => String(m).startsWith("Reconnecting... "))).toBe(true);
      expect(result.events.at(-1)).toMatchObject({
        type: "turn.failed",
        error: {
          message: expect.stringMatching(/^unexpected status 401 Unauthorized: Incorrect API key/),
        },
      });
    },
    TEST_MS,
  );

  it(
    "401 with the provider's retries at 0: one request, exit 1",
    async () => {
      fake.script(replies.unauthorized());
      const before = fake.responseRequests().length;
      const result = await fresh({
        cwd: first.cwd,
        provider: { requestMaxRetries: 0, streamMaxRetries: 0 },
      });

      expect(result.exitCode).toBe(1);
      expect(since(before)).toHaveLength(1);
      expect(result.events.map((e) => e.type)).toEqual([
        "thread.started",
        "turn.started",
        "error",
        "turn.failed",
      ]);
    },
    TEST_MS,
  );

  it(
    "429 without retry-after: exit 1 at once, 'exceeded retry limit'",
    async () => {
      fake.script(replies.rateLimited());
      const before = fake.responseRequests().length;
      const result = await fresh({ cwd: first.cwd });

      expect(result.exitCode).toBe(1);
      expect(since(before)).toHaveLength(1);
      expect(result.events.at(-1)).toMatchObject({
        type: "turn.failed",
        error: { message: expect.stringContaining("exceeded retry limit, last status: 429") },
      });
    },
    TEST_MS,
  );

  it(
    "a scripted shell call really runs (workspace-write), and its output goes back to the API",
    async () => {
      const cwd = workDir();
      const call = replies.shell("echo made-by-codex > tool-ran.txt && cat tool-ran.txt");
      fake.script(call, replies.text("done"));
      const before = fake.responseRequests().length;
      const result = await fresh({ cwd, flags: ["-s", "workspace-write"] });

      expect(result.exitCode).toBe(0);
      expect(fs.readFileSync(path.join(cwd, "tool-ran.txt"), "utf8")).toBe("made-by-codex\n");
      const command = "/bin/bash -lc 'echo made-by-codex > tool-ran.txt && cat tool-ran.txt'";
      expect(result.events.filter((e) => e.type.startsWith("item."))).toEqual([
        {
          type: "item.started",
          item: {
            id: "item_0",
            type: "command_execution",
            command,
            aggregated_output: "",
            exit_code: null,
            status: "in_progress",
          },
        },
        {
          type: "item.completed",
          item: {
            id: "item_0",
            type: "command_execution",
            command,
            aggregated_output: "made-by-codex\n",
            exit_code: 0,
            status: "completed",
          },
        },
        { type: "item.completed", item: { id: "item_1", type: "agent_message", text: "done" } },
      ]);
      const [asked, answered] = since(before);
      const shellTool = asked!.body?.tools?.find((t) => t.name === "exec_command");
      expect(shellTool).toMatchObject({ type: "function", name: "exec_command" });
      const callId = call.kind === "function_call" ? call.callId : "";
      const [output] = toolOutputs(answered!);
      expect(output?.callId).toBe(callId);
      expect(output?.output).toMatch(
        /Process exited with code 0\n[\s\S]*Output:\nmade-by-codex\n$/,
      );
    },
    TEST_MS,
  );

  it(
    "read-only sandbox: the command runs, its write is refused",
    async () => {
      const cwd = workDir();
      fake.script(replies.shell("echo reading-is-fine; touch refused.txt"), replies.text("ok"));
      const result = await fresh({ cwd, flags: ["-s", "read-only"] });

      expect(result.exitCode).toBe(0);
      expect(fs.existsSync(path.join(cwd, "refused.txt"))).toBe(false);
      const output = toolOutputs(fake.responseRequests().at(-1)!)[0]?.output ?? "";
      expect(output).toContain("reading-is-fine");
      expect(output).toContain("Read-only file system");
    },
    TEST_MS,
  );
});

async function until(check: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 50));
  }
}
