/**
 * What can be checked of the Dockerfile and docker-compose.yml without a Docker engine: every
 * file they copy exists (and is not ignored), what the runtime stage takes from the build stage
 * is produced there, the paths and variables agree with the code, and the HEALTHCHECK command
 * itself works against Tether's /healthz.
 */
import { AGENT_CLIS } from "../../src/cli-registry.js";
import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { platformPackage } from "../../src/claude/claude-path.js";
import type { Pool } from "../../src/db/pool.js";
import { freePort } from "../../src/db/embedded.js";
import { EnvSchema, loadEnv } from "../../src/env.js";
import { createLogger } from "../../src/log.js";
import { healthRoutes } from "../../src/web/health.js";
import { runHealthcheck } from "../helpers/healthcheck.js";
import { serveHandlers } from "../../src/web/http.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), "utf8");
const pkg = JSON.parse(read("package.json")) as {
  main: string;
  engines: { node: string };
  scripts: Record<string, string>;
  devDependencies: Record<string, string>;
};

interface Instruction {
  op: string;
  args: string;
  stage: number;
}

/** Dockerfile instructions, continuation lines joined, comments and parser directives dropped. */
function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  let stage = -1;
  let pending = "";
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!pending && (line === "" || line.startsWith("#"))) continue;
    if (line.startsWith("#")) continue; // a comment inside a continued instruction
    if (line.endsWith("\\")) {
      pending += `${line.slice(0, -1).trim()} `;
      continue;
    }
    const whole = (pending + line).trim();
    pending = "";
    const op = whole.split(/\s+/)[0] ?? "";
    const upper = op.toUpperCase();
    if (upper === "FROM") stage++;
    out.push({ op: upper, args: whole.slice(op.length).trim(), stage });
  }
  return out;
}

const steps = parseDockerfile(read("Dockerfile"));
const finalStage = Math.max(...steps.map((s) => s.stage));
const inFinal = (op: string) => steps.filter((s) => s.op === op && s.stage === finalStage);
const only = (op: string, stage = finalStage): Instruction => {
  const found = steps.filter((s) => s.op === op && s.stage === stage);
  expect(found, `${op} in stage ${stage}`).toHaveLength(1);
  return found[0]!;
};

/** ENV in the final stage, both `ENV A=1 B=2` and `ENV A 1` forms. */
function imageEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const s of inFinal("ENV")) {
    const pairs = [...s.args.matchAll(/(\w+)=("[^"]*"|\S+)/g)];
    if (pairs.length) for (const [, k, v] of pairs) env[k!] = v!.replace(/^"|"$/g, "");
    else {
      const [k, ...v] = s.args.split(/\s+/);
      env[k!] = v.join(" ");
    }
  }
  return env;
}

interface Copy {
  from?: string;
  sources: string[];
  dest: string;
  stage: number;
}

function copies(): Copy[] {
  return steps
    .filter((s) => s.op === "COPY")
    .map((s) => {
      const words = s.args.split(/\s+/);
      const flags = words.filter((w) => w.startsWith("--"));
      const paths = words.filter((w) => !w.startsWith("--"));
      const from = flags.find((f) => f.startsWith("--from="))?.slice("--from=".length);
      return { from, sources: paths.slice(0, -1), dest: paths.at(-1)!, stage: s.stage };
    });
}

const ignorePatterns = read(".dockerignore")
  .split("\n")
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith("#"));

/** Whether .dockerignore keeps `file` out of the build context (the subset of its syntax used). */
function dockerIgnored(file: string): boolean {
  const parts = file.split("/");
  return ignorePatterns.some((pattern) => {
    const re = new RegExp(
      `^${pattern
        .replace(/[.+^${}()|[\]\\]/g, "\\$&")
        .replace(/\*/g, "[^/]*")
        .replace(/\?/g, "[^/]")}$`,
    );
    return parts.some((_, i) => re.test(parts.slice(0, i + 1).join("/")));
  });
}

function buildStageName(): string {
  const from = steps.find((s) => s.op === "FROM" && s.stage === 0)!;
  const name = /\bAS\s+(\S+)/i.exec(from.args)?.[1];
  expect(name, "the build stage is named").toBeDefined();
  return name!;
}

