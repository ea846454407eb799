/**
 * Savings benchmark (issue 9): what a follow-up costs when Tether resumes the session, against
 * the same follow-up when every turn starts fresh and re-sends the whole thread.
 *
 * End to end: the built app as a process (real runner, real Claude CLI, real PostgreSQL), the
 * GitHub stand-in, and the fake Messages API, which records every request body. One issue per
 * arm with the same thread: a body of about 10 KB and ten comments of about 2 KB that each ask
 * @tether something; Tether's answers are posted as comments, so the thread grows. The arms are
 * two repositories of the same name length: `octo/warm-arm` (default resume policy) and
 * `octo/cold-arm` (`resume: {enabled: false}` in its .github/tether.yml, so every turn is fresh
 * with reason `resume_disabled` and gets the whole thread, as a bot without sessions would).
 * Turns alternate between the arms; one unmeasured turn on a third repository warms the
 * machine up first.
 *
 *   npx tsx bench/savings.ts [--turns=10] [--body-kb=10] [--comment-kb=2] [--reply-bytes=300]
 *                            [--agent=reads|text] [--file-kb=4] [--out=bench/results/savings]
 *                            [--cli=claude|opencode]
 *
 * --cli=opencode runs both arms on sst's opencode (`cli: opencode`, the pinned binary) instead
 * of Claude Code; its reading agent calls opencode's `read` tool.
 *
 * --agent=reads (the default) gives the fake an agent policy (savings-agent.ts): each comment
 * needs two of the repository's files, and the fake asks the CLI to Read each one whose contents
 * are not already in the conversation it was sent, then answers; the real CLI runs the Reads.
 * --agent=text answers every request with text (one request a turn), as before. Every turn is
 * also accounted with the cache cold between turns (each turn's requests on their own), as
 * turns more than the cache's lifetime apart would be billed.
 *
 * Builds dist first when it is missing or older than src (the app runs from dist). Writes
 * <out>.md (the tables printed here) and <out>.json (every figure, per turn and request).
 * Exits 1 when a check fails (a turn that should have resumed did not, a resumed prompt grew
 * with the thread, a resumed turn was billed over 110% of its floor).
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createPool } from "../src/db/pool.js";
import { lookupClaudePath } from "../src/claude/claude-path.js";
import { resolveOpencodePath } from "../src/opencode/opencode-cli.js";
import { startStack, SECRET, type Stack } from "../test/helpers/e2e-stack.js";
import { replies, type FakeRequest } from "../test/helpers/fake-anthropic.js";
import { signedWebhook } from "../test/helpers/fake-github.js";
import { accountRequests, tokens, type PromptBody } from "./savings-accounting.js";
import { gapTable, renderGapTable } from "./savings-gaps.js";
import {
  renderReport,
  summarize,
  type Arm,
  type BenchOptions,
  type TurnRecord,
} from "./savings-report.js";
import { readingAgent, repoFiles, needsOf } from "./savings-agent.js";
import { answerText, planThread } from "./savings-thread.js";
import { benchDatabase } from "./support.js";

const ROOT = path.resolve(import.meta.dirname, "..");
const MODEL = "claude-sonnet-4-5";
const opts = parseOptions(process.argv.slice(2));
const CLI = opts.cli ?? "claude";
const CLI_LINE = CLI === "claude" ? "" : `    cli: ${CLI}\n`;
const ARMS: Record<Arm, { repo: string; config: string }> = {
  resume: {
    repo: "octo/warm-arm",
    config: `agents:\n  tether:\n${CLI_LINE}    model: ${MODEL}\n`,
  },
  cold: {
    repo: "octo/cold-arm",
    config: `agents:\n  tether:\n${CLI_LINE}    model: ${MODEL}\nresume:\n  enabled: false\n`,
  },
};
const WARMUP_REPO = "octo/widgets";
/** The turns the gap table shows (1-based). */
const GAP_TURNS = [2, 5, 10];
const started = Date.now();
console.log(
  `savings benchmark: ${opts.turns} turns, issue body ${opts.bodyBytes} B, comments ${opts.commentBytes} B, answers ${opts.replyBytes} B, ` +
    (opts.agent === "reads"
      ? `agent reads the 2 files (${opts.fileBytes} B each) a comment needs unless the conversation holds them`
      : "agent answers with text only"),
);
console.log(ensureBuilt());

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tether-bench-savings-"));
const cleanup: Array<() => Promise<unknown>> = [
  async () => fs.rmSync(tmp, { recursive: true, force: true }),
];
let cleaning: Promise<void> | undefined;
const runCleanup = () =>
  (cleaning ??= (async () => {
    for (const step of cleanup) await step().catch((err: unknown) => console.error(err));
  })());
