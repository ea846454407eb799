/**
 * GitHub requests per turn, by kind of turn (#34, "a request budget per turn"): a first turn, a
 * follow-up that publishes nothing, and a follow-up that publishes (the agent writes a file: a
 * commit made through GitHub's Git Data API, `publish.signedCommits`, which is one blob, one tree,
 * one commit and one ref, and a draft pull request). The built app as a process, real Postgres, the real Claude
 * CLI against the fake Messages API, the GitHub stand-in over HTTP, one turn at a time.
 *
 *   npx tsx bench/github-requests.ts [rounds=3]     (BENCH_NO_PUSH=1: an app without the push event)
 *   BENCH_KIND=long npx tsx bench/github-requests.ts     (only the fourth kind, below)
 *
 * A fourth kind, a long busy turn (bench/long-turn-edits.ts), is simulated with a fake clock:
 * ten minutes of tool calls every 3 s, and the tracking comment's edits counted, without the
 * live view (the 3 s throttle) and with it linked (milestones, TETHER_PROGRESS_EDIT_SECONDS).
 *
 * Per kind it prints the requests the stand-in logged, split by who made them: the turn's own
 * client (REST with the runner's thread token or its Git Data token, test/helpers/turn-requests.ts), intake (REST
 * with intake's installation token), the app's token requests (its JWT) and git (fetch, push).
 * Each REST figure is split into counted requests and conditional ones answered 304 Not
 * Modified, which GitHub does not count against the installation's limit
 * (src/github/conditional-requests.ts). "limit" is what the installation's rate limit is
 * charged for the turn: the turn's and intake's counted requests. Beside the turn client's
 * figures, Tether's own (tasks.github_requests and github_requests_not_modified, counted by the
 * request policy's hook): they must agree on every turn, and the bench says whether they did.
 */
import { execFileSync } from "node:child_process";
import path from "node:path";
import { createPool } from "../src/db/pool.js";
import { startStack, REPO, type Stack } from "../test/helpers/e2e-stack.js";
import { replies } from "../test/helpers/fake-anthropic.js";
import type { RecordedRequest } from "../test/helpers/fake-github.js";
import {
  installationRequests,
  lastSeq,
  routeCounts,
  turnRequests,
} from "../test/helpers/turn-requests.js";
import { benchDatabase, median } from "./support.js";
import { trackingComment } from "../src/runner/render/tracking-comment.js";
import { LONG_BUSY_TURN, longTurnEdits } from "./long-turn-edits.js";

const rounds = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 3);
const ROOT = path.resolve(import.meta.dirname, "..");
const onlyLong = process.env.BENCH_KIND === "long";
if (process.env.BENCH_BUILD !== "0" && !onlyLong) {
  console.log("building dist (npm run build) …");
  execFileSync("npm", ["run", "--silent", "build"], { cwd: ROOT, stdio: "inherit" });
}

const KINDS = ["first turn", "follow-up", "publishing follow-up"] as const;
type Kind = (typeof KINDS)[number];
interface Turn {
  /** The turn client's requests, counted and 304. */
  turn: number;
  turn304: number;
  /** Tether's own count of them (tasks.github_requests, github_requests_not_modified). */
  tether: number | null;
  tether304: number | null;
  intake: number;
  intake304: number;
  /** The app's own (JWT) requests: installation tokens. */
  app: number;
  git: number;
  counted: RecordedRequest[];
  notModified: RecordedRequest[];
}

async function oneTurn(stack: Stack, issue: number, body: string): Promise<Turn> {
  const from = lastSeq(stack.gh);
  const commentId = await stack.comment(issue, body);
  const task = await stack.finishedTask(commentId, 300_000);
  if (task.status !== "succeeded") throw new Error(`turn failed: ${JSON.stringify(task)}`);
  // Intake's 👀 is made after the delivery is recorded: wait for it, so it is in this turn's figures.
  while (!stack.gh.reactions(REPO, { commentId }).some((r) => r.content === "eyes"))
    await new Promise((r) => setTimeout(r, 20));
  const all = stack.gh.requests.filter((r) => r.seq > from);
  const own = new Set<RecordedRequest>(turnRequests(stack.gh, from));
  const { counted, notModified } = installationRequests(stack.gh, from);
  const ownCounted = counted.filter((r) => own.has(r)).length;
  const rest = all.filter((r) => r.kind === "rest");
  return {
    turn: ownCounted,
    turn304: own.size - ownCounted,
    tether: task.github_requests as number | null,
    tether304: task.github_requests_not_modified as number | null,
    intake: counted.length - ownCounted,
    intake304: notModified.length - (own.size - ownCounted),
    app: rest.length - counted.length - notModified.length,
    git: all.filter((r) => r.kind === "git").length,
    counted,
    notModified,
  };
}