/** The HEALTHCHECK's exec-form command. */
function healthcheckCommand(): string[] {
  const hc = only("HEALTHCHECK");
  const json = /\bCMD\s+(\[.*\])\s*$/.exec(hc.args)?.[1];
  expect(json, "HEALTHCHECK uses the exec form").toBeDefined();
  return JSON.parse(json!) as string[];
}

function entrypoint(): string[] {
  return JSON.parse(only("ENTRYPOINT").args) as string[];
}

describe("Dockerfile", () => {
  it("builds on a Node LTS slim image that satisfies package.json's engines", () => {
    const arg = steps.find((s) => s.op === "ARG" && s.args.startsWith("NODE_IMAGE="));
    const image = arg?.args.slice("NODE_IMAGE=".length) ?? "";
    const m = /^node:(\d+)(?:\.\d+)*-(?:\w+-)?slim$/.exec(image);
    expect(m, `NODE_IMAGE ${image}`).not.toBeNull();
    const major = Number(m![1]);
    expect(major % 2, "even Node majors are the LTS lines").toBe(0);
    expect(major).toBeGreaterThanOrEqual(Number(/>=\s*(\d+)/.exec(pkg.engines.node)![1]));
    const froms = steps.filter((s) => s.op === "FROM").map((s) => s.args.split(/\s+/)[0]);
    expect(froms).toEqual(["${NODE_IMAGE}", "${NODE_IMAGE}"]);
  });

  it("copies only files that exist and that .dockerignore lets into the context", () => {
    const local = copies().filter((c) => !c.from);
    expect(local.length).toBeGreaterThan(0);
    for (const c of local) {
      for (const src of c.sources) {
        expect(fs.existsSync(path.join(ROOT, src)), `COPY ${src}: missing`).toBe(true);
        expect(dockerIgnored(src), `COPY ${src}: excluded by .dockerignore`).toBe(false);
      }
    }
  });

  it("gives the build stage everything the build reads", () => {
    const copied = new Set(
      copies()
        .filter((c) => c.stage === 0 && !c.from)
        .flatMap((c) => c.sources),
    );
    const build = JSON.parse(read("tsconfig.build.json")) as { extends: string; include: string[] };
    for (const needed of [
      "package.json",
      "package-lock.json",
      "tsconfig.build.json",
      path.basename(build.extends),
      ...build.include,
    ])
      expect(copied, `the build stage copies ${needed}`).toContain(needed);
    // tsc, then the files it does not emit copied into dist/ (the dashboard's browser script).
    const [tsc, ...rest] = (pkg.scripts.build ?? "").split(" && ");
    expect(tsc).toBe("tsc -p tsconfig.build.json");
    for (const step of rest) {
      const [cmd, ...args] = step.split(/\s+/);
      expect(["mkdir", "cp"], step).toContain(cmd);
      if (cmd !== "cp") continue;
      for (const src of args.filter((a) => !a.startsWith("-")).slice(0, -1))
        expect(
          [...copied].some((c) => src === c || src.startsWith(`${c}/`)),
          `the build stage copies ${src}`,
        ).toBe(true);
    }
  });

  it("puts the dashboard's browser script in dist/, beside the page that inlines it", () => {
    // src/web/dashboard-page.ts reads ./browser/dashboard.js; the image has dist/ and no src/.
    expect(pkg.scripts.build).toContain("cp src/web/browser/dashboard.js dist/src/web/browser/");
    // The live view's script likewise (src/web/live-page.ts).
    expect(pkg.scripts.build).toContain("cp src/web/browser/live.js dist/src/web/browser/");
    expect(read("src/web/live-page.ts")).toContain('new URL("./browser/live.js", import.meta.url)');
    expect(read("src/web/dashboard-page.ts")).toContain(
      'new URL("./browser/dashboard.js", import.meta.url)',
    );
    expect(copies().some((c) => c.stage === finalStage && c.sources.includes("/app/dist"))).toBe(
      true,
    );
    // The global test setup builds dist/ (unless told to skip it), so the copy is there to see.
    if (process.env.TETHER_TEST_SKIP_BUILD !== "1")
      expect(read("dist/src/web/browser/dashboard.js")).toBe(read("src/web/browser/dashboard.js"));
  });

  it("takes from the build stage only what the build stage produces", () => {
    const stage = buildStageName();
    const fromBuild = copies().filter((c) => c.from === stage);
    const buildRuns = steps.filter((s) => s.op === "RUN" && s.stage === 0).map((s) => s.args);
    const produced: Record<string, boolean> = {
      "/app/node_modules": buildRuns.some((r) => /\bnpm ci\b/.test(r)),
      "/app/dist": buildRuns.some((r) => /\bnpm run build\b/.test(r)),
    };
    expect(fromBuild.length).toBeGreaterThan(0);
    for (const c of fromBuild) {
      for (const src of c.sources) {
        const made = produced[src] ?? buildRuns.some((r) => r.includes(src));
        expect(made, `COPY --from=${stage} ${src}: nothing in the build stage makes it`).toBe(true);
      }
    }
    // Production dependencies only: the prune comes after the CLI is copied out.
    const last = buildRuns.at(-1)!;
    expect(last).toMatch(/cp .*\/app\/claude.*npm prune --omit=dev/);
  });

  it("starts dist/src/main.js, which the build emits from src/main.ts", () => {
    const script = entrypoint().find((a) => a.endsWith(".js"));
    expect(script).toBe(pkg.main);
    expect(script).toBe("dist/src/main.js");
    const build = JSON.parse(read("tsconfig.build.json")) as { include: string[] };
    const base = JSON.parse(read("tsconfig.json")) as {
      compilerOptions: { outDir: string; rootDir: string };
    };
    expect(build.include).toContain("src");
    expect(fs.existsSync(path.join(ROOT, "src/main.ts"))).toBe(true);
    const emitted = path.join(
      base.compilerOptions.outDir,
      path.relative(base.compilerOptions.rootDir, "src/main.ts").replace(/\.ts$/, ".js"),
    );
    expect(emitted).toBe(script);
    // The global test setup builds dist/ (unless told to skip it), so the file is there to see.
    if (process.env.TETHER_TEST_SKIP_BUILD !== "1")
      expect(fs.existsSync(path.join(ROOT, script!))).toBe(true);
    // tini forwards signals (Tether owns SIGTERM) and reaps orphans; the role stays free to pass.
    expect(entrypoint().slice(0, 2)).toEqual(["/usr/bin/tini", "--"]);
    expect(steps.some((s) => s.op === "CMD" && s.stage === finalStage)).toBe(false);
  });

  it("installs git and ca-certificates (and tini, and the sandbox's bubblewrap and socat) in the runtime image", () => {
    const runs = inFinal("RUN").map((s) => s.args);
    const apt = runs.find((r) => r.includes("apt-get install"));
    for (const p of ["git", "ca-certificates", "tini", "bubblewrap", "socat"])
      expect(apt).toMatch(new RegExp(`\\s${p}(\\s|$)`));
    expect(apt).toContain("--no-install-recommends");
  });

  it("ships the pinned Claude CLI where TETHER_CLAUDE_PATH points", () => {
    const env = imageEnv();
    const cli = copies().find((c) => c.from && c.sources.includes("/app/claude"));
    expect(cli?.dest).toBe(env.TETHER_CLAUDE_PATH);
    // The cp names the platform package the way the code resolves it (src/claude/claude-path.ts).
    const cp = steps.find((s) => s.op === "RUN" && s.args.includes("/app/claude"))!.args;
    const x64 = platformPackage({ platform: "linux", arch: "x64", musl: false })!;
    expect(cp).toContain(`node_modules/${x64.replace(/x64$/, "$(node -p process.arch)")}/claude`);
    // The launcher, pinned, brings that platform package as an optional dependency of the same
    // version (the lockfile records every platform's, so an arm64 build gets arm64's).
    const lock = JSON.parse(fs.readFileSync(path.join(ROOT, "package-lock.json"), "utf8"));
    const launcher = lock.packages["node_modules/@anthropic-ai/claude-code"];
    expect(launcher.version).toBe(pkg.devDependencies["@anthropic-ai/claude-code"]);
    expect(launcher.optionalDependencies[x64]).toBe(launcher.version);
    expect(lock.packages[`node_modules/${x64}`].version).toBe(launcher.version);
  });

  it("runs as the non-root node user, with the workspaces and $HOME/.claude on volumes it owns", () => {
    const users = inFinal("USER").map((s) => s.args);
    expect(users).toEqual(["node"]);
    const userAt = steps.findIndex((s) => s.op === "USER" && s.stage === finalStage);
    const entryAt = steps.findIndex((s) => s.op === "ENTRYPOINT");
    expect(userAt).toBeLessThan(entryAt);

    const volumes = JSON.parse(only("VOLUME").args) as string[];
    const env = imageEnv();
    expect(volumes).toContain(env.TETHER_DATA_DIR);
    // The node images' node user has HOME /home/node; the CLI keeps sessions in $HOME/.claude.
    expect(volumes).toContain("/home/node/.claude");
    const prepared = inFinal("RUN").find((s) => s.args.includes("chown"))!.args;
    for (const v of volumes) {
      expect(prepared).toContain(v);
      expect(prepared).toMatch(/chown node:node/);
    }
  });

  it("sets only variables Tether knows, to values it accepts", () => {
    const env = imageEnv();
    const known = new Set([
      ...Object.keys(EnvSchema.shape),
      ...AGENT_CLIS.map((c) => c.pathEnv),
      "NODE_ENV",
    ]);
    expect(Object.keys(env).filter((k) => !known.has(k))).toEqual([]);
    expect(env.HOST).toBe("0.0.0.0"); // Probot and the runner's server default to loopback
    const { NODE_ENV: _, ...tether } = env;
    expect(() => loadEnv(tether, "/app")).not.toThrow();
    expect(String(loadEnv(tether, "/app").PORT)).toBe(only("EXPOSE").args);
  });
});

