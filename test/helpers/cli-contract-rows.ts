/**
 * The rows of the agent-CLI contract suite (test/helpers/cli-contract-suite.ts): one per registered
 * CLI, each the real CLI's fake model API seen through one small interface. A new CLI's row is
 * its fake API wrapped in a ContractApi, the agent's config and the environment that points the
 * runner at the fake; the suite's scenarios are the same for every row.
 */
import {
  lastUserText as anthropicLastUser,
  replies as anthropicReplies,
  startFakeAnthropic,
  type FakeAnthropic,
  type FakeRequest as AnthropicRequest,
} from "./fake-anthropic.js";
import {
  geminiReplies,
  startFakeGemini,
  type FakeGemini,
  type FakeGeminiRequest,
} from "./fake-gemini.js";
import {
  lastUserText as openaiLastUser,
  messages as openaiMessages,
  replies as openaiReplies,
  startFakeOpenAI,
  toolOutputs,
  type FakeOpenAI,
  type FakeRequest as OpenAIRequest,
} from "./fake-openai.js";

/** One model request as the suite reads it. */
export interface ContractRequest {
  n: number;
  /** Every text of the conversation the CLI sent (user and assistant), oldest first. */
  said: string[];
  /** The last user message's text. */
  lastUser: string;
  /** The tool results the CLI sent back, as text. */
  toolOutputs: string[];
  /** The whole request body as JSON (to prove something is nowhere in what the model got). */
  raw: string;
}

/** A CLI's fake model API, as the scenarios drive it. */
export interface ContractApi {
  /** How many requests so far: `since(mark())` is what came after. */
  mark(): number;
  /** The model requests (turns, not probes) received after `mark`. */
  since(mark: number): ContractRequest[];
  /** The next request is answered with `text`. */
  answer(text: string): void;
  /** The next request is accepted and never answered (a turn in flight). */
  hang(): void;
  /** The next request runs `command` in the agent's shell tool; the one after answers `text`. */
  shell(command: string, text: string): void;
  /**
   * Every request but a cold one (the whole thread, `# Instruction`) is answered with the API's
   * context overflow; returns the undo.
   */
  overflowUntilCold(): () => void;
  /** Resolves once a request after `mark` was answered with a hang. */
  waitForHang(mark: number): Promise<void>;
  /** Drops scripted replies and restores the default answer. */
  reset(): void;
  close(): Promise<void>;
}

export interface ContractRow {
  /** The registry's name of the CLI (src/cli-registry.ts). */
  cli: string;
  /** The agent's settings in `.github/tether.yml`, under `agents.subject:` (YAML, 4 spaces in). */
  agent: string;
  /** The model credential the runner holds: it must never reach the sandbox. */
  key: string;
  /** Starts the fake API; the environment that points the runner at it with `key`. */
  start(): Promise<{ api: ContractApi; env: Record<string, string> }>;
  /** The files at the top of a checkout this CLI would read as its own instructions. */
  controlFiles: string[];
}

function anthropicTexts(req: AnthropicRequest): string[] {
  const out: string[] = [];
  for (const m of req.body?.messages ?? []) {
    if (typeof m.content === "string") out.push(m.content);
    else
      for (const b of m.content)
        if (b.type === "text" && typeof b.text === "string") out.push(b.text);
  }
  return out;
}

function anthropicToolResults(req: AnthropicRequest): string[] {
  const out: string[] = [];
  for (const m of req.body?.messages ?? [])
    if (typeof m.content !== "string")
      for (const b of m.content) if (b.type === "tool_result") out.push(JSON.stringify(b.content));
  return out;
}

/**
 * A CLI on the fake Messages API: Claude Code (tool `Bash`) or opencode through its Anthropic
 * provider (tool `bash`). `firstLineAfterAnswer`: the CLI prints its first line (and so names its
 * session) only once the model's first answer streams, so a turn held in flight must have had
 * one answer first (opencode, docs/opencode-cli-facts.md, "The stream"). `summary`: the CLI's own
 * compaction request (the history to summarise, not a turn: left out of `since`, and refused
 * while the API overflows, since it carries the same history).
 */
