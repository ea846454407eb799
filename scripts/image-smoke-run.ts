/**
 * The image's production path, run here (#42): the image scripts/image-smoke.sh built, run as
 * docs/deploying.md says: `migrate`, then `web` and `runner` as separate containers on one
 * PostgreSQL, the runner with the documented security options. GitHub is the local stand-in and
 * the Claude API the fake Messages API, both on the host (the containers share the host's
 * network). One comment is answered by a turn run in the sandbox inside the runner container,
 * and a follow-up resumes that session: the fake API sees the earlier messages. Then a runner
 * started without the security options: its /healthz says why the sandbox cannot start.
 *
 *   bash scripts/image-smoke.sh              # builds, then runs this
 *   npx tsx scripts/image-smoke-run.ts       # this part alone, on an image already built
 *
 * Prints each step, the image's size and each container's start-up time (container start to
 * /healthz 200); exit code 1 when a check fails. Everything it starts is removed at the end.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { freePort, startEmbeddedPostgres } from "../src/db/embedded.js";
import { startFakeAnthropic, replies, userTexts } from "../test/helpers/fake-anthropic.js";
import { startFakeGitHub } from "../test/helpers/fake-github.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const ENGINE = process.env.ENGINE ?? "podman";
const IMAGE = process.env.IMAGE ?? "localhost/tether:smoke";
const SECRET = "image-smoke-webhook-secret";
const REPO = "octo/widgets";
const PREFIX = `tether-smoke-${process.pid}`;
const SECURITY = [
  "--security-opt",
  `seccomp=${path.join(ROOT, "deploy/seccomp/tether-runner.json")}`,
  "--security-opt",
  "apparmor=unconfined",
  "--security-opt",
  "systempaths=unconfined",
];

const say = (line: string) => console.log(`== ${line}`);
const failures: string[] = [];
function check(name: string, ok: boolean, detail = ""): void {
  console.log(`${ok ? "ok  " : "FAIL"} ${name}${detail ? `: ${detail}` : ""}`);
  if (!ok) failures.push(name);
}

function engine(args: string[], opts: { allowFail?: boolean } = {}): string {
  const r = spawnSync(ENGINE, args, { encoding: "utf8" });
  if (r.status !== 0 && !opts.allowFail)
    throw new Error(`${ENGINE} ${args.slice(0, 3).join(" ")} … failed: ${r.stderr || r.stdout}`);
  return (r.stdout ?? "").trim();
}

const started: string[] = [];
type Health = { status: number; body: string };
/**
 * Starts a container on the host's network; returns when its /healthz gives the answer `done`
 * waits for (200 unless told), when the container exits or after 180 s, with the time taken.
 */
