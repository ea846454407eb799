/**
 * Intake benchmark: N signed `issue_comment.created` deliveries posted concurrently to the real
 * HTTP server (as main.ts serves it: serveTether, an RSA key made here, a webhook secret), on
 * an embedded PostgreSQL with default durability, GitHub mocked with nock. Prints the time to
 * response (p50/p99/max) and, once the intake processor has drained the inbox, the tasks
 * created, which must equal the distinct comments (the duplicates are redeliveries).
 *
 * The same deliveries also go to three baselines in the same process: a bare node:http server
 * that reads the body and answers 200 (the machine's floor: a 2-core machine misses an absolute
 * target with it too); the same bare server making the durable write Tether makes before it
 * answers (the same group-committed INSERT into a copy of the inbox table, and nothing else: the
 * floor for any intake that keeps a delivery before its 200); and Probot's Server with an empty
 * handler. Tether is measured against
 * the floor: at three levels (50 concurrent fresh connections, N concurrent fresh connections,
 * N concurrent keep-alive connections) every round runs each level on the three servers in a
 * rotating order, after an unmeasured warm-up round, and the report gives the median of the
 * per-round ratios Tether ÷ bare (p50 and p99): the spread between runs is larger than the
 * effect, so only figures taken minutes apart under the same load are compared. Target: p99
 * ≤ 1.3× the bare server at every level. Tether's processor drains each of its runs' inbox
 * before the next run starts.
 *
 *   npx tsx bench/intake.ts [deliveries=200] [concurrency] [duplicates=10%] [rounds=5]
 *
 * A concurrency argument replaces the three levels with that one (fresh connections).
 *
 * The load generator runs in a child process so that nock (which patches http in this process
 * to stand in for GitHub) does not sit on the client's side of the measurement.
 */
import { spawn } from "node:child_process";
import { createHmac, generateKeyPairSync, randomUUID } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const SECRET = "bench-webhook-secret";
const APP_ID = 4242;
const here = fileURLToPath(import.meta.url);

if (process.argv[2] === "--load") await runLoad();
else await runBench();

interface Delivery {
  id: string;
  body: string;
}

interface LoadPlan {
  url: string;
  concurrency: number;
  /** Reuse connections (one agent for the warm-up and the burst) instead of one per delivery. */
  keepAlive: boolean;
  warmup: Delivery[];
  deliveries: Delivery[];
}

interface Level {
  name: string;
  concurrency: number;
  keepAlive: boolean;
}

interface ServerArm {
  name: string;
  url: string;
}

interface LoadResult {
  ms: number[];
  statuses: Record<string, number>;
  wallMs: number;
}