function anthropicApi(
  fake: FakeAnthropic,
  cli: {
    shellTool: string;
    firstLineAfterAnswer: boolean;
    summary?: (req: AnthropicRequest) => boolean;
  },
): ContractApi {
  const summary = cli.summary ?? (() => false);
  const view = (r: AnthropicRequest): ContractRequest => ({
    n: r.n,
    said: anthropicTexts(r),
    lastUser: anthropicLastUser(r),
    toolOutputs: anthropicToolResults(r),
    raw: JSON.stringify(r.body ?? null),
  });
  const shellCall = (command: string) =>
    anthropicReplies.toolUse(cli.shellTool, { command, description: "Look around" });
  return {
    mark: () => fake.requests.length,
    since: (m) =>
      fake
        .messageRequests()
        .filter((r) => r.n > m && !summary(r))
        .map(view),
    answer: (text) => fake.script(anthropicReplies.text(text)),
    hang: () =>
      cli.firstLineAfterAnswer
        ? fake.script(shellCall("echo first-step"), anthropicReplies.hang())
        : fake.script(anthropicReplies.hang()),
    shell: (command, text) => fake.script(shellCall(command), anthropicReplies.text(text)),
    overflowUntilCold() {
      // Claude Code 2.1.332 and opencode 1.18.33 compact by themselves after one overflow: their
      // summaries are refused too, so they give up (test/e2e/runner.test.ts 5c shows the other
      // case).
      fake.setDefault((req) =>
        anthropicLastUser(req).includes("# Instruction") && !summary(req)
          ? anthropicReplies.text(`reply#${req.n} cold`)
          : anthropicReplies.promptTooLong(),
      );
      return () => fake.reset();
    },
    waitForHang: (m) =>
      fake.waitFor((reqs) => reqs.some((r) => r.n > m && r.reply === "hang"), 60_000),
    reset: () => fake.reset(),
    close: () => fake.close(),
  };
}

/**
 * opencode 1.18.33's compaction request: the history quoted in one user message (the cold
 * prompt's `# Instruction` among it), then its summary instructions.
 */
const opencodeSummary = (req: AnthropicRequest): boolean =>
  anthropicLastUser(req).includes("Create a new anchored summary from the conversation history");

function codexApi(fake: FakeOpenAI): ContractApi {
  const view = (r: OpenAIRequest): ContractRequest => ({
    n: r.n,
    said: openaiMessages(r).map((x) => x.text),
    lastUser: openaiLastUser(r),
    toolOutputs: toolOutputs(r).map((o) => o.output),
    raw: JSON.stringify(r.body ?? null),
  });
  return {
    mark: () => fake.requests.length,
    since: (m) =>
      fake
        .responseRequests()
        .filter((r) => r.n > m)
        .map(view),
    answer: (text) => fake.script(openaiReplies.text(text)),
    hang: () => fake.script(openaiReplies.hang()),
    shell: (command, text) => fake.script(openaiReplies.shell(command), openaiReplies.text(text)),
    overflowUntilCold() {
      fake.setDefault((req) =>
        openaiLastUser(req).includes("# Instruction")
          ? openaiReplies.text(`reply#${req.n} cold`)
          : openaiReplies.contextOverflow(),
      );
      return () => fake.reset();
    },
    waitForHang: (m) =>
      fake.waitFor((reqs) => reqs.some((r) => r.n > m && r.reply === "hang"), 60_000),
    reset: () => fake.reset(),
    close: () => fake.close(),
  };
}

/** A Gemini request's texts, each part's text (a function's call or response as JSON). */
function geminiTexts(req: FakeGeminiRequest): string[] {
  return (req.body?.contents ?? []).flatMap((c) =>
    (c.parts ?? []).flatMap((p) => (typeof p.text === "string" ? [p.text] : [])),
  );
}

/** The last user content that carries text (a function's response is a user content too). */
function geminiLastUser(req: FakeGeminiRequest): string {
  const contents = req.body?.contents ?? [];
  for (let i = contents.length - 1; i >= 0; i--) {
    const c = contents[i]!;
    if (c.role !== "user") continue;
    const texts = (c.parts ?? []).flatMap((p) => (typeof p.text === "string" ? [p.text] : []));
    if (texts.length) return texts.join("");
  }
  return "";
}