describe("the Dockerfile's HEALTHCHECK command", () => {
  const closers: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const close of closers) await close();
  });

  async function serveHealth(databaseUp: boolean): Promise<number> {
    const pool = {
      query: async () => {
        if (!databaseUp) throw new Error("connect ECONNREFUSED");
        return { rows: [] };
      },
    } as unknown as Pool;
    const served = await serveHandlers([
      healthRoutes({ env: loadEnv({}), log: createLogger("silent"), pool }),
    ]);
    closers.push(served.close);
    return Number(new URL(served.url).port);
  }

  it("fetches /healthz with node (no curl in a slim image) and passes on 200", async () => {
    expect(healthcheckCommand()[0]).toBe("node");
    expect(healthcheckCommand().join(" ")).toContain("/healthz");
    expect(await runHealthcheck(healthcheckCommand(), await serveHealth(true))).toBe(0);
  });

  it("fails on 503 and when nothing listens", async () => {
    expect(await runHealthcheck(healthcheckCommand(), await serveHealth(false))).toBe(1);
    expect(await runHealthcheck(healthcheckCommand(), await freePort())).toBe(1);
  });

  it("gives up before Docker's own timeout", () => {
    const hc = only("HEALTHCHECK").args;
    const dockerTimeout = Number(/--timeout=(\d+)s/.exec(hc)![1]) * 1000;
    const own = Number(/AbortSignal\.timeout\((\d+)\)/.exec(hc)![1]);
    expect(own).toBeLessThan(dockerTimeout);
  });
});