async function runBench(): Promise<void> {
  const n = positiveInt(process.argv[2] ?? process.env.BENCH_DELIVERIES, 200);
  const concurrencyArg = process.argv[3] || process.env.BENCH_CONCURRENCY || undefined;
  const concurrency = positiveInt(concurrencyArg, n);
  const duplicates = Math.min(
    n - 1,
    positiveInt(process.argv[4] ?? process.env.BENCH_DUPLICATES, Math.ceil(n / 10)),
  );
  const rounds = positiveInt(process.argv[5] ?? process.env.BENCH_ROUNDS, 5);

  const nock = (await import("nock")).default;
  const { Probot, ProbotOctokit, Server } = await import("probot");
  const { serveTether } = await import("../src/app.js");
  const { startEmbeddedPostgres, freePort } = await import("../src/db/embedded.js");
  const { migrate } = await import("../src/db/migrate.js");
  const { createPool } = await import("../src/db/pool.js");
  const { loadEnv } = await import("../src/env.js");
  const { IntakeProcessor } = await import("../src/intake/processor.js");
  const { createLogger } = await import("../src/log.js");
  const { countDeliveries } = await import("../src/sql/deliveries.js");
  const { InboxWriter } = await import("../src/intake/inbox-writer.js");
  const examples = (await import("@octokit/webhooks-examples")).default as unknown as Array<{
    name: string;
    examples: Array<Record<string, any>>; // eslint-disable-line @typescript-eslint/no-explicit-any
  }>;

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tether-bench-intake-"));
  const log = createLogger("silent");
  const pg = await startEmbeddedPostgres({ dataDir: path.join(dir, "pg") });
  const pool = createPool(pg.url, { max: 10 }); // as openDatabase: runner concurrency (2) + 8
  const cleanup: Array<() => Promise<unknown> | unknown> = [];
  try {
    await migrate(pg.url);
    const privateKey = generateKeyPairSync("rsa", {
      modulusLength: 2048,
      privateKeyEncoding: { type: "pkcs8", format: "pem" },
      publicKeyEncoding: { type: "spki", format: "pem" },
    }).privateKey;
    const env = loadEnv({
      APP_ID: String(APP_ID),
      PRIVATE_KEY: privateKey,
      WEBHOOK_SECRET: SECRET,
    });

    // GitHub: every call intake makes, answered by nock for as long as the bench runs.
    nock.disableNetConnect();
    nock.enableNetConnect(/^(127\.0\.0\.1|localhost)(:\d+)?$/);
    cleanup.push(() => nock.restore());
    const gh = nock("https://api.github.com").persist();
    gh.post(/\/app\/installations\/\d+\/access_tokens/).reply(201, {
      token: "ghs_bench",
      expires_at: "2099-01-01T00:00:00Z",
      permissions: {},
    });
    gh.get(/\/contents\/\.github%2Ftether\.yml/).reply(404, { message: "Not Found" });
    gh.get(/\/collaborators\/[^/]+\/permission/).reply(200, {
      permission: "write",
      role_name: "write",
    });
    gh.post(/\/issues\/comments\/\d+\/reactions/).reply(201, { id: 1, content: "eyes" });
    // GitHub is mocked, so its rate limits are too: throttling (one write a second per
    // installation in production) would only measure Bottleneck's timer.
    const Octokit = ProbotOctokit.defaults((o: Record<string, unknown>) => ({
      ...o,
      retry: { enabled: false },
      throttle: { ...(o.throttle as object | undefined), enabled: false },
    }));

    // Deliveries: GitHub's example payload, one distinct issue per comment so that every
    // comment is its own task key (coalescing would merge tasks and hide a lost comment).
    const template = examples
      .find((d) => d.name === "issue_comment")!
      .examples.find((e) => e.action === "created" && e.installation)!;
    let nextComment = 1;
    const delivery = (): Delivery => {
      const comment = nextComment++;
      const p = structuredClone(template);
      p.issue.number = comment;
      p.comment.id = comment;
      p.comment.body = `@tether please look at case ${comment}`;
      return { id: randomUUID(), body: JSON.stringify(p) };
    };
    const makePlan = (url: string, level: Level): LoadPlan & { distinct: number } => {
      // Keep-alive: as many warm-up deliveries as connections, so the burst finds them all open.
      const warmup = Array.from({ length: level.keepAlive ? level.concurrency : 20 }, delivery);
      const distinct = Array.from({ length: n - duplicates }, delivery);
      // Half the duplicates repeat a delivery id (GitHub retrying), half send a known comment
      // under a new id (someone pressing "Redeliver").
      const dupes = Array.from({ length: duplicates }, (_, i) => {
        const orig = distinct[i % distinct.length]!;
        return i % 2 ? orig : { id: randomUUID(), body: orig.body };
      });
      return {
        url,
        concurrency: level.concurrency,
        keepAlive: level.keepAlive,
        warmup,
        deliveries: shuffle([...distinct, ...dupes]),
        distinct: warmup.length + distinct.length,
      };
    };

    const levels: Level[] = [
      { name: "50 concurrent, fresh connections", concurrency: Math.min(50, n), keepAlive: false },
      { name: `${n} concurrent, fresh connections`, concurrency: n, keepAlive: false },
      { name: `${n} concurrent, keep-alive connections`, concurrency: n, keepAlive: true },
    ];
    if (concurrencyArg !== undefined)
      levels.splice(0, levels.length, {
        name: `${concurrency} concurrent, fresh connections`,
        concurrency,
        keepAlive: false,
      });
    console.log(
      `${n} deliveries a run (${n - duplicates} distinct comments, ${duplicates} duplicates), after 20 warm-up deliveries (keep-alive: one per connection); ` +
        `levels: ${levels.map((l) => l.name).join("; ")}`,
    );
    console.log(
      `servers interleaved: every round runs each level on every server, in a rotating order; one unmeasured round first, then ${rounds} measured`,
    );
    console.log(
      `machine: ${os.cpus().length} cores, load average ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(" ")}`,
    );
    console.log("");

    // 1. bare node:http: the floor, what the machine costs
    const bare = http.createServer((req, res) => {
      req.resume();
      req.on("end", () => res.end("ok\n"));
    });
    await new Promise<void>((r) => bare.listen(0, "127.0.0.1", () => r()));
    cleanup.push(() => new Promise((r) => bare.close(r)));
    const bareUrl = `http://127.0.0.1:${(bare.address() as AddressInfo).port}/`;

    // 2. Probot's Server with an empty handler (Tether served through one before)
    const noopPort = await freePort();
    const noopServer = new Server({
      host: "127.0.0.1",
      port: noopPort,
      log,
      Probot: Probot.defaults({ appId: APP_ID, privateKey, secret: SECRET, Octokit, log }),
    });
    await noopServer.load((app) => app.on("issue_comment.created", async () => {}));
    await noopServer.start();
    const noop = { url: `http://127.0.0.1:${noopPort}/api/github/webhooks` };
    cleanup.push(() => noopServer.stop());

    // 3. Tether as main.ts runs it: its own server and webhook route, the inbox, and the intake
    // processor in the same process (as in the web role)
    const probot = new Probot({ appId: APP_ID, privateKey, secret: SECRET, Octokit, log });
    const served = await serveTether({ env, log, pool }, probot, { host: "127.0.0.1" });
    const tether = { url: `${served.url}/api/github/webhooks` };
    cleanup.push(() => served.close());
    const processor = new IntakeProcessor({
      pool,
      log,
      auth: (id) => probot.auth(id),
      appId: APP_ID,
      concurrency: env.TETHER_INTAKE_CONCURRENCY,
    });
    await processor.start();
    cleanup.push(() => processor.stop());

    // 4. bare node:http plus the durable write alone: the same group-committed INSERT
    // (InboxWriter, insertDeliveries) into a copy of the inbox table in its own schema, nothing
    // else: no signature check, no parsing, no screening. The floor for an intake that keeps a
    // delivery before it answers; what Tether costs above it is its own request handling.
    await pool.query(
      "CREATE SCHEMA floor; CREATE TABLE floor.webhook_deliveries (LIKE public.webhook_deliveries INCLUDING ALL)",
    );
    const floorPool = createPool(
      `${pg.url}${pg.url.includes("?") ? "&" : "?"}options=-c%20search_path%3Dfloor`,
      {
        max: 10,
      },
    );
    cleanup.push(() => floorPool.end());
    const floorInbox = new InboxWriter(floorPool);
    const floor = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const id = String(req.headers["x-github-delivery"]);
        floorInbox
          .insert({
            deliveryId: id,
            event: "issue_comment",
            action: "created",
            installationId: 1,
            dedupeKey: id,
            payloadJson: Buffer.concat(chunks).toString("utf8"),
          })
          .then(
            () => res.end("ok\n"),
            () => res.writeHead(500).end(),
          );
      });
    });
    await new Promise<void>((r) => floor.listen(0, "127.0.0.1", () => r()));
    cleanup.push(() => new Promise((r) => floor.close(r)));
    const floorUrl = `http://127.0.0.1:${(floor.address() as AddressInfo).port}/`;

    const servers: ServerArm[] = [
      { name: "bare node:http", url: bareUrl },
      { name: "bare + the inbox write", url: floorUrl },
      { name: "Probot, empty handler", url: noop.url },
      { name: "Tether", url: tether.url },
    ];
    let expected = 0;
    const drains: number[] = [];
    // results[level][server] = one LoadResult per measured round
    const results = levels.map(() => servers.map((): LoadResult[] => []));
    for (let round = 0; round <= rounds; round++) {
      for (const [li, level] of levels.entries()) {
        const order = servers.map((_, i) => servers[(i + round + li) % servers.length]!);
        for (const server of order) {
          const plan = makePlan(server.url, level);
          const r = await runLoadChild(plan);
          if (server.name === "Tether") {
            expected += plan.distinct;
            // Let the processor finish this run's inbox before anything else is measured.
            const started = Date.now();
            for (;;) {
              await processor.processPending();
              if ((await countDeliveries(pool)).pending === 0) break;
              if (Date.now() - started > 120_000)
                throw new Error("the inbox did not drain in 2 minutes");
              await sleep(20);
            }
            drains.push(Date.now() - started);
          }
          if (round > 0) results[li]![servers.indexOf(server)]!.push(r);
        }
      }
      process.stderr.write(
        round === 0 ? "warm-up round done\n" : `round ${round} of ${rounds} done\n`,
      );
    }

    const t = servers.findIndex((s) => s.name === "Tether");
    const ratioRows: string[] = [];
    for (const [li, level] of levels.entries()) {
      console.log(level.name);
      for (const [si, server] of servers.entries()) report(`  ${server.name}`, results[li]![si]!);
      const perRound = (p: number, si: number) =>
        results[li]![t]!.map(
          (r, i) => percentile(r.ms, p) / percentile(results[li]![si]!.at(i)!.ms, p),
        );
      const p50 = perRound(50, 0);
      const p99 = perRound(99, 0);
      const vsProbot = perRound(
        99,
        servers.findIndex((s) => s.name.startsWith("Probot")),
      );
      const fi = servers.findIndex((s) => s.name.startsWith("bare +"));
      const floorP99 = results[li]![fi]!.map(
        (r, i) => percentile(r.ms, 99) / percentile(results[li]![0]!.at(i)!.ms, 99),
      );
      const vsFloor = perRound(99, fi);
      const line =
        `  Tether ÷ bare, median of ${p99.length} per-round ratios: p50 ${median(p50).toFixed(2)}×, p99 ${median(p99).toFixed(2)}× ` +
        `(p99 per round ${p99.map((x) => x.toFixed(2)).join(" ")}); Tether ÷ Probot p99 ${median(vsProbot).toFixed(2)}×\n` +
        `  the durable write alone ÷ bare p99 ${median(floorP99).toFixed(2)}×; Tether ÷ (bare + the inbox write) p99 ${median(vsFloor).toFixed(2)}× (per round ${vsFloor.map((x) => x.toFixed(2)).join(" ")})`;
      console.log(line);
      ratioRows.push(
        `${level.name}: p99 ${median(p99).toFixed(2)}× ${median(p99) <= 1.3 ? "met" : "not met"}`,
      );
    }

    const tasks = (await pool.query("SELECT count(*)::int AS n FROM tasks")).rows[0].n as number;
    const fed = (await pool.query("SELECT count(DISTINCT source)::int AS n FROM task_comments"))
      .rows[0].n as number;
    const counts = await countDeliveries(pool);
    console.log("");
    console.log(
      `processor drained each Tether run's inbox in ${median(drains)} ms (median; max ${Math.max(...drains)} ms) after its last response`,
    );
    console.log(`deliveries: ${JSON.stringify(counts)}`);
    console.log(
      `tasks created: ${tasks} for ${expected} distinct comments (warm-up included; comments in task_comments: ${fed})`,
    );
    console.log(`target p99 ≤ 1.3× the bare server at every level: ${ratioRows.join("; ")}`);
    console.log(
      `one task per distinct comment: ${tasks === expected && fed === expected ? "yes" : "NO"}; load average after: ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(" ")}`,
    );
    process.exitCode = tasks === expected && fed === expected ? 0 : 1;
  } finally {
    for (const step of cleanup.reverse()) await step();
    await pool.end();
    await pg.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function report(label: string, runs: LoadResult[]): void {
  const all = runs.flatMap((r) => r.ms);
  const statuses: Record<string, number> = {};
  for (const r of runs)
    for (const [k, v] of Object.entries(r.statuses)) statuses[k] = (statuses[k] ?? 0) + v;
  const perRound = runs.map((r) => percentile(r.ms, 99).toFixed(0)).join("/");
  console.log(
    `${label.padEnd(24)} p50 ${median(runs.map((r) => percentile(r.ms, 50)))
      .toFixed(1)
      .padStart(6)} ms   ` +
      `p99 ${median(runs.map((r) => percentile(r.ms, 99)))
        .toFixed(1)
        .padStart(6)} ms (medians of the rounds; p99 per round ${perRound}; ` +
      `max ${Math.max(...all).toFixed(0)} ms; statuses ${JSON.stringify(statuses)})`,
  );
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[
    Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  ]!;
}

function median(values: number[]): number {
  return percentile(values, 50);
}

function runLoadChild(plan: LoadPlan): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...process.execArgv, here, "--load"], {
      stdio: ["pipe", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.on("error", reject);
    child.on("exit", (code) => {
      if (code !== 0) return reject(new Error(`load generator exited with ${code}`));
      try {
        resolve(JSON.parse(out) as LoadResult);
      } catch (err) {
        reject(err);
      }
    });
    child.stdin.end(JSON.stringify(plan));
  });
}

