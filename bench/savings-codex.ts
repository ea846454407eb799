/**
 * Savings benchmark, Codex arm (issue 18): bench/savings.ts's measurement for an agent with
 * `cli: codex`. The built app as a process (real runner, the real Codex binary from
 * @openai/codex in Tether's sandbox, real PostgreSQL), the GitHub stand-in, and the fake
 * Responses API (test/helpers/fake-openai.ts), which records every request. The same thread as
 * Claude's benchmark (savings-thread.ts): a body of about 10 KB, comments of about 2 KB each
 * asking @tether something, the answers posted back so the thread grows. Resume arm
 * `octo/warm-arm` (default resume policy), cold arm `octo/cold-arm` (`resume: {enabled:
 * false}`), turns alternating, one unmeasured warm-up turn first.
 *
 *   npx tsx bench/savings-codex.ts [--turns=10] [--body-kb=10] [--comment-kb=2]
 *                                  [--reply-bytes=300] [--out=bench/results/savings-codex]
 *                                  [--claude=bench/results/savings-text.json]
 *
 * Writes <out>.md and <out>.json, with Claude's ratios beside Codex's from a text-only
 * bench/savings.ts run (`--agent=text --out=bench/results/savings-text`, the default --claude)
 * when that file is there. Exits 1 when a check fails.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createPool } from "../src/db/pool.js";
import { startStack, SECRET, type Stack } from "../test/helpers/e2e-stack.js";
import { signedWebhook } from "../test/helpers/fake-github.js";
import {
  lastUserText,
  replies,
  startFakeOpenAI,
  type FakeOpenAI,
  type FakeRequest,
} from "../test/helpers/fake-openai.js";
import { accountRequests } from "./savings-accounting.js";
import {
  renderCodexReport,
  responsesAsPrompt,
  summarizeCodex,
  type ClaudeRatios,
  type CodexTurnRecord,
} from "./savings-codex-report.js";
import type { Arm } from "./savings-report.js";
import { answerText, planThread } from "./savings-thread.js";
import { benchDatabase } from "./support.js";

const ROOT = path.resolve(import.meta.dirname, "..");
const MODEL = "gpt-5.5";
const AGENT = `agents:\n  tether:\n    cli: codex\n    model: ${MODEL}\n`;
const ARMS: Record<Arm, { repo: string; config: string }> = {
  resume: { repo: "octo/warm-arm", config: AGENT },
  cold: { repo: "octo/cold-arm", config: `${AGENT}resume:\n  enabled: false\n` },
};
const WARMUP_REPO = "octo/widgets";

const opts = parseOptions(process.argv.slice(2));
const started = Date.now();
console.log(
  `savings benchmark, Codex: ${opts.turns} turns, issue body ${opts.bodyBytes} B, comments ${opts.commentBytes} B, answers ${opts.replyBytes} B`,
);
console.log(ensureBuilt());

const cleanup: Array<() => Promise<unknown>> = [];
let cleaning: Promise<void> | undefined;
const runCleanup = () =>
  (cleaning ??= (async () => {
    for (const step of cleanup) await step().catch((err: unknown) => console.error(err));
  })());
process.once("SIGINT", () => void runCleanup().then(() => process.exit(130)));
process.stdout.on("error", () => {});
let exitCode = 0;
try {
  const pg = await benchDatabase();
  cleanup.unshift(() => pg.cleanup());
  const pool = createPool(pg.url, { max: 4 });
  cleanup.unshift(() => pool.end());
  const openai = await startFakeOpenAI({
    defaultReply: (req) => replies.text(answerText(opts.replyBytes, req.n)),
  });
  cleanup.unshift(() => openai.close());
  const stack = await startStack({
    pool,
    databaseUrl: pg.url,
    config: ARMS.resume.config,
    env: {
      OPENAI_API_KEY: "sk-bench-openai-key-0000000000",
      OPENAI_BASE_URL: openai.url,
      LOG_LEVEL: "warn",
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
      files: {
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

  const warm = stack.gh.addIssue({ repo: WARMUP_REPO, title: "warm-up", body: "Warm-up." });
  await runTurn(stack, openai, WARMUP_REPO, warm.number as number, "@tether say hello", "alice");
  console.log("warm-up turn done (not measured)");

  const records: CodexTurnRecord[] = [];
  const requestsOf: Record<Arm, FakeRequest[]> = { resume: [], cold: [] };
  for (let t = 0; t < opts.turns; t++) {
    const comment = plan.comments[t]!;
    for (const arm of ["resume", "cold"] as const) {
      const r = await runTurn(
        stack,
        openai,
        ARMS[arm].repo,
        issues[arm],
        comment.body,
        comment.author,
      );
      requestsOf[arm].push(...r.requests);
      const last = r.requests.at(-1);
      records.push({
        arm,
        turn: t + 1,
        status: String(r.task.status),
        decision: String(r.task.resume_decision),
        reason: String(r.task.resume_reason),
        sessionId: (r.task.session_id as string | null) ?? null,
        commentBytes: Buffer.byteLength(comment.body),
        promptBytes: last ? Buffer.byteLength(lastUserText(last)) : 0,
        apiRequests: r.requests.length,
        apiRequestBytes: r.requests.reduce((n, q) => n + q.rawBytes, 0),
        wallMs: r.wallMs,
        accounts: [],
        simulated: r.requests.map((q) => ({
          input: q.usage?.input_tokens ?? 0,
          cached: q.usage?.input_tokens_details.cached_tokens ?? 0,
        })),
      });
      process.stdout.write(
        `turn ${t + 1} ${arm.padEnd(6)} ${String(r.task.resume_reason).padEnd(16)} ${(r.wallMs / 1000).toFixed(2)} s\n`,
      );
    }
  }
  // Each arm is accounted on its own requests, in order, as if each had its own prompt cache.
  for (const arm of ["resume", "cold"] as const) {
    const accounts = accountRequests(requestsOf[arm].map((q) => responsesAsPrompt(q.body ?? {})));
    let i = 0;
    for (const rec of records.filter((r) => r.arm === arm)) {
      rec.accounts = accounts.slice(i, i + rec.apiRequests);
      i += rec.apiRequests;
    }
  }

  const summary = summarizeCodex(records, {
    turns: opts.turns,
    cliVersion: codexVersion(),
    model: MODEL,
    machine: `${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, Node ${process.version}`,
    benchSeconds: (Date.now() - started) / 1000,
  });
  const command = [
    "npx tsx bench/savings-codex.ts",
    opts.turns !== 10 ? ` --turns=${opts.turns}` : "",
    opts.bodyBytes !== 10_000 ? ` --body-kb=${opts.bodyBytes / 1000}` : "",
    opts.commentBytes !== 2000 ? ` --comment-kb=${opts.commentBytes / 1000}` : "",
    opts.replyBytes !== 300 ? ` --reply-bytes=${opts.replyBytes}` : "",
  ].join("");
  const report = await formatted(
    `${opts.out}.md`,
    renderCodexReport(summary, command, claudeRatios(opts.claude)),
    "markdown",
  );
  console.log(`\n${report}`);
  fs.mkdirSync(path.dirname(opts.out), { recursive: true });
  fs.writeFileSync(`${opts.out}.md`, report);
  const json = JSON.stringify({
    ...summary,
    records: records.map(({ accounts, ...r }) => ({ ...r, accounts })),
  });
  fs.writeFileSync(`${opts.out}.json`, await formatted(`${opts.out}.json`, json, "json"));
  console.log(`written: ${path.relative(ROOT, opts.out)}.md and .json`);
  if (summary.checks.some((c) => !c.pass)) exitCode = 1;
} catch (err) {
  if (!cleaning) console.error(err);
  exitCode = 1;
} finally {
  await runCleanup();
}
process.exit(exitCode);

/** One turn: post the comment, deliver the webhook, wait for the task, collect its requests. */
async function runTurn(
  stack: Stack,
  openai: FakeOpenAI,
  repo: string,
  issueNumber: number,
  body: string,
  user: string,
): Promise<{ task: Record<string, unknown>; requests: FakeRequest[]; wallMs: number }> {
  const from = openai.requests.length;
  const c = stack.gh.addComment({ repo, issueNumber, body, user });
  const ev = stack.gh.webhooks.issueComment({ repo, issueNumber, commentId: c.id as number });
  const res = await signedWebhook(stack.app.url, ev.name, ev.payload, SECRET);
  if (res.status >= 300) throw new Error(`webhook answered ${res.status}: ${res.body}`);
  const task = await stack.finishedTask(c.id as number, 180_000);
  if (task.status !== "succeeded") {
    throw new Error(
      `turn on ${repo}#${issueNumber} ended ${String(task.status)} (${String(task.outcome)}): ${String(task.failure_reason)}\n${stack.app.output().slice(-4000)}`,
    );
  }
  const requests = openai.requests
    .slice(from)
    .filter((r) => r.method === "POST" && r.path === "/v1/responses");
  const wallMs = (task.finished_at as Date).getTime() - (task.created_at as Date).getTime();
  return { task, requests, wallMs };
}

