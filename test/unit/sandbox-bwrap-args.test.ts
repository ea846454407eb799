/**
 * bubblewrap's command line, mount by mount: what a sandbox sees, read-only or not, and what it
 * never gets (the host's network, its /proc, /home, /var, the environment on the command line).
 */
import { describe, expect, it } from "vitest";
import {
  bwrapArgs,
  IN_SANDBOX,
  passwdFiles,
  type BwrapSpec,
} from "../../src/sandbox/bwrap-args.js";

const spec: BwrapSpec = {
  root: [
    { name: "bin", kind: "symlink", target: "usr/bin" },
    { name: "lib", kind: "symlink", target: "usr/lib" },
    { name: "lib64", kind: "dir" },
    // Not a system entry: never bound, whatever hostRoot() reported.
    { name: "home", kind: "dir" },
  ],
  etc: ["/etc/resolv.conf", "/etc/ssl"],
  passwd: "/run/x/passwd",
  group: "/run/x/group",
  binds: [
    { host: "/srv/ws/octo/widgets/issue-1/tether", sandbox: "/workspace", writable: true },
    { host: "/data/homes/h1", sandbox: "/home/agent", writable: true },
    { host: "/srv/ws/.mirrors/octo/widgets.git", sandbox: "/run/tether/origin.git" },
    { host: "/opt/tools", sandbox: "/opt/tools", optional: true },
    { host: "/tmp/shared", sandbox: "/tmp/shared", writable: true, optional: true },
    { host: "/srv/ws/.masks/ab/0/.claude", sandbox: "/workspace/.claude" },
  ],
  tmpfs: ["/workspace/.husky"],
  cwd: "/workspace",
  command: ["/usr/bin/claude", "-p", "--setting-sources", ""],
  seccompFd: 3,
};

/** The argument list as [flag, ...operands] groups, for reading rows. */
function groups(args: string[]): string[][] {
  const arity: Record<string, number> = {
    "--unshare-all": 0,
    "--unshare-user": 0,
    "--disable-userns": 0,
    "--seccomp": 1,
    "--share-net": 0,
    "--die-with-parent": 0,
    "--new-session": 0,
    "--uid": 1,
    "--gid": 1,
    "--hostname": 1,
    "--ro-bind": 2,
    "--ro-bind-try": 2,
    "--bind": 2,
    "--bind-try": 2,
    "--symlink": 2,
    "--proc": 1,
    "--dev": 1,
    "--tmpfs": 1,
    "--dir": 1,
    "--chdir": 1,
  };
  const out: string[][] = [];
  let i = 0;
  while (i < args.length) {
    const flag = args[i]!;
    if (flag === "--") {
      out.push(args.slice(i));
      break;
    }
    const n = arity[flag];
    if (n === undefined) throw new Error(`unexpected bwrap argument ${flag} at ${i}`);
    out.push(args.slice(i, i + 1 + n));
    i += 1 + n;
  }
  return out;
}