// Ctrl-C mid-run still stops the app, the database and the fakes, and removes the temp dir; so
// does a closed stdout (piped into head), which must not kill the process before that.
process.once("SIGINT", () => void runCleanup().then(() => process.exit(130)));
process.stdout.on("error", () => {});
let exitCode = 0;
try {
  const pg = await benchDatabase();
  cleanup.unshift(() => pg.cleanup());
  const pool = createPool(pg.url, { max: 4 });
  cleanup.unshift(() => pool.end());
  const calls = path.join(tmp, "calls");
  const real =
    CLI === "opencode"
      ? {
          path: resolveOpencodePath({ TETHER_OPENCODE_PATH: process.env.TETHER_OPENCODE_PATH }),
          source: "opencode-linux-x64",
        }
      : lookupClaudePath({ TETHER_CLAUDE_PATH: process.env.TETHER_CLAUDE_PATH });
  const wrapper = writeWrapper(path.join(tmp, CLI), calls, real.path);
  const agent = readingAgent(opts.replyBytes, CLI);
  console.log(`${CLI} CLI: ${real.path} (${real.source}), through ${wrapper}`);

  const stack = await startStack({
    pool,
    databaseUrl: pg.url,
    config: ARMS.resume.config,
    // The wrapper records each run into `calls`, from inside the sandbox too, and runs the real
    // binary from there.
    env: {
      ...(CLI === "opencode" ? { TETHER_OPENCODE_PATH: wrapper } : { TETHER_CLAUDE_PATH: wrapper }),
      TETHER_SANDBOX_BIND: `${calls}:rw,${path.dirname(real.path)}`,
      LOG_LEVEL: "warn",
    },
    anthropic: {
      defaultReply:
        opts.agent === "reads"
          ? (req) => agent.reply(req)
          : (req) => replies.text(answerText(opts.replyBytes, req.n)),
    },
  });
  cleanup.unshift(() => stack.close());

  const plan = planThread({
    turns: opts.turns,
    bodyBytes: opts.bodyBytes,
    commentBytes: opts.commentBytes,
    mention: "@tether",
  });
  const issues = {} as Record<Arm, number>;
  for (const arm of ["resume", "cold"] as const) {
    const [owner = "", name = ""] = ARMS[arm].repo.split("/");
    await stack.gh.addRepo({
      owner,
      name,
      files:
        opts.agent === "reads"
          ? repoFiles(opts.fileBytes)
          : {
              "README.md": "# widgets\n",
              "src/split.js": "export const split = (s) => s.split('\\n');\n",
            },
    });
    await stack.gh.setConfig(ARMS[arm].repo, ARMS[arm].config);
    const issue = stack.gh.addIssue({
      repo: ARMS[arm].repo,
      title: plan.title,
      body: plan.body,
      user: "alice",
    });
    issues[arm] = issue.number as number;
  }

  const cliCalls = callLog(calls);
  const warm = stack.gh.addIssue({ repo: WARMUP_REPO, title: "warm-up", body: "Warm-up." });
  await runTurn(stack, cliCalls, WARMUP_REPO, warm.number as number, "@tether say hello", "alice");
  console.log("warm-up turn done (not measured)");

  const records: TurnRecord[] = [];
  const requestsOf: Record<Arm, FakeRequest[]> = { resume: [], cold: [] };
  for (let t = 0; t < opts.turns; t++) {
    const comment = plan.comments[t]!;
    agent.setTurn(t + 1);
    for (const arm of ["resume", "cold"] as const) {
      const r = await runTurn(
        stack,
        cliCalls,
        ARMS[arm].repo,
        issues[arm],
        comment.body,
        comment.author,
      );
      requestsOf[arm].push(...r.requests);
      records.push({
        arm,
        turn: t + 1,
        taskId: Number(r.task.id),
        status: String(r.task.status),
        decision: String(r.task.resume_decision),
        reason: String(r.task.resume_reason),
        sessionId: (r.task.session_id as string | null) ?? null,
        commentBytes: Buffer.byteLength(comment.body),
        cliRuns: r.cli.length,
        promptBytes: r.cli.reduce((n, c) => n + c.stdinBytes, 0),
        resumeFlag: r.cli.some((c) => c.args.includes("--resume") || c.args.includes("--session")),
        apiRequests: r.requests.length,
        toolCalls: r.requests.filter((q) => q.reply === "tool_use").length,
        needs: opts.agent === "reads" ? needsOf(t + 1) : [],
        apiRequestBytes: r.requests.reduce((n, q) => n + q.rawBytes, 0),
        wallMs: r.wallMs,
        cliDurationMs: Number(r.task.duration_ms ?? 0),
        accounts: [], // filled below, once the arm's requests are accounted in order
        coldCacheAccounts: [],
        fakeUsage: r.requests.map((q) => q.usage ?? null),
      });
      process.stdout.write(
        `turn ${t + 1} ${arm.padEnd(6)} ${String(r.task.resume_reason).padEnd(16)} ${r.requests.length} requests ${(r.wallMs / 1000).toFixed(2)} s\n`,
      );
    }
  }

  // Each arm is accounted on its own requests, in the order they reached the API, as if each
  // had its own prompt cache: the cold arm gets no reads from the resume arm's requests.
  for (const arm of ["resume", "cold"] as const) {
    const accounts = accountRequests(requestsOf[arm].map((q) => q.body ?? {}));
    let i = 0;
    for (const rec of records.filter((r) => r.arm === arm)) {
      rec.accounts = accounts.slice(i, i + rec.apiRequests);
      // The cache gone between turns (turns further apart than its lifetime): each turn's
      // requests are accounted on their own, so only a turn's later requests read its earlier ones.
      rec.coldCacheAccounts = accountRequests(
        requestsOf[arm].slice(i, i + rec.apiRequests).map((q) => q.body ?? {}),
      );
      i += rec.apiRequests;
    }
  }

  // The same requests, turns a gap apart, under each lifetime a turn can ask for (issue 32).
  const turnsOf = (arm: Arm): PromptBody[][] => {
    let i = 0;
    return records
      .filter((r) => r.arm === arm)
      .map((rec) => requestsOf[arm].slice(i, (i += rec.apiRequests)).map((q) => q.body ?? {}));
  };
  const gapRows = gapTable({ resume: turnsOf("resume"), cold: turnsOf("cold") }, GAP_TURNS);

  const runtime = await pool.query<{ cli_version: string | null }>(
    "SELECT cli_version FROM runtimes LIMIT 1",
  );
  const first = requestsOf.resume[0];
  const summary = summarize(records, {
    options: opts,
    cliVersion:
      CLI === "opencode"
        ? execFileSync(real.path, ["--version"], { encoding: "utf8" }).trim()
        : (runtime.rows[0]?.cli_version ?? "unknown"),
    model: MODEL,
    cliPrefixBytes: first ? cliPrefixBytes(first) : { toolsAndSystem: 0, reminders: 0 },
    systemStable: systemStable(requestsOf),
    machine: `${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, Node ${process.version}`,
    benchSeconds: (Date.now() - started) / 1000,
  });
  // Formatted as the repository's prettier config would, so committed results pass its check.
  const gapSection = [
    "",
    "## By gap between turns and cache lifetime",
    "",
    "Resumed ÷ cold billed input (cache writes at 1.25× for `5m`, 2× for `1h`; reads 0.1×), the same requests re-accounted as if turns came this far apart, each arm with a cache of its own that forgets (`bench/savings-gaps.ts` states the rule). `auto`: an hour when the previous turn came within the hour, else five minutes. Dollars: input only, at $3 per million tokens.",
    "",
    renderGapTable(gapRows, GAP_TURNS),
  ].join("\n");
  const report = await formatted(
    `${opts.out}.md`,
    `${renderReport(summary)}\n${gapSection}\n`,
    "markdown",
  );
  console.log(`\n${report}`);
  fs.mkdirSync(path.dirname(opts.out), { recursive: true });
  fs.writeFileSync(`${opts.out}.md`, report);
  const json = JSON.stringify({ ...summary, gaps: gapRows, records: records.map(withTokens) });
  fs.writeFileSync(`${opts.out}.json`, await formatted(`${opts.out}.json`, json, "json"));
  console.log(`written: ${path.relative(ROOT, opts.out)}.md and .json`);
  if (summary.checks.some((c) => !c.pass)) exitCode = 1;
} catch (err) {
  if (!cleaning) console.error(err); // else interrupted: the run failed because it was stopped
  exitCode = 1;
} finally {
  await runCleanup();
}
process.exit(exitCode);

