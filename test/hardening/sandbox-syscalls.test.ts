/**
 * Drill (#38, item 4): what a shell in the sandbox tries against the kernel, in the real
 * bubblewrap sandbox, prepared and spawned the way every agent turn is (Sandbox.prepare, then
 * runCommand with the descriptor that carries the seccomp program). The attacks are raw
 * syscalls from perl (`syscall`, with the numbers of perl's own syscall.ph, so they do not come
 * from Tether's table): git depends on perl, so every machine that runs the sandbox has it.
 *
 * What must hold:
 * - no user namespace of its own: `unshare -U true` fails, and so does `unshare -Urn` (the
 *   nf_tables bug class needs one), and the raw unshare and clone(CLONE_NEWUSER) calls;
 * - keyctl, bpf, mount and io_uring are refused, as the filter says (EPERM, ENOSYS);
 * - ptrace cannot attach to a process outside the sandbox;
 * - the command runs under a seccomp filter (/proc/self/status), and ordinary work still runs:
 *   a fork, a thread's clone, git.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import { runCommand } from "../../src/process/run-command.js";
import { Sandbox } from "../../src/sandbox/sandbox.js";

const log = createLogger("silent");

/** Each attempt prints `name=ok`, or `name=<errno>` when the call failed. */
const ATTACKS = String.raw`
require "syscall.ph";
sub try { my ($name, $r) = @_; print "$name=", ($r == -1 ? $!+0 : "ok"), "\n"; }
my ($none, $tmp, $fs) = ("none", "/tmp", "tmpfs");
try("keyctl", syscall(&SYS_keyctl, 0, -3, 0));
try("add_key", syscall(&SYS_add_key, 0, 0, 0, 0, 0));
my $attr = pack("LLLL", 2, 4, 4, 1) . ("\0" x 56);
try("bpf", syscall(&SYS_bpf, 0, $attr, length $attr));
try("mount", syscall(&SYS_mount, $none, $tmp, $fs, 0, 0));
try("io_uring_setup", syscall(&SYS_io_uring_setup, 8, 0));
try("ptrace", syscall(&SYS_ptrace, 16, $ARGV[0] + 0, 0, 0));
try("unshare", syscall(&SYS_unshare, 0x10000000));
# clone(CLONE_NEWUSER | SIGCHLD): were it allowed, the child would return 0 here and leave.
my $pid = syscall(&SYS_clone, 0x10000000 | 17, 0, 0, 0, 0);
if ($pid == 0) { syscall(&SYS_exit, 0); }
print "clone_newuser=", ($pid == -1 ? $!+0 : "ok"), "\n";
waitpid($pid, 0) if $pid > 0;
my $kid = fork();
if ($kid == 0) { exit 7; }
waitpid($kid, 0);
print "fork=", ($? >> 8 == 7 ? "ok" : "failed"), "\n";
`;

describe("system calls in the real sandbox", () => {
  let dir: string;
  let sandbox: Sandbox;
  let outside: ChildProcess;

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "tether-syscalls-"));
    sandbox = await Sandbox.start({ mode: "bwrap", stateDir: path.join(dir, "state"), log });
    // A process of Tether's user outside the sandbox, for ptrace to aim at.
    outside = spawn("sleep", ["300"], { stdio: "ignore" });
  });
  afterAll(async () => {
    outside?.kill("SIGKILL");
    await fs.rm(dir, { recursive: true, force: true });
  });

  /** Runs `command` as an agent's command runs; its exit code and output. */
  const run = async (command: string[]) => {
    const ws = await fs.mkdtemp(path.join(dir, "ws-"));
    const p = await sandbox.prepare({
      workspace: ws,
      env: { PATH: "/usr/local/bin:/usr/bin:/bin", LC_ALL: "C" },
      command,
    });
    try {
      const r = await runCommand(p.file, p.args, {
        cwd: p.cwd,
        env: p.env,
        fd3: p.fd3,
        timeoutMs: 60_000,
      });
      return { exitCode: r.exitCode, out: `${r.stdout}\n${r.stderr}` };
    } finally {
      await p.dispose();
    }
  };

  it("starts (bubblewrap is installed: .ci/run)", () => {
    expect(sandbox.status.ok, sandbox.status.detail).toBe(true);
  });

  it("runs the command under a seccomp filter", async () => {
    const r = await run(["/bin/sh", "-c", "grep '^Seccomp:' /proc/self/status"]);
    expect(r.out).toMatch(/^Seccomp:\s+2$/m); // 2: filter mode
  });

  it.each([
    ["unshare -U true", ["unshare", "-U", "true"]],
    ["unshare -Urn true", ["unshare", "-Urn", "true"]],
    ["unshare -U --fork true", ["unshare", "-U", "--fork", "true"]],
  ])("refuses a user namespace: %s", async (_name, command) => {
    const r = await run(command);
    expect(r.exitCode, r.out).not.toBe(0);
    expect(r.out).toMatch(/unshare failed/);
  });

  it("refuses the kernel's keyrings, eBPF, mount, io_uring and new namespaces; no ptrace outside", async () => {
    const r = await run(["perl", "-e", ATTACKS, String(outside.pid)]);
    const got = Object.fromEntries(
      r.out
        .split("\n")
        .filter((l) => l.includes("="))
        .map((l) => l.split("=") as [string, string]),
    );
    expect(got, r.out).toEqual({
      keyctl: "1", // EPERM
      add_key: "1",
      bpf: "1",
      mount: "1",
      io_uring_setup: "38", // ENOSYS: programs fall back as on an older kernel
      ptrace: "3", // ESRCH: no process outside exists in the sandbox's pid namespace
      unshare: "1",
      clone_newuser: "1",
      fork: "ok",
    });
  });

  it("still runs ordinary work: a shell pipeline, threads, git", async () => {
    const r = await run([
      "/bin/sh",
      "-c",
      "set -e; git init -q /tmp/r && git -C /tmp/r -c user.name=a -c user.email=a@b commit -q --allow-empty -m x && git -C /tmp/r log --oneline | wc -l; " +
        "perl -e 'use threads; threads->create(sub { print qq(thread\\n) })->join'",
    ]);
    expect(r.exitCode, r.out).toBe(0);
    expect(r.out).toMatch(/^1$/m);
    expect(r.out).toMatch(/^thread$/m);
  });
});