describe(".dockerignore", () => {
  it.each([".env", ".env.production", "node_modules", "dist", ".data", ".git", "key.pem"])(
    "keeps %s out of the build context",
    (file) => expect(dockerIgnored(file)).toBe(true),
  );
});

describe("docker-compose.yml", () => {
  interface Service {
    image?: string;
    build?: string | { context: string; dockerfile?: string };
    environment?: Record<string, string>;
    env_file?: string | string[];
    volumes?: string[];
    security_opt?: string[];
    depends_on?: Record<string, { condition: string }>;
    healthcheck?: { test: string[] };
    stop_grace_period?: string;
    ports?: string[];
  }
  const compose = parseYaml(read("docker-compose.yml")) as {
    services: Record<string, Service>;
    volumes: Record<string, unknown>;
  };
  const tether = compose.services.tether!;
  const postgres = compose.services.postgres!;
  /**
   * Interpolation as compose does it, from `vars` (compose reads them from the shell and from
   * .env): ${VAR:-default} and ${VAR:?message}, which stops compose with the message when VAR is
   * unset or empty.
   */
  const expand = (v: string, vars: Record<string, string> = { POSTGRES_PASSWORD: "s3cret-pw" }) =>
    v.replace(/\$\{(\w+)(?::([-?])([^}]*))?\}/g, (_, name: string, op?: string, arg?: string) => {
      const value = vars[name];
      if (value) return value;
      if (op === "?") throw new Error(`required variable ${name} is missing a value: ${arg}`);
      return op === "-" ? (arg ?? "") : "";
    });
  /** Every ${…} in the file that names `name`. */
  const references = (name: string) =>
    [...read("docker-compose.yml").matchAll(/\$\{(\w+)([^}]*)\}/g)].filter((m) => m[1] === name);

  it("builds the Dockerfile in this directory", () => {
    const build = typeof tether.build === "string" ? { context: tether.build } : tether.build!;
    expect(build.context).toBe(".");
    expect(build.dockerfile ?? "Dockerfile").toBe("Dockerfile");
    expect(fs.existsSync(path.join(ROOT, build.context, "Dockerfile"))).toBe(true);
  });

  it("runs Postgres 17 with a health check, and starts Tether once it is healthy", () => {
    expect(postgres.image).toMatch(/^postgres:17\b/);
    expect(postgres.healthcheck?.test.join(" ")).toContain("pg_isready");
    expect(tether.depends_on?.postgres?.condition).toBe("service_healthy");
  });

  it("points DATABASE_URL at that Postgres, with its user, password and database", () => {
    const env = postgres.environment!;
    const url = new URL(expand(tether.environment!.DATABASE_URL!));
    expect(url.protocol).toBe("postgres:");
    expect(url.hostname).toBe("postgres");
    expect(url.username).toBe(env.POSTGRES_USER);
    expect(url.password).toBe(expand(env.POSTGRES_PASSWORD!));
    expect(url.password).toBe("s3cret-pw");
    expect(url.pathname).toBe(`/${env.POSTGRES_DB}`);
  });

  it("has no default database password: unset, compose stops and says where to set it", () => {
    const refs = references("POSTGRES_PASSWORD");
    expect(refs.length).toBeGreaterThanOrEqual(2); // the server's, and Tether's DATABASE_URL
    for (const [whole, , rest] of refs) {
      expect(rest, whole).toMatch(/^:\?/);
      expect(rest, whole).toContain(".env");
    }
    for (const value of [
      postgres.environment!.POSTGRES_PASSWORD!,
      tether.environment!.DATABASE_URL!,
    ])
      for (const vars of [{}, { POSTGRES_PASSWORD: "" }] as Record<string, string>[])
        expect(() => expand(value, vars)).toThrow(
          /POSTGRES_PASSWORD is missing a value: set it in \.env/,
        );
    expect(read("docker-compose.yml")).not.toMatch(/tether:tether@|POSTGRES_PASSWORD:\s*tether/);
  });

  it("lets bubblewrap make its namespaces in the tether container", () => {
    expect(tether.security_opt).toEqual(
      expect.arrayContaining([
        "seccomp=deploy/seccomp/tether-runner.json",
        "apparmor=unconfined",
        "systempaths=unconfined",
      ]),
    );
  });

  it("mounts named volumes on every VOLUME of the image", () => {
    const mounts = new Map(
      (tether.volumes ?? []).map((v) => {
        const [name, target] = v.split(":");
        return [target!, name!];
      }),
    );
    for (const v of JSON.parse(only("VOLUME").args) as string[]) {
      const name = mounts.get(v);
      expect(name, `a volume on ${v}`).toBeDefined();
      expect(Object.keys(compose.volumes)).toContain(name);
    }
    for (const v of postgres.volumes ?? [])
      expect(Object.keys(compose.volumes)).toContain(v.split(":")[0]);
  });

  it("sets a fixed runtime id, listens on all interfaces, and reads the app's .env", () => {
    const env = tether.environment!;
    expect(env.TETHER_RUNTIME_ID).toBeTruthy();
    expect(env.HOST).toBe("0.0.0.0");
    expect([tether.env_file].flat()).toContain(".env");
    const known = new Set(Object.keys(EnvSchema.shape));
    expect(Object.keys(env).filter((k) => !known.has(k))).toEqual([]);
    const expanded = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, expand(v)]));
    expect(() => loadEnv(expanded, "/app")).not.toThrow();
    expect(tether.ports).toContain(`${env.PORT}:${only("EXPOSE").args}`);
  });

  it("lets Tether finish its shutdown before Docker kills it", () => {
    const grace = Number(/^(\d+)s$/.exec(tether.stop_grace_period ?? "10s")![1]) * 1000;
    const shutdown = loadEnv(tether.environment ?? {}).TETHER_SHUTDOWN_TIMEOUT_MS;
    expect(grace).toBeGreaterThan(shutdown);
  });
});