/** One turn: post the comment, deliver the webhook, wait for the task, collect what it sent. */
async function runTurn(
  stack: Stack,
  cliCalls: CallLog,
  repo: string,
  issueNumber: number,
  body: string,
  user: string,
): Promise<{
  task: Record<string, unknown>;
  requests: FakeRequest[];
  cli: CliCall[];
  wallMs: number;
}> {
  const from = stack.api.requests.length;
  cliCalls.mark();
  const c = stack.gh.addComment({ repo, issueNumber, body, user });
  const ev = stack.gh.webhooks.issueComment({ repo, issueNumber, commentId: c.id as number });
  const res = await signedWebhook(stack.app.url, ev.name, ev.payload, SECRET);
  if (res.status >= 300) throw new Error(`webhook answered ${res.status}: ${res.body}`);
  const task = await stack.finishedTask(c.id as number, 120_000);
  if (task.status !== "succeeded") {
    throw new Error(
      `turn on ${repo}#${issueNumber} ended ${String(task.status)} (${String(task.outcome)}): ${String(task.failure_reason)}\n${stack.app.output().slice(-4000)}`,
    );
  }
  const requests = stack.api.requests
    .slice(from)
    .filter((r) => r.method === "POST" && r.path === "/v1/messages");
  const wallMs = (task.finished_at as Date).getTime() - (task.created_at as Date).getTime();
  return { task, requests, cli: cliCalls.since(), wallMs };
}

