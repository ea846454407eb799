/**
 * deploy/seccomp/tether-runner.json, the container's seccomp profile (Docker's and the OCI
 * runtimes' JSON format), without a Docker engine: its shape, and that it agrees with the
 * sandbox's own filter (src/sandbox/seccomp-filter.ts). It refuses everything the sandbox
 * refuses, with the same errno, but for the calls bubblewrap itself makes to build a sandbox
 * (namespaces, mounts), which the sandbox's filter then refuses to the agent.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { SECCOMP_RULES, SYSCALLS } from "../../src/sandbox/seccomp-filter.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const FILE = "deploy/seccomp/tether-runner.json";

interface Rule {
  names: string[];
  action: string;
  errnoRet?: number;
  args?: Array<{ index: number; value: number; valueTwo: number; op: string }>;
  comment?: string;
}
const profile = JSON.parse(fs.readFileSync(path.join(ROOT, FILE), "utf8")) as {
  defaultAction: string;
  architectures: string[];
  syscalls: Rule[];
} & Record<string, unknown>;

/** What bwrap calls to build the sandbox; the sandbox's own filter refuses them to the agent. */
const BWRAP_NEEDS = ["unshare", "setns", "clone", "mount", "umount2", "pivot_root", "chroot"];

/** Whether the profile refuses `name` unconditionally, and with which errno. */
const refusal = (name: string) =>
  profile.syscalls.find((r) => r.names.includes(name) && !r.args)?.errnoRet;

describe(FILE, () => {
  it("has the format's fields and no other", () => {
    expect(Object.keys(profile).sort()).toEqual(["architectures", "defaultAction", "syscalls"]);
    expect(profile.defaultAction).toBe("SCMP_ACT_ALLOW");
    for (const r of profile.syscalls) {
      expect(
        Object.keys(r).every((k) => ["names", "action", "errnoRet", "args", "comment"].includes(k)),
      ).toBe(true);
      expect(r.action).toBe("SCMP_ACT_ERRNO");
      expect(r.errnoRet).toBeGreaterThan(0);
      expect(r.names.length).toBeGreaterThan(0);
      for (const a of r.args ?? [])
        expect(a.op).toMatch(/^SCMP_CMP_(NE|LT|LE|EQ|GE|GT|MASKED_EQ)$/);
    }
  });

  it("covers both architectures Tether builds for, with their compat modes", () => {
    expect(profile.architectures).toEqual(
      expect.arrayContaining([
        "SCMP_ARCH_X86_64",
        "SCMP_ARCH_X86",
        "SCMP_ARCH_X32",
        "SCMP_ARCH_AARCH64",
        "SCMP_ARCH_ARM",
      ]),
    );
  });

  it("names only real calls, each once", () => {
    const names = profile.syscalls.filter((r) => !r.args).flatMap((r) => r.names);
    expect(new Set(names).size).toBe(names.length);
    for (const n of names) expect(SYSCALLS[n], n).toBeDefined();
  });

  it("refuses every call the sandbox refuses outright, with the same errno, but bwrap's own", () => {
    for (const r of SECCOMP_RULES) {
      if ("arg" in r) continue;
      if (BWRAP_NEEDS.includes(r.call)) expect(refusal(r.call), r.call).toBeUndefined();
      else expect([r.call, refusal(r.call)]).toEqual([r.call, r.errno]);
    }
  });

  it("refuses the terminal ioctls on their 32-bit request, as the sandbox does", () => {
    for (const r of SECCOMP_RULES) {
      if (!("equals" in r)) continue;
      const rule = profile.syscalls.find(
        (p) => p.names.includes(r.call) && p.args?.[0]?.valueTwo === r.equals,
      );
      expect(rule?.args).toEqual([
        { index: r.arg, value: 0xffffffff, valueTwo: r.equals, op: "SCMP_CMP_MASKED_EQ" },
      ]);
      expect(rule?.errnoRet).toBe(r.errno);
    }
  });

  it("leaves bubblewrap every call it needs to build a sandbox", () => {
    const refused = new Set(profile.syscalls.flatMap((r) => r.names));
    for (const n of [...BWRAP_NEEDS, "sethostname", "capset", "prctl", "seccomp", "setresuid"])
      expect(refused.has(n), n).toBe(false);
  });

  it("is the profile docker compose gives the tether service", () => {
    const compose = parseYaml(fs.readFileSync(path.join(ROOT, "docker-compose.yml"), "utf8")) as {
      services: { tether: { security_opt: string[] } };
    };
    expect(compose.services.tether.security_opt).toContain(`seccomp=${FILE}`);
    expect(fs.readFileSync(path.join(ROOT, "Dockerfile"), "utf8")).toContain(`seccomp=${FILE}`);
  });
});