if (!onlyLong) await stackKinds();
await longTurn();

async function stackKinds(): Promise<void> {
  const db = await benchDatabase();
  const pool = createPool(db.url);
  const stack = await startStack({
    pool,
    databaseUrl: db.url,
    config: "agents:\n  tether:\n    model: claude-sonnet-4-5\n",
    env: { LOG_LEVEL: "warn" },
  });
  // A push the app hears of (the stand-in sends the push webhook), as an installation with the
  // push event does: from then on the repository's config is kept until the next push
  // (docs/operations.md "GitHub requests"). BENCH_NO_PUSH=1 leaves it out: the config is then
  // asked conditionally on every comment.
  if (process.env.BENCH_NO_PUSH !== "1")
    await stack.gh.commit(REPO, { files: { "NOTES.md": "a push the app hears of\n" } });
  const turns = new Map<Kind, Turn[]>(KINDS.map((k) => [k, []]));
  try {
    for (let i = 0; i < rounds; i++) {
      const issue = stack.gh.addIssue({
        repo: REPO,
        title: `requests ${i}`,
        body: "Count me.",
        user: "alice",
      }).number as number;
      turns.get("first turn")!.push(await oneTurn(stack, issue, `@tether first turn ${i}`));
      turns.get("follow-up")!.push(await oneTurn(stack, issue, `@tether follow-up ${i}`));
      stack.api.script(
        replies.toolUse("Write", { file_path: `/workspace/notes-${i}.md`, content: `note ${i}\n` }),
        replies.text("Wrote the note."),
      );
      turns
        .get("publishing follow-up")!
        .push(await oneTurn(stack, issue, `@tether write a note ${i}`));
    }
  } finally {
    await stack.close();
    await pool.end();
    await db.cleanup();
  }

  const med = (ts: Turn[], f: (t: Turn) => number | null) => median(ts.map((t) => f(t) ?? NaN));
  const cell = (a: number, b: number) => `${a} + ${b}`.padStart(9);
  console.log(
    `\nGitHub requests per turn, median of ${rounds} (one turn at a time); REST figures are "counted + 304"`,
  );
  console.log(
    `${"kind".padEnd(22)} ${"turn".padStart(9)} ${"Tether".padStart(9)} ${"intake".padStart(9)} ${"limit".padStart(6)} ${"app".padStart(4)} ${"git".padStart(4)}`,
  );
  let agree = true;
  for (const [kind, ts] of turns) {
    for (const t of ts) if (t.tether !== t.turn || t.tether304 !== t.turn304) agree = false;
    console.log(
      `${kind.padEnd(22)} ${cell(
        med(ts, (t) => t.turn),
        med(ts, (t) => t.turn304),
      )} ${cell(
        med(ts, (t) => t.tether),
        med(ts, (t) => t.tether304),
      )} ${cell(
        med(ts, (t) => t.intake),
        med(ts, (t) => t.intake304),
      )} ${String(med(ts, (t) => t.turn + t.intake)).padStart(6)} ${String(med(ts, (t) => t.app)).padStart(4)} ${String(med(ts, (t) => t.git)).padStart(4)}`,
    );
  }
  console.log(
    agree
      ? "Tether's counts (tasks.github_requests, github_requests_not_modified) equal the stand-in's on every turn."
      : `Tether's counts and the stand-in's DISAGREE: ${JSON.stringify([...turns].map(([k, ts]) => [k, ts.map((t) => [t.tether, t.turn, t.tether304, t.turn304])]))}`,
  );
  for (const [kind, ts] of turns) {
    const last = ts.at(-1);
    if (!last) continue;
    console.log(
      `\n${kind}, round ${ts.length}: counted against the limit\n  ${routeCounts(last.counted).join("\n  ") || "(none)"}\n  answered 304 (not counted)\n  ${routeCounts(last.notModified).join("\n  ") || "(none)"}`,
    );
  }
  if (!agree) process.exitCode = 1;
}

async function longTurn(): Promise<void> {
  const t = LONG_BUSY_TURN;
  const before = await longTurnEdits(trackingComment, { intervalMs: 3000 });
  const after = await longTurnEdits(trackingComment, {
    intervalMs: 60_000,
    liveUrl: "https://tether.example.com/live/1?exp=0&sig=x",
  });
  console.log(
    `\nlong busy turn (${t.minutes} min simulated, a tool call every ${t.toolEveryMs / 1000} s, text every ${t.textEveryMs / 1000} s): edits of the tracking comment, answer included`,
  );
  console.log(`  no live view (3 s throttle)          ${String(before.edits).padStart(4)}`);
  console.log(`  live view linked (milestones, 60 s)  ${String(after.edits).padStart(4)}`);
}