interface CliCall {
  args: string[];
  stdinBytes: number;
}

interface CallLog {
  /** Everything recorded so far belongs to earlier turns. */
  mark(): void;
  /** Runs (`-p`, opencode's `run`) started since mark(); probes (--version, --help) are left out. */
  since(): CliCall[];
}

/** Reads what the wrapper recorded: one args file and one stdin file per CLI start. */
function callLog(dir: string): CallLog {
  const seen = new Set<string>();
  const files = () =>
    fs.existsSync(dir)
      ? fs
          .readdirSync(dir)
          .filter((f) => f.endsWith(".args"))
          .map((f) => f.slice(0, -".args".length))
          .sort(
            (a, b) =>
              fs.statSync(path.join(dir, `${a}.args`)).mtimeMs -
              fs.statSync(path.join(dir, `${b}.args`)).mtimeMs,
          )
      : [];
  return {
    mark() {
      for (const f of files()) seen.add(f);
    },
    since() {
      const out: CliCall[] = [];
      for (const f of files()) {
        if (seen.has(f)) continue;
        seen.add(f);
        const args = fs.readFileSync(path.join(dir, `${f}.args`), "utf8").split("\n");
        args.pop();
        const isRun =
          args.includes("-p") ||
          args.includes("--print") ||
          (args[0] === "run" && !args.includes("--help"));
        if (!isRun) continue;
        out.push({ args, stdinBytes: fs.statSync(path.join(dir, `${f}.stdin`)).size });
      }
      return out;
    },
  };
}

/**
 * A stand-in for the CLI that keeps its arguments and the exact bytes it was handed on stdin,
 * then runs the real binary on them. Baked-in paths, because the runner passes the child only
 * an allowlisted environment.
 */
function writeWrapper(file: string, dir: string, real: string): string {
  fs.mkdirSync(dir, { recursive: true });
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  fs.writeFileSync(
    file,
    [
      "#!/bin/sh",
      `f="$(mktemp ${q(dir)}/run.XXXXXXXX)" || exit 127`,
      `printf '%s\\n' "$@" > "$f.args"`,
      `cat > "$f.stdin"`,
      `exec ${q(real)} "$@" < "$f.stdin"`,
      "",
    ].join("\n"),
    { mode: 0o755 },
  );
  return file;
}