/** The Codex binary's version, as the runner resolves it (TETHER_CODEX_PATH, else the package). */
function codexVersion(): string {
  try {
    const pkg = path.join(ROOT, "node_modules/@openai/codex/package.json");
    return (JSON.parse(fs.readFileSync(pkg, "utf8")) as { version: string }).version;
  } catch {
    return "unknown";
  }
}

/**
 * Claude's ratios from a bench/savings.ts run, to print beside Codex's. Only a text-only run
 * (`--agent=text`) compares: the Codex fake answers every request with text, and a Claude run
 * whose fake reads files saves more for reasons Codex's run does not have. Anything else is left
 * out, with a word on stderr saying why.
 */
function claudeRatios(file: string): ClaudeRatios | null {
  let j: ClaudeRatios & { options?: { agent?: unknown } };
  try {
    j = JSON.parse(fs.readFileSync(file, "utf8")) as typeof j;
  } catch (err) {
    console.error(`Claude's figures left out: could not read ${file} (${String(err)})`);
    return null;
  }
  if (!Array.isArray(j.ratios)) {
    console.error(`Claude's figures left out: ${file} has no ratios`);
    return null;
  }
  if (j.options?.agent !== undefined && j.options.agent !== "text") {
    console.error(
      `Claude's figures left out: ${file} is a --agent=${String(j.options.agent)} run; ` +
        "Codex's fake answers with text, so only a --agent=text run compares",
    );
    return null;
  }
  return { ...j, file: path.relative(ROOT, file) || file };
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
  execFileSync("npm", ["run", "--silent", "build"], { cwd: ROOT, stdio: "inherit" });
  return "dist was missing or older than src: built it (npm run build)";
}

function parseOptions(argv: string[]) {
  const named = new Map<string, string>();
  for (const a of argv) {
    const m = /^--([\w-]+)=(.*)$/.exec(a);
    if (!m)
      throw new Error(
        `unknown argument ${a}; use --turns=N --body-kb=N --comment-kb=N --reply-bytes=N --out=PATH --claude=PATH`,
      );
    named.set(m[1]!, m[2]!);
  }
  const num = (key: string, fallback: number) => {
    const raw = named.get(key);
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isFinite(n) || n <= 0)
      throw new Error(`--${key} must be a positive number, got ${raw}`);
    return n;
  };
  return {
    turns: Math.round(num("turns", 10)),
    bodyBytes: Math.round(num("body-kb", 10) * 1000),
    commentBytes: Math.round(num("comment-kb", 2) * 1000),
    replyBytes: Math.round(num("reply-bytes", 300)),
    out: path.resolve(named.get("out") ?? path.join(ROOT, "bench/results/savings-codex")),
    claude: path.resolve(named.get("claude") ?? path.join(ROOT, "bench/results/savings-text.json")),
  };
}
