import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import {
  clearProbeCache,
  offersResume,
  parseVersion,
  probeCli,
  type ProbeExec,
} from "../../src/agent-cli/probe-cli.js";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tether-probe-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
beforeEach(() => clearProbeCache());

/** A fake CLI as a shell script: prints a version and a help text. */
function fakeCli(name: string, version: string, help: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(
    file,
    `#!/bin/sh\nif [ "$1" = "--version" ]; then echo "${version}"; else printf '%s\\n' "${help}"; fi\n`,
  );
  fs.chmodSync(file, 0o755);
  return file;
}

describe("parseVersion / offersResume", () => {
  it.each([
    ["2.1.197 (Claude Code)", "2.1.197"],
    ["claude 1.0.0-beta.3", "1.0.0-beta.3"],
    ["v10.20.30\n", "10.20.30"],
    ["no version here", null],
  ])("%j → %s", (text, version) => {
    expect(parseVersion(text)).toBe(version);
  });

  it.each([
    ["  -r, --resume [value]   Resume a conversation", true],
    ["  --resume <id>", true],
    ["  --resume-later  something else", false],
    ["  --no-resume", false],
    ["  -c, --continue", false],
  ])("%j → %s", (help, ok) => {
    expect(offersResume(help)).toBe(ok);
  });
});

describe("probeCli", () => {
  it("reads version and resume support from the binary", async () => {
    const cli = fakeCli("new-claude", "2.1.197 (Claude Code)", "  -r, --resume [value]  Resume");
    expect(await probeCli(cli)).toEqual({ path: cli, version: "2.1.197", canResume: true });
  });

  it("a binary without --resume cannot resume", async () => {
    const cli = fakeCli("old-claude", "0.2.0 (Claude Code)", "  -c, --continue");
    expect(await probeCli(cli)).toMatchObject({ version: "0.2.0", canResume: false });
  });

  it("asks the binary once, and again when it changed", async () => {
    const cli = fakeCli("cached-claude", "1.0.0", "--resume");
    let calls = 0;
    const exec: ProbeExec = async (file, args) => {
      calls++;
      const out =
        args[0] === "--version"
          ? (fs.readFileSync(file, "utf8").match(/echo "(.*)"/)?.[1] ?? "")
          : "--resume";
      return { stdout: out, stderr: "", exitCode: 0, failed: false };
    };
    const first = await probeCli(cli, { exec });
    const second = await probeCli(cli, { exec });
    expect(second).toBe(first);
    expect(calls).toBe(2); // --version and --help, once
    fakeCli("cached-claude", "1.0.1-changed", "--resume");
    const later = new Date(Date.now() + 5000);
    fs.utimesSync(cli, later, later);
    expect((await probeCli(cli, { exec })).version).toBe("1.0.1-changed");
    expect(calls).toBe(4);
  });

  it("a missing binary reports why, and is not cached", async () => {
    const missing = path.join(dir, "no-such-claude");
    const caps = await probeCli(missing);
    expect(caps).toMatchObject({ path: missing, version: null, canResume: false });
    expect(caps.error).toMatch(/could not run .*no-such-claude --version/);
  });

  it("finds a bare name on PATH", async () => {
    fakeCli("claude", "3.0.0", "--resume");
    const caps = await probeCli("claude", { env: { PATH: dir } });
    expect(caps).toMatchObject({
      path: path.join(dir, "claude"),
      version: "3.0.0",
      canResume: true,
    });
  });
});