describe("bwrapArgs", () => {
  const args = bwrapArgs(spec);
  const g = groups(args);
  const has = (...group: string[]) => g.some((x) => x.join("\0") === group.join("\0"));
  const index = (...group: string[]) => g.findIndex((x) => x.join("\0") === group.join("\0"));

  it.each([
    ["every namespace of its own, the network's included", ["--unshare-all"]],
    ["a user namespace for certain (--disable-userns needs one)", ["--unshare-user"]],
    ["no user namespace of its own inside", ["--disable-userns"]],
    ["the seccomp program from the descriptor given", ["--seccomp", "3"]],
    ["dies with Tether", ["--die-with-parent"]],
    ["no controlling terminal to push keystrokes into", ["--new-session"]],
    ["runs as the agent's uid", ["--uid", String(IN_SANDBOX.uid)]],
    ["and gid", ["--gid", String(IN_SANDBOX.gid)]],
    ["its own host name", ["--hostname", IN_SANDBOX.hostname]],
    ["/usr read-only", ["--ro-bind", "/usr", "/usr"]],
    ["merged-/usr links as links", ["--symlink", "usr/bin", "/bin"]],
    ["a real /lib64 read-only", ["--ro-bind", "/lib64", "/lib64"]],
    ["the /etc allow-list read-only, if present", ["--ro-bind-try", "/etc/ssl", "/etc/ssl"]],
    ["its own passwd", ["--ro-bind", "/run/x/passwd", "/etc/passwd"]],
    ["its own group", ["--ro-bind", "/run/x/group", "/etc/group"]],
    ["a /proc of its own pid namespace", ["--proc", "/proc"]],
    ["a minimal /dev", ["--dev", "/dev"]],
    ["a private /tmp", ["--tmpfs", "/tmp"]],
    ["the workspace writable", ["--bind", spec.binds[0]!.host, "/workspace"]],
    ["its HOME writable", ["--bind", spec.binds[1]!.host, "/home/agent"]],
    ["the mirror read-only", ["--ro-bind", spec.binds[2]!.host, "/run/tether/origin.git"]],
    ["an optional bind may be missing", ["--ro-bind-try", "/opt/tools", "/opt/tools"]],
    ["an optional writable bind", ["--bind-try", "/tmp/shared", "/tmp/shared"]],
    [
      "a mask read-only over the checkout",
      ["--ro-bind", spec.binds[5]!.host, "/workspace/.claude"],
    ],
    ["a hidden directory as an empty tmpfs", ["--tmpfs", "/workspace/.husky"]],
    ["starts in the workspace", ["--chdir", "/workspace"]],
  ])("%s", (_name, group) => {
    expect(has(...group)).toBe(true);
  });

  it("applies the seccomp filter to the command, with the command's arguments after it", () => {
    expect(index("--seccomp", "3")).toBeGreaterThan(index("--tmpfs", "/workspace/.husky"));
    expect(index("--seccomp", "3")).toBeLessThan(g.findIndex((x) => x[0] === "--"));
    expect(bwrapArgs({ ...spec, seccompFd: 5 })).toContain("5");
  });

  it("never shares the host's network unless asked, and an agent never asks", () => {
    expect(args).not.toContain("--share-net");
    expect(bwrapArgs({ ...spec, shareNet: true })).toContain("--share-net");
  });

  it("binds nothing of the host but /usr, the system links, the /etc list and the binds given", () => {
    const hostSources = g
      .filter((x) => ["--ro-bind", "--ro-bind-try", "--bind", "--bind-try"].includes(x[0]!))
      .map((x) => x[1]!);
    const allowed = new Set([
      "/usr",
      "/lib64",
      ...spec.etc,
      spec.passwd,
      spec.group,
      ...spec.binds.map((b) => b.host),
    ]);
    expect(hostSources.filter((p) => !allowed.has(p))).toEqual([]);
    for (const p of ["/home", "/root", "/var", "/proc", "/sys", "/etc"])
      expect(hostSources).not.toContain(p);
  });

  it("mounts in order: the system, then the workspace, then what sits inside it (masks, tmpfs)", () => {
    const ws = index("--bind", spec.binds[0]!.host, "/workspace");
    expect(index("--ro-bind", "/usr", "/usr")).toBeLessThan(ws);
    expect(ws).toBeLessThan(index("--ro-bind", spec.binds[5]!.host, "/workspace/.claude"));
    expect(ws).toBeLessThan(index("--tmpfs", "/workspace/.husky"));
    // /tmp first, so a bind under /tmp is not buried by the private tmpfs.
    expect(index("--tmpfs", "/tmp")).toBeLessThan(
      index("--bind-try", "/tmp/shared", "/tmp/shared"),
    );
  });

  it("ends with the command after --, an empty argument kept as it is", () => {
    expect(args.slice(args.indexOf("--"))).toEqual(["--", ...spec.command]);
    expect(args.at(-1)).toBe("");
  });

  it("carries no environment on its command line (bwrap passes on the one it is started with)", () => {
    expect(args.some((a) => a === "--setenv" || a === "--clearenv")).toBe(false);
  });
});

describe("passwdFiles", () => {
  it("names the sandbox's user with its HOME, and root and nobody for tools that expect them", () => {
    const { passwd, group } = passwdFiles();
    expect(passwd).toContain(`agent:x:1000:1000:Tether agent:/home/agent:/bin/bash`);
    expect(group).toContain("agent:x:1000:");
    // The host's own users are not there: these three and no one else.
    expect(
      passwd
        .split("\n")
        .filter(Boolean)
        .map((l) => l.split(":")[0]),
    ).toEqual(["root", "agent", "nobody"]);
  });
});
