/**
 * The bubblewrap command line for one sandboxed process: which host paths it sees, where, and
 * how. Pure, so every mount is a row in a table test (test/unit/sandbox-bwrap-args.test.ts).
 *
 * What a sandbox holds (docs/security.md says why):
 * - its own user, pid, ipc, uts, cgroup and network namespaces; inside, uid/gid 1000 ("agent");
 *   no further user namespace (`--disable-userns`), and a seccomp filter (seccomp-filter.ts)
 *   that refuses new namespaces, mounts, keyrings, eBPF and the like;
 * - the system read-only: /usr (and the /bin, /lib… links or directories beside it) and an
 *   allow-list of /etc; nothing of the host's /home, /root, /var, /opt, /srv, /proc or /sys;
 * - a private /tmp, a fresh /proc (only the sandbox's own processes) and a minimal /dev;
 * - the binds the caller names: the key's workspace (read-write) at /workspace, a HOME of its
 *   own, the repository's mirror read-only, the egress socket, the CLI binary read-only.
 * The network namespace has only loopback: the one way out is the egress socket, and the
 * in-sandbox bridge that turns it into 127.0.0.1:EGRESS_PORT (see init-script.ts).
 */

/** Where things are inside every sandbox. Stable, so a session's paths never depend on the runner. */
export const IN_SANDBOX = {
  /** The key's workspace; the agent CLI's working directory (it files sessions under it). */
  workspace: "/workspace",
  /** HOME: the key's session store and nothing else. */
  home: "/home/agent",
  /** Tether's own mount points. */
  run: "/run/tether",
  /** The unix socket of the run's egress proxy. */
  egressSocket: "/run/tether/egress.sock",
  /** The repository's mirror, read-only: the workspace's `origin`. */
  origin: "/run/tether/origin.git",
  /** Where a sandboxed step leaves files for Tether (a git bundle, a report). */
  outbox: "/run/tether/out",
  /** The turn's images, read-only (the agent cannot change what the model is shown). */
  images: "/run/tether/images",
  uid: 1000,
  gid: 1000,
  user: "agent",
  hostname: "tether-sandbox",
} as const;

/** 127.0.0.1:EGRESS_PORT inside the sandbox reaches the egress proxy. */
export const EGRESS_PORT = 8088;

/** /etc entries a program may need (name lookup, TLS roots, time zones, the linker cache). */
export const ETC_ALLOWLIST = [
  "alternatives",
  "bash.bashrc",
  "ca-certificates",
  "ca-certificates.conf",
  "debian_version",
  "host.conf",
  "hosts",
  "inputrc",
  "ld.so.cache",
  "ld.so.conf",
  "ld.so.conf.d",
  "localtime",
  "mime.types",
  "nsswitch.conf",
  "os-release",
  "pki",
  "profile",
  "protocols",
  "resolv.conf",
  "services",
  "shells",
  "ssl",
  "timezone",
] as const;

/** What the top of the host's file system looks like, for the /bin, /lib… entries. */
export type RootEntry =
  { name: string; kind: "symlink"; target: string } | { name: string; kind: "dir" };

/** Top-level system entries besides /usr: merged-/usr systems have them as links into /usr. */
export const SYSTEM_TOP = ["bin", "sbin", "lib", "lib32", "lib64", "libx32"] as const;

export interface Bind {
  /** Host path. */
  host: string;
  /** Path inside the sandbox. */
  sandbox: string;
  /** Read-write; default read-only. */
  writable?: boolean;
  /** Skip (rather than fail) when the host path is missing. */
  optional?: boolean;
}

export interface BwrapSpec {
  /** The top of the host's file system (see hostRoot() in sandbox.ts). */
  root: RootEntry[];
  /** Host paths of the /etc allow-list entries that exist; `passwd`/`group` are generated. */
  etc: string[];
  /** Generated /etc/passwd and /etc/group naming the sandbox's user. */
  passwd: string;
  group: string;
  /** Everything else the sandbox sees, in order (a later bind may sit inside an earlier one). */
  binds: Bind[];
  /** Paths inside the sandbox that get an empty tmpfs (hide a directory). */
  tmpfs?: string[];
  /** Working directory inside the sandbox. */
  cwd: string;
  /** Keep the host's network (only for a sandbox that must reach something itself; never the agent). */
  shareNet?: boolean;
  /** The command and its arguments, run inside. */
  command: string[];
  /** The file descriptor bwrap reads the seccomp program from (seccomp-filter.ts). */
  seccompFd: number;
}

/**
 * bubblewrap's arguments (without the `bwrap` itself). The environment is not here: bwrap
 * passes its own on, and the caller starts it with exactly the sandbox's allow-listed one, so
 * no value shows in the sandbox's /proc/1/cmdline.
 */
export function bwrapArgs(spec: BwrapSpec): string[] {
  const a: string[] = [
    "--unshare-all",
    // --unshare-all only tries a user namespace; --disable-userns needs one for certain. Inside,
    // no user namespace can be made (max_user_namespaces is 1 and already used): an agent cannot
    // gain the capabilities a namespace of its own would give it (`unshare -Urn`).
    "--unshare-user",
    "--disable-userns",
    ...(spec.shareNet ? ["--share-net"] : []),
    "--die-with-parent",
    // No controlling terminal to push keystrokes into (TIOCSTI).
    "--new-session",
    "--uid",
    String(IN_SANDBOX.uid),
    "--gid",
    String(IN_SANDBOX.gid),
    "--hostname",
    IN_SANDBOX.hostname,
    "--ro-bind",
    "/usr",
    "/usr",
  ];
  for (const e of spec.root) {
    if (!(SYSTEM_TOP as readonly string[]).includes(e.name)) continue;
    if (e.kind === "symlink") a.push("--symlink", e.target, `/${e.name}`);
    else a.push("--ro-bind", `/${e.name}`, `/${e.name}`);
  }
  for (const host of spec.etc) a.push("--ro-bind-try", host, host);
  a.push("--ro-bind", spec.passwd, "/etc/passwd", "--ro-bind", spec.group, "/etc/group");
  a.push("--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp");
  a.push("--dir", IN_SANDBOX.run);
  for (const b of spec.binds) {
    const flag = b.writable ? "--bind" : "--ro-bind";
    a.push(b.optional ? `${flag}-try` : flag, b.host, b.sandbox);
  }
  for (const t of spec.tmpfs ?? []) a.push("--tmpfs", t);
  // Applied last, just before the command runs: bwrap's own setup is not filtered.
  a.push("--seccomp", String(spec.seccompFd));
  a.push("--chdir", spec.cwd, "--", ...spec.command);
  return a;
}

/** /etc/passwd and /etc/group for the sandbox: its one user, and root for tools that expect it. */
export function passwdFiles(): { passwd: string; group: string } {
  const { uid, gid, user, home } = IN_SANDBOX;
  return {
    passwd: `root:x:0:0:root:/root:/usr/sbin/nologin\n${user}:x:${uid}:${gid}:Tether agent:${home}:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    group: `root:x:0:\n${user}:x:${gid}:\nnogroup:x:65534:\n`,
  };
}
