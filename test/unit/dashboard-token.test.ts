import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  DASHBOARD_TOKEN_FILE,
  DashboardTokenError,
  ensureDashboardToken,
} from "../../src/web/dashboard-token.js";

const root = fs.mkdtempSync(path.join(os.tmpdir(), "tether-dashboard-token-"));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
let n = 0;
const freshDir = () => path.join(root, `data-${++n}`);
const modeOf = (file: string) => fs.statSync(file).mode & 0o777;

describe("ensureDashboardToken", () => {
  it("makes a random token at first start, in a file only the owner can read", async () => {
    const dir = freshDir(); // not there yet: made on the way
    const made = await ensureDashboardToken(dir);
    expect(made.state).toBe("created");
    expect(made.file).toBe(path.join(dir, DASHBOARD_TOKEN_FILE));
    expect(made.token).toMatch(/^[\w-]{43}$/); // 32 random bytes
    expect(fs.readFileSync(made.file, "utf8").trim()).toBe(made.token);
    expect(modeOf(made.file)).toBe(0o600);
    // Nothing left behind but the file.
    expect(fs.readdirSync(dir)).toEqual([DASHBOARD_TOKEN_FILE]);
    const other = await ensureDashboardToken(freshDir());
    expect(other.token).not.toBe(made.token);
  });

  it("reuses the file on later starts", async () => {
    const dir = freshDir();
    const first = await ensureDashboardToken(dir);
    const again = await ensureDashboardToken(dir);
    expect(again).toEqual({ ...first, state: "read" });
  });

  it("takes a token the operator wrote into the file", async () => {
    const dir = freshDir();
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, DASHBOARD_TOKEN_FILE), "my+own/token=0123456789\n", {
      mode: 0o600,
    });
    expect((await ensureDashboardToken(dir)).token).toBe("my+own/token=0123456789");
  });

  it("takes the mode of a file others could read back to 0600, and says so", async () => {
    const dir = freshDir();
    const made = await ensureDashboardToken(dir);
    fs.chmodSync(made.file, 0o644);
    const again = await ensureDashboardToken(dir);
    expect(again.state).toBe("tightened");
    expect(again.token).toBe(made.token);
    expect(modeOf(made.file)).toBe(0o600);
  });

  it("refuses a file that holds no token, without quoting it", async () => {
    const dir = freshDir();
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, DASHBOARD_TOKEN_FILE), "too short secret\n", { mode: 0o600 });
    const err = await ensureDashboardToken(dir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DashboardTokenError);
    expect((err as Error).message).toMatch(/does not hold a dashboard token.*Delete it/);
    expect((err as Error).message).not.toContain("too short secret");
  });

  it("processes starting together end up with one token", async () => {
    const dir = freshDir();
    const all = await Promise.all(Array.from({ length: 8 }, () => ensureDashboardToken(dir)));
    expect(new Set(all.map((t) => t.token)).size).toBe(1);
    expect(all.filter((t) => t.state === "created").length).toBeLessThanOrEqual(1);
    expect(fs.readdirSync(dir)).toEqual([DASHBOARD_TOKEN_FILE]);
  });

  // A directory under a plain file cannot be made, not even by root (who writes anywhere else).
  it("says what to do when the data directory cannot be written", async () => {
    const file = path.join(freshDir(), "not-a-directory");
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, "");
    const err = await ensureDashboardToken(path.join(file, "data")).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DashboardTokenError);
    expect((err as Error).message).toMatch(/Could not write .*TETHER_DASHBOARD_TOKEN/);
  });
});