/** The child: post the plan's deliveries, `concurrency` at a time, and report each one's time. */
async function runLoad(): Promise<void> {
  let input = "";
  for await (const chunk of process.stdin) input += chunk;
  const plan = JSON.parse(input) as LoadPlan;
  const url = new URL(plan.url);
  const signed = (list: Delivery[]) =>
    list.map((d) => ({
      ...d,
      signature: `sha256=${createHmac("sha256", SECRET).update(d.body).digest("hex")}`,
    }));
  const post = (agent: http.Agent, d: Delivery & { signature: string }) =>
    new Promise<{ ms: number; status: number }>((resolve, reject) => {
      const started = performance.now();
      const req = http.request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: "POST",
          agent,
          headers: {
            "content-type": "application/json",
            "content-length": Buffer.byteLength(d.body),
            "x-github-event": "issue_comment",
            "x-github-delivery": d.id,
            "x-hub-signature-256": d.signature,
          },
        },
        (res) => {
          res.resume();
          res.on("end", () =>
            resolve({ ms: performance.now() - started, status: res.statusCode ?? 0 }),
          );
        },
      );
      req.setTimeout(30_000, () => req.destroy(new Error("timed out")));
      req.on("error", reject);
      req.end(d.body);
    });
  // Keep-alive: one agent for the warm-up and the burst, so the burst reuses open connections.
  const shared = plan.keepAlive
    ? new http.Agent({ keepAlive: true, maxSockets: plan.concurrency })
    : undefined;
  const runAll = async (list: Array<Delivery & { signature: string }>) => {
    // Otherwise a fresh agent: every delivery opens its own connection, as GitHub's do.
    const agent = shared ?? new http.Agent({ keepAlive: false, maxSockets: plan.concurrency });
    const results: Array<{ ms: number; status: number }> = [];
    let next = 0;
    const worker = async () => {
      while (next < list.length) results.push(await post(agent, list[next++]!));
    };
    await Promise.all(Array.from({ length: Math.min(plan.concurrency, list.length) }, worker));
    if (!shared) agent.destroy();
    return results;
  };
  await runAll(signed(plan.warmup));
  const measured = signed(plan.deliveries);
  // Let the server finish with the warm-up (Tether's processor handles it) before the burst.
  await sleep(1000);
  const t0 = performance.now();
  const results = await runAll(measured);
  const wallMs = performance.now() - t0;
  shared?.destroy();
  const statuses: Record<string, number> = {};
  for (const r of results) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
  process.stdout.write(JSON.stringify({ ms: results.map((r) => r.ms), statuses, wallMs }));
}

function shuffle<T>(list: T[]): T[] {
  for (let i = list.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [list[i], list[j]] = [list[j]!, list[i]!];
  }
  return list;
}

function positiveInt(value: string | undefined, fallback: number): number {
  const n = Number.parseInt(value ?? "", 10);
  return Number.isInteger(n) && n > 0 ? n : fallback;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
