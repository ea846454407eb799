import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadOrCreatePassword, scramVerifier } from "../../src/db/embedded-password.js";

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tether-pwfile-"));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));
let n = 0;
const fresh = () => path.join(tmp, `p${++n}`, "postgres.password");

describe("loadOrCreatePassword", () => {
  it("makes a random URL-safe password in a 0600 file once, then reads it back", async () => {
    const file = fresh();
    fs.mkdirSync(path.dirname(file));
    const made = await loadOrCreatePassword(file);
    expect(made.created).toBe(true);
    expect(made.password).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(fs.readFileSync(file, "utf8")).toBe(`${made.password}\n`);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(path.dirname(file))).toEqual(["postgres.password"]); // no temp file left

    expect(await loadOrCreatePassword(file)).toEqual({ password: made.password, created: false });
    const other = fresh();
    fs.mkdirSync(path.dirname(other));
    expect((await loadOrCreatePassword(other)).password).not.toBe(made.password);
  });

  it("takes a password someone wrote by hand (first line, spaces trimmed)", async () => {
    const file = fresh();
    fs.mkdirSync(path.dirname(file));
    fs.writeFileSync(file, "  hand-made  \nignored\n", { mode: 0o600 });
    expect(await loadOrCreatePassword(file)).toEqual({ password: "hand-made", created: false });
  });

  it("refuses an empty file, naming it and saying what to do, rather than make a new password", async () => {
    const file = fresh();
    fs.mkdirSync(path.dirname(file));
    fs.writeFileSync(file, "\n", { mode: 0o600 });
    await expect(loadOrCreatePassword(file)).rejects.toThrow(
      `The embedded PostgreSQL's password file ${file} is empty. Write the password`,
    );
    expect(fs.readFileSync(file, "utf8")).toBe("\n");
  });
});

describe("scramVerifier", () => {
  it("is PostgreSQL's stored form, a fresh salt each time, the same for the same salt", () => {
    const salt = Buffer.alloc(16, 7);
    const v = scramVerifier("pw", salt);
    expect(v).toMatch(
      /^SCRAM-SHA-256\$4096:[A-Za-z0-9+/=]{24}\$[A-Za-z0-9+/=]{44}:[A-Za-z0-9+/=]{44}$/,
    );
    expect(v).not.toContain("pw");
    expect(scramVerifier("pw", salt)).toBe(v);
    expect(scramVerifier("pw")).not.toBe(scramVerifier("pw"));
  });
});