/** Bytes of the CLI's own prompt in a first request: tools + system, and its reminder blocks. */
function cliPrefixBytes(req: FakeRequest): { toolsAndSystem: number; reminders: number } {
  const [a] = accountRequests([req.body ?? {}]);
  const firstUser = req.body?.messages?.[0];
  const reminders = Array.isArray(firstUser?.content)
    ? firstUser.content
        .filter((b) => typeof b.text === "string" && b.text.startsWith("<system-reminder>"))
        .reduce((n, b) => n + Buffer.byteLength(JSON.stringify({ type: "text", text: b.text })), 0)
    : 0;
  return { toolsAndSystem: a?.priorBytes ?? 0, reminders };
}

/** Whether tools and system were byte-identical across all requests of each arm. */
function systemStable(reqs: Record<Arm, FakeRequest[]>): Record<Arm, boolean> {
  const same = (list: FakeRequest[]) =>
    new Set(list.map((q) => JSON.stringify([q.body?.tools, q.body?.system]))).size <= 1;
  return { resume: same(reqs.resume), cold: same(reqs.cold) };
}

function withTokens(r: TurnRecord): TurnRecord & { billedTokens: number } {
  return { ...r, billedTokens: tokens(r.accounts.reduce((n, a) => n + a.billedBytes, 0)) };
}

async function formatted(file: string, text: string, parser: "markdown" | "json"): Promise<string> {
  const prettier = await import("prettier");
  const config = (await prettier.resolveConfig(file)) ?? {};
  return prettier.format(text, { ...config, parser });
}

/** dist is what the app runs; rebuild it when it is missing or older than any source file. */
function ensureBuilt(): string {
  const main = path.join(ROOT, "dist/src/main.js");
  const builtAt = fs.existsSync(main) ? fs.statSync(main).mtimeMs : 0;
  const newest = Math.max(
    ...["src", "migrations"].flatMap((d) =>
      fs
        .readdirSync(path.join(ROOT, d), { recursive: true })
        .map(String)
        .filter((f) => /\.(ts|js|sql)$/.test(f))
        .map((f) => fs.statSync(path.join(ROOT, d, f)).mtimeMs),
    ),
  );
  if (builtAt >= newest) return "dist is up to date with src";
  const why = builtAt === 0 ? "dist is missing" : "dist is older than src";
  execFileSync("npm", ["run", "--silent", "build"], { cwd: ROOT, stdio: "inherit" });
  return `${why}: built it (npm run build)`;
}

function parseOptions(argv: string[]): BenchOptions {
  const named = new Map<string, string>();
  for (const a of argv) {
    const m = /^--([\w-]+)=(.*)$/.exec(a);
    if (!m)
      throw new Error(
        `unknown argument ${a}; use --turns=N --body-kb=N --comment-kb=N --reply-bytes=N --agent=reads|text --file-kb=N --out=PATH --cli=claude|opencode`,
      );
    named.set(m[1]!, m[2]!);
  }
  const num = (key: string, env: string, fallback: number) => {
    const raw = named.get(key) ?? process.env[env];
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isFinite(n) || n <= 0)
      throw new Error(`--${key} must be a positive number, got ${raw}`);
    return n;
  };
  const turns = Math.round(num("turns", "BENCH_TURNS", 10));
  const agent = named.get("agent") ?? process.env.BENCH_AGENT ?? "reads";
  if (agent !== "reads" && agent !== "text")
    throw new Error(`--agent must be reads or text, got ${agent}`);
  const cli = named.get("cli") ?? process.env.BENCH_CLI ?? "claude";
  if (cli !== "claude" && cli !== "opencode")
    throw new Error(`--cli must be claude or opencode, got ${cli}`);
  return {
    cli,
    agent,
    fileBytes: Math.round(num("file-kb", "BENCH_FILE_KB", 4) * 1000),
    turns,
    bodyBytes: Math.round(num("body-kb", "BENCH_BODY_KB", 10) * 1000),
    commentBytes: Math.round(num("comment-kb", "BENCH_COMMENT_KB", 2) * 1000),
    replyBytes: Math.round(num("reply-bytes", "BENCH_REPLY_BYTES", 300)),
    out: path.resolve(
      named.get("out") ?? process.env.BENCH_OUT ?? path.join(ROOT, "bench/results/savings"),
    ),
  };
}