async function runContainer(
  name: string,
  role: string,
  env: Record<string, string>,
  extra: string[],
  done: (h: Health) => boolean = (h) => h.status === 200,
): Promise<{ ms: number; health: Health }> {
  const envArgs = Object.entries(env).flatMap(([k, v]) => ["-e", `${k}=${v}`]);
  const t0 = Date.now();
  engine(["run", "-d", "--name", name, "--network", "host", ...extra, ...envArgs, IMAGE, role]);
  started.push(name);
  const url = `http://127.0.0.1:${env.PORT}/healthz`;
  const deadline = Date.now() + 180_000;
  let last: Health = { status: 0, body: "" };
  for (;;) {
    last = await fetch(url).then(
      async (r) => ({ status: r.status, body: await r.text() }),
      () => ({ status: 0, body: "" }),
    );
    if (done(last)) return { ms: Date.now() - t0, health: last };
    const state = engine(["inspect", "-f", "{{.State.Status}}", name], { allowFail: true });
    if (state === "exited" || Date.now() > deadline) return { ms: Date.now() - t0, health: last };
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function main(): Promise<void> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tether-image-smoke-"));
  fs.chmodSync(tmp, 0o755);
  const db = await startEmbeddedPostgres({ dataDir: path.join(tmp, "pg") });
  const gh = await startFakeGitHub();
  const api = await startFakeAnthropic();
  try {
    const size = Number(engine(["image", "inspect", "-f", "{{.Size}}", IMAGE]));
    say(`image ${IMAGE}: ${(size / 1e6).toFixed(0)} MB`);

    await gh.addRepo({
      owner: "octo",
      name: "widgets",
      files: { "README.md": "# widgets\n", "src/split.js": "export const split = (s) => s;\n" },
    });
    await gh.setConfig(
      REPO,
      'agents:\n  tether:\n    model: claude-sonnet-4-5\n    allowedTools: ["Bash"]\n',
    );
    gh.setPermission("alice", "write");
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    await admin.query("CREATE DATABASE tether");
    await admin.end();
    const databaseUrl = db.url.replace(/\/postgres$/, "/tether");

    const common: Record<string, string> = {
      ...gh.appEnv(SECRET),
      DATABASE_URL: databaseUrl,
      HOST: "127.0.0.1",
      ANTHROPIC_BASE_URL: api.url,
      ANTHROPIC_API_KEY: "sk-ant-image-smoke-000000",
      TETHER_RUNTIME_ID: "rt-image-smoke",
      TETHER_GITHUB_THROTTLE: "false",
      DISABLE_TELEMETRY: "1",
      DISABLE_AUTOUPDATER: "1",
      DISABLE_ERROR_REPORTING: "1",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    };

    say("migrate");
    const migrate = spawnSync(
      ENGINE,
      ["run", "--rm", "--network", "host", "-e", `DATABASE_URL=${databaseUrl}`, IMAGE, "migrate"],
      { encoding: "utf8" },
    );
    check("migrate exits 0", migrate.status === 0, (migrate.stderr || "").slice(-500));

    say("web and runner, separate containers on one database");
    const webPort = await freePort();
    const web = await runContainer(
      `${PREFIX}-web`,
      "web",
      { ...common, PORT: String(webPort) },
      [],
    );
    check("web /healthz 200", web.health.status === 200, `${web.ms} ms`);
    const runnerPort = await freePort();
    const runner = await runContainer(
      `${PREFIX}-runner`,
      "runner",
      { ...common, PORT: String(runnerPort) },
      SECURITY,
    );
    check("runner /healthz 200", runner.health.status === 200, `${runner.ms} ms`);
    say(`start-up (container start to /healthz 200): web ${web.ms} ms, runner ${runner.ms} ms`);

    const issue = gh.addIssue({ repo: REPO, title: "Smoke", body: "Is it on?", user: "alice" })
      .number as number;
    const ask = async (body: string): Promise<Record<string, unknown>> => {
      const c = gh.addComment({ repo: REPO, issueNumber: issue, body, user: "alice" });
      const ev = gh.webhooks.issueComment({
        repo: REPO,
        issueNumber: issue,
        commentId: c.id as number,
      });
      const res = await gh.deliver(`http://127.0.0.1:${webPort}`, ev.name, ev.payload, SECRET, {
        timeoutMs: 15_000,
      });
      check(
        `webhook for "${body}" accepted`,
        res.status >= 200 && res.status < 300,
        String(res.status),
      );
      const pool = new pg.Client({ connectionString: databaseUrl });
      await pool.connect();
      try {
        const deadline = Date.now() + 300_000;
        for (;;) {
          const { rows } = await pool.query(
            `SELECT t.* FROM tasks t JOIN task_comments c ON c.task_id = t.id WHERE c.comment_id = $1`,
            [c.id],
          );
          const t = rows[0] as Record<string, unknown> | undefined;
          if (t && ["succeeded", "failed", "cancelled"].includes(String(t.status))) return t;
          if (Date.now() > deadline)
            throw new Error(`no answer to "${body}": ${JSON.stringify(t)}`);
          await new Promise((r) => setTimeout(r, 300));
        }
      } finally {
        await pool.end();
      }
    };

    say("a comment: a turn in the sandbox inside the runner container");
    api.script(
      replies.toolUse("Bash", { command: "cat /proc/self/status | grep -i seccomp; id -un" }),
      replies.text("SMOKE-FIRST-ANSWER"),
    );
    const first = await ask("@tether SMOKE-FIRST what is this?");
    check(
      "first turn succeeded, fresh",
      first.status === "succeeded" && first.resume_decision === "fresh",
      `${first.status} ${first.resume_decision} ${first.failure_reason ?? ""}`,
    );
    const answered = gh
      .comments(REPO, issue)
      .some((c) => String(c.body).includes("SMOKE-FIRST-ANSWER"));
    check("the answer is in the thread", answered);
    const toolOut = JSON.stringify(api.messageRequests().at(-1)?.body?.messages ?? []);
    check(
      "the agent's shell ran under a seccomp filter (Seccomp: 2)",
      /Seccomp:\\t2/.test(toolOut),
      toolOut.match(/Seccomp:[^"]{0,12}/)?.[0] ?? "no Seccomp line",
    );

    say("a follow-up: resumed");
    const mark = api.messageRequests().length;
    api.script(replies.text("SMOKE-SECOND-ANSWER"));
    const second = await ask("@tether SMOKE-SECOND and then?");
    check(
      "follow-up resumed the same session",
      second.resume_decision === "resume" && second.session_id === first.session_id,
      `${second.resume_decision} ${second.resume_reason}`,
    );
    const seen = api.messageRequests()[mark];
    check(
      "the API saw the earlier messages",
      seen !== undefined && userTexts(seen).some((t) => t.includes("SMOKE-FIRST")),
    );

    say("a runner without the security options: /healthz says why");
    const barePort = await freePort();
    const bare = await runContainer(
      `${PREFIX}-bare`,
      "runner",
      { ...common, PORT: String(barePort), TETHER_RUNTIME_ID: "rt-image-smoke-bare" },
      [],
      // The sandbox probe's verdict is final: waiting on for a 200 only ran out the deadline.
      (h) => h.status === 503 && /"sandbox":"unavailable/.test(h.body),
    );
    console.log(`   /healthz ${bare.health.status}: ${bare.health.body.slice(0, 600)}`);
    check(
      "without the options, /healthz refuses and names the sandbox",
      bare.health.status === 503 && /sandbox/i.test(bare.health.body),
    );
  } finally {
    for (const name of started) {
      if (failures.length) {
        console.log(`--- ${name} logs (tail) ---`);
        console.log(engine(["logs", "--tail", "40", name], { allowFail: true }));
      }
      engine(["rm", "-f", name], { allowFail: true });
    }
    await api.close();
    await gh.close();
    await db.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  if (failures.length) {
    console.log(`image smoke: ${failures.length} check(s) failed: ${failures.join("; ")}`);
    process.exit(1);
  }
  console.log("image smoke: every check passed");
}

await main();