function geminiToolOutputs(req: FakeGeminiRequest): string[] {
  return (req.body?.contents ?? []).flatMap((c) =>
    (c.parts ?? []).flatMap((p) =>
      p.functionResponse === undefined ? [] : [JSON.stringify(p.functionResponse)],
    ),
  );
}

function geminiApi(fake: FakeGemini): ContractApi {
  const view = (r: FakeGeminiRequest): ContractRequest => ({
    n: r.n,
    said: geminiTexts(r),
    lastUser: geminiLastUser(r),
    toolOutputs: geminiToolOutputs(r),
    raw: JSON.stringify(r.body ?? null),
  });
  return {
    mark: () => fake.requests.length,
    // The turn's requests: the CLI's side questions (next speaker, loop checks) and token
    // counts are not the model's turns.
    since: (m) =>
      fake
        .turnRequests()
        .filter((r) => r.n > m)
        .map(view),
    answer: (text) => fake.script(geminiReplies.text(text)),
    hang: () => fake.script(geminiReplies.hang()),
    shell: (command, text) => fake.script(geminiReplies.shell(command), geminiReplies.text(text)),
    overflowUntilCold() {
      // Gemini CLI does not retry a 400 nor compact after one (docs/gemini-cli-facts.md).
      fake.setDefault((req) =>
        geminiLastUser(req).includes("# Instruction")
          ? geminiReplies.text(`reply#${req.n} cold`)
          : geminiReplies.contextOverflow(),
      );
      return () => fake.reset();
    },
    waitForHang: (m) =>
      fake.waitFor((reqs) => reqs.some((r) => r.n > m && r.reply === "hang"), 60_000),
    reset: () => fake.reset(),
    close: () => fake.close(),
  };
}

/** Every registered CLI's row; test/repo/cli-names' sibling check keeps it complete. */
export const CONTRACT_ROWS: ContractRow[] = [
  {
    cli: "claude",
    // Its tools need permission rules; Codex has none.
    agent: "    cli: claude\n    model: claude-sonnet-4-5\n    allowedTools: [Bash, Read]\n",
    key: "sk-ant-contract-key-0123456789abcdef",
    controlFiles: ["CLAUDE.md", ".claude/settings.json"],
    async start() {
      const fake = await startFakeAnthropic();
      return {
        api: anthropicApi(fake, { shellTool: "Bash", firstLineAfterAnswer: false }),
        env: { ANTHROPIC_BASE_URL: fake.url, ANTHROPIC_API_KEY: this.key },
      };
    },
  },
  {
    cli: "codex",
    agent: "    cli: codex\n    model: gpt-5.5\n",
    key: "sk-openai-contract-key-0123456789abcdef",
    controlFiles: ["AGENTS.md", ".codex/config.toml"],
    async start() {
      const fake = await startFakeOpenAI();
      return {
        api: codexApi(fake),
        env: { OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: this.key },
      };
    },
  },
  {
    cli: "gemini",
    // Its policy allows every tool when the agent names none (docs/gemini-cli-facts.md).
    agent: "    cli: gemini\n    model: gemini-2.5-flash\n",
    key: "AIza-gemini-contract-key-0123456789abcdef",
    controlFiles: ["GEMINI.md", ".gemini/settings.json"],
    async start() {
      const fake = await startFakeGemini();
      return {
        api: geminiApi(fake),
        env: { GOOGLE_GEMINI_BASE_URL: fake.url, GEMINI_API_KEY: this.key },
      };
    },
  },
  {
    cli: "opencode",
    // Its Anthropic provider on the fake Messages API; its tools need no permission rules.
    agent: "    cli: opencode\n    model: claude-sonnet-4-5\n",
    key: "sk-ant-opencode-contract-key-0123456789abcdef",
    // `.opencode/agent/build.md` would be the prompt of the agent `opencode run` uses.
    controlFiles: ["opencode.json", ".opencode/agent/build.md"],
    async start() {
      const fake = await startFakeAnthropic();
      return {
        api: anthropicApi(fake, {
          shellTool: "bash",
          firstLineAfterAnswer: true,
          summary: opencodeSummary,
        }),
        env: { ANTHROPIC_BASE_URL: fake.url, ANTHROPIC_API_KEY: this.key },
      };
    },
  },
];
