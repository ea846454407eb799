/**
 * Where every agent run (and every git command Tether runs in a workspace) happens: a
 * bubblewrap sandbox that sees its key's workspace, a HOME of its own, the system read-only and
 * nothing of Tether's (no secrets, no database, no other key). See bwrap-args.ts for what is
 * inside, egress.ts for the way out, and docs/security.md "Security model" for what it promises.
 *
 * No sandbox, no agents: when bubblewrap cannot start here (not installed, user namespaces
 * refused by the kernel or the container runtime), the status says why and the runner runs no
 * agent, unless the operator set TETHER_SANDBOX=off, which runs them as Tether's own user.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import fsSync from "node:fs";
import path from "node:path";
import type { Logger } from "../log.js";
import { buildChildEnv, SYSTEM_PATH } from "../process/child-env.js";
import { runCommand } from "../process/run-command.js";
import {
  bwrapArgs,
  ETC_ALLOWLIST,
  IN_SANDBOX,
  passwdFiles,
  SYSTEM_TOP,
  type Bind,
  type RootEntry,
} from "./bwrap-args.js";
import { startEgress, type Egress, type ModelEndpoint, type NetworkPolicy } from "./egress.js";
import { bridgeCommand, proxyEnv } from "./init-script.js";
import { startMcpHost, type McpHost, type McpHostCommand } from "./mcp-host.js";
import type { McpStdioServer } from "../config/mcp-servers.js";
import { emptyTrash, setAsideLeftovers, type SweepRetry } from "./leftovers.js";
import { seccompFor } from "./seccomp-filter.js";

/** bwrap reads its seccomp program on this descriptor: the spawn's fd 3 (PreparedCommand.fd3). */
const SECCOMP_FD = 3;

export type SandboxMode = "bwrap" | "off";

/** How a runner runs agents, in a few words for the dashboard: "bwrap 0.8.0", "off", "unavailable: …". */
export function sandboxLabel(s: SandboxStatus): string {
  if (s.mode === "off") return "off";
  if (!s.ok) return `unavailable: ${s.detail}`.slice(0, 300);
  return s.version ? `bwrap ${s.version}` : "bwrap";
}

export interface SandboxStatus {
  mode: SandboxMode;
  /** Agents may run: the sandbox works, or the operator turned it off on purpose. */
  ok: boolean;
  /** What holds, in plain words: why it cannot start, or that it is off. */
  detail: string;
  /** bubblewrap's version, when it ran. */
  version: string | null;
}

/** A path of the workspace the sandboxed process must not see as the checkout has it. */
export interface Mask {
  /** Relative to the workspace, e.g. `.claude` or `CLAUDE.md`. */
  path: string;
  kind: "file" | "dir";
  /** A host file or directory shown in its place (read-only); null hides it. */
  replacement: string | null;
}

export interface SandboxRun {
  /** Host directory bound read-write at /workspace (the process's working directory). */
  workspace: string;
  /** Host directory bound read-write as HOME; default an empty one of the run's own. */
  home?: string;
  /** The repository's mirror, read-only at /run/tether/origin.git. */
  origin?: string;
  /** Host directory bound read-write at /run/tether/out. */
  outbox?: string;
  /** Host directory of the turn's images, read-only at /run/tether/images. */
  images?: string;
  /** More host paths the process needs, read-only at the same path (the CLI binary). */
  readOnly?: string[];
  /** Workspace paths hidden or replaced (agent-control files of a pull request). */
  masks?: Mask[];
  /** The way out. Omitted: no network at all (git on the workspace needs none). */
  egress?: {
    model: ModelEndpoint;
    network: NetworkPolicy;
    /** Start the command once the bridge listens (default), or at once beside it (init-script.ts). */
    waitForBridge?: boolean;
    /** The turn's spend limit: model calls are refused once the metered spend reaches it. */
    budgetUsd?: number;
    /** Told when a model request is refused because the budget was reached. */
    onOverBudget?: (spentUsd: number) => void;
    /** Remote MCP servers the proxy forwards `/mcp/<name>` to, adding their headers. */
    mcpRemotes?: Record<string, McpRemote>;
  };
  /**
   * Stdio MCP servers that hold secrets: each runs in a sandbox of its own, outside this one,
   * reached over a unix socket bound in at `mcpSocketPath(name)` (mcp-host.ts).
   */
  mcpHosts?: Array<{ name: string; server: McpStdioServer }>;
  /**
   * The process's environment, already allow-listed. With egress, `modelEnv.inside` (the
   * bridge's base URL, placeholder credentials) is added in the sandbox, `modelEnv.outside`
   * (the real ones) when the sandbox is off.
   */
  env: Record<string, string>;
  modelEnv?: { inside: Record<string, string>; outside: Record<string, string> };
  command: string[];
}

/** A remote MCP server as the egress proxy reaches it. */
export interface McpRemote {
  url: URL;
  headers: Record<string, string>;
}

/** Where a stdio MCP server's socket is, inside the agent's sandbox. */
export function mcpSocketPath(name: string): string {
  return `${IN_SANDBOX.run}/mcp-${name}.sock`;
}

/** The egress of an MCP server's own sandbox: no model API, only the hosts of its `network`. */
const NO_MODEL: ModelEndpoint = {
  upstream: new URL("http://127.0.0.1:9"),
  headers: {},
  strip: [],
  routes: [],
  rules: [],
};

/** A command ready to spawn. Call dispose() after it exited (stops the egress, removes files). */
export interface PreparedCommand {
  file: string;
  args: string[];
  env: Record<string, string>;
  /** Host working directory for the spawn (the workspace when the sandbox is off). */
  cwd: string;
  /**
   * Bytes the child must read on file descriptor 3: the seccomp program bwrap applies (pass as
   * runCommand's or spawnStreaming's `fd3`). Undefined when the sandbox is off.
   */
  fd3: Uint8Array | undefined;
  /** Whether the command runs sandboxed. */
  sandboxed: boolean;
  egress: Egress | undefined;
  dispose(): Promise<void>;
}

export interface SandboxOptions {
  mode: SandboxMode;
  /** Tether's own directory for per-run files (never bound into a sandbox). */
  stateDir: string;
  log: Logger;
  bwrapPath?: string;
  /** Checked at start: the in-sandbox bridge needs it. */
  socatPath?: string;
  /** The operator's extra binds (TETHER_SANDBOX_BIND): `/path` read-only, `/path:rw` writable. */
  extraBinds?: string[];
  /**
   * Server-side tool types model calls may offer (TETHER_PROXY_SERVER_TOOLS): prefixes such as
   * `web_search`; none by default (model-call-rules.ts).
   */
  serverTools?: readonly string[];
  /** How the leftovers of an earlier process are removed (tests make it quick, or fail). */
  sweepRetry?: SweepRetry;
  sweepRemove?: (dir: string) => Promise<void>;
}

export class Sandbox {
  /**
   * Settles once the run directories earlier processes left are removed, or given up on until
   * the next start (logged). Never rejects; start-up does not wait for it.
   */
  swept: Promise<void> = Promise.resolve();

  private constructor(
    readonly status: SandboxStatus,
    private readonly opts: Required<Pick<SandboxOptions, "bwrapPath">> & SandboxOptions,
    private readonly root: RootEntry[],
    private readonly etc: string[],
    /** The seccomp program for this machine's architecture (seccomp-filter.ts). */
    private readonly seccomp: Buffer | null = seccompFor(process.arch),
  ) {}

  get sandboxed(): boolean {
    return this.status.mode === "bwrap" && this.status.ok;
  }

  /** Learns the host's layout and tries a sandbox once; never throws (the status says why). */
  static async start(opts: SandboxOptions): Promise<Sandbox> {
    const o = { ...opts, bwrapPath: opts.bwrapPath ?? "bwrap" };
    const root = hostRoot();
    const etc = ETC_ALLOWLIST.map((e) => `/etc/${e}`).filter((p) => fsSync.existsSync(p));
    await fs.mkdir(path.join(o.stateDir, "runs"), { recursive: true, mode: 0o700 });
    // Runs of a process that died: nothing in them is needed any more, but its sandboxes may
    // still be exiting and writing there. Set aside now, removed in the background (leftovers.ts).
    const trash = path.join(o.stateDir, "trash");
    await setAsideLeftovers(path.join(o.stateDir, "runs"), trash, o.log);
    const swept = emptyTrash(trash, o.log, o.sweepRetry, o.sweepRemove);
    const made = (status: SandboxStatus) => {
      const sandbox = new Sandbox(status, o, root, etc);
      sandbox.swept = swept;
      return sandbox;
    };
    if (o.extraBinds?.some((e) => e.endsWith(":rw")))
      o.log.warn(
        { binds: o.extraBinds },
        "TETHER_SANDBOX_BIND shares a writable path between every sandbox: keys are not isolated from each other there",
      );
    if (o.mode === "off") {
      const status: SandboxStatus = {
        mode: "off",
        ok: true,
        detail:
          "off (TETHER_SANDBOX=off): agents run as Tether's own user and can read everything it can",
        version: null,
      };
      o.log.warn(status, "the agent sandbox is OFF");
      return made(status);
    }
    if (!seccompFor(process.arch)) {
      const status: SandboxStatus = {
        mode: "bwrap",
        ok: false,
        detail: `no seccomp filter for this architecture (${process.arch}): Tether has one for x64 and arm64. Set TETHER_SANDBOX=off to run agents unsandboxed.`,
        version: null,
      };
      o.log.error(status, "the agent sandbox cannot start here; no agent will run");
      return made(status);
    }
    const probe = new Sandbox({ mode: "bwrap", ok: true, detail: "", version: null }, o, root, etc);
    const status = await probe.probe(opts.socatPath ?? "socat");
    if (status.ok) o.log.info(status, "agent sandbox ready");
    else o.log.error(status, "the agent sandbox cannot start here; no agent will run");
    return made(status);
  }

  /** Runs `true` in a sandbox shaped like an agent's, and checks the bridge's socat is inside. */
  private async probe(socat: string): Promise<SandboxStatus> {
    const fail = (detail: string): SandboxStatus => ({
      mode: "bwrap",
      ok: false,
      detail,
      version: null,
    });
    const version = await runCommand(this.opts.bwrapPath, ["--version"], {
      cwd: process.cwd(),
      env: buildChildEnv(process.env),
      timeoutMs: 10_000,
      killGraceMs: 5000,
    });
    if (version.failure !== undefined || version.exitCode !== 0) {
      return fail(
        `bubblewrap (${this.opts.bwrapPath}) did not run: ${version.failure ?? version.stderr}. ` +
          "Install it (Debian/Ubuntu: apt-get install bubblewrap socat), or set TETHER_SANDBOX=off to run agents unsandboxed.",
      );
    }
    const dir = await fs.mkdtemp(path.join(this.opts.stateDir, "runs", "probe-"));
    try {
      const prepared = await this.prepare({
        workspace: dir,
        env: { PATH: SYSTEM_PATH },
        command: [
          "/bin/sh",
          "-c",
          `command -v ${shellWord(path.basename(socat))} >/dev/null || exit 3; command -v git >/dev/null || exit 4; exit 0`,
        ],
      });
      const r = await runCommand(prepared.file, prepared.args, {
        cwd: prepared.cwd,
        env: prepared.env,
        fd3: prepared.fd3,
        timeoutMs: 20_000,
        killGraceMs: 5000,
      });
      await prepared.dispose();
      const v = version.stdout.trim();
      if (r.exitCode === 0)
        return {
          mode: "bwrap",
          ok: true,
          detail: `bubblewrap ${v.replace(/^bubblewrap\s*/, "")}`,
          version: v,
        };
      if (r.exitCode === 3)
        return fail(
          "socat is not installed (the sandbox's bridge to its egress proxy needs it): apt-get install socat",
        );
      if (r.exitCode === 4) return fail("git is not installed: apt-get install git");
      return fail(
        `bubblewrap could not make a sandbox: ${(r.stderr || r.failure || "").trim().slice(0, 400)}. ` +
          "It needs unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu 24.04 also an AppArmor profile for bwrap) " +
          "and, in a container, --security-opt seccomp=deploy/seccomp/tether-runner.json --security-opt apparmor=unconfined --security-opt systempaths=unconfined (docs/deploying.md, Docker). " +
          "Or set TETHER_SANDBOX=off to run agents unsandboxed.",
      );
    } finally {
      // What a lingering probe leaves is the next start's leftover; never a reason to fail.
      await fs.rm(dir, { recursive: true, force: true }).catch(() => {});
    }
  }

  /**
   * Prepares one sandboxed command: a private run directory (passwd, group, the egress
   * socket, an empty HOME if none is given), the egress proxy when the run may reach out, and
   * bubblewrap's arguments. With the sandbox off, the command as it is, in the workspace.
   */
  async prepare(run: SandboxRun): Promise<PreparedCommand> {
    if (this.status.mode === "off") {
      const env = { ...run.env, ...(run.modelEnv?.outside ?? {}) };
      if (run.home) env.HOME = run.home;
      return {
        file: run.command[0]!,
        args: run.command.slice(1),
        env,
        cwd: run.workspace,
        fd3: undefined,
        sandboxed: false,
        egress: undefined,
        dispose: async () => {},
      };
    }
    const seccomp = this.seccomp;
    // start() never makes a bwrap Sandbox without one; a sandbox without its filter never runs.
    if (!seccomp) throw new Error(`no seccomp filter for this architecture (${process.arch})`);
    const runDir = path.join(this.opts.stateDir, "runs", randomBytes(8).toString("hex"));
    await fs.mkdir(runDir, { mode: 0o700 });
    let egress: Egress | undefined;
    const mcpHosts: McpHost[] = [];
    const mcpEgress: Egress[] = [];
    let disposed: Promise<void> | undefined;
    const dispose = () =>
      (disposed ??= (async () => {
        await egress?.close().catch(() => {});
        for (const h of mcpHosts) await h.close().catch(() => {});
        for (const e of mcpEgress) await e.close().catch(() => {});
        await fs.rm(runDir, { recursive: true, force: true }).catch(() => {});
      })());
    try {
      const { passwd, group } = passwdFiles();
      await fs.writeFile(path.join(runDir, "passwd"), passwd);
      await fs.writeFile(path.join(runDir, "group"), group);
      let home = run.home;
      if (!home) {
        home = path.join(runDir, "home");
        await fs.mkdir(home);
      }
      const binds: Bind[] = [
        { host: run.workspace, sandbox: IN_SANDBOX.workspace, writable: true },
        { host: home, sandbox: IN_SANDBOX.home, writable: true },
      ];
      if (run.origin) binds.push({ host: run.origin, sandbox: IN_SANDBOX.origin });
      if (run.outbox) binds.push({ host: run.outbox, sandbox: IN_SANDBOX.outbox, writable: true });
      if (run.images) binds.push({ host: run.images, sandbox: IN_SANDBOX.images });
      for (const p of run.readOnly ?? []) binds.push({ host: p, sandbox: p });
      for (const e of this.opts.extraBinds ?? []) {
        const writable = e.endsWith(":rw");
        const p = writable ? e.slice(0, -3) : e;
        binds.push({ host: p, sandbox: p, writable, optional: true });
      }
      const tmpfs: string[] = [];
      for (const [i, m] of (run.masks ?? []).entries()) {
        const at = path.posix.join(IN_SANDBOX.workspace, m.path);
        if (m.replacement) binds.push({ host: m.replacement, sandbox: at });
        else if (m.kind === "dir") tmpfs.push(at);
        else {
          const empty = path.join(runDir, `mask-${i}`);
          await fs.writeFile(empty, "");
          binds.push({ host: empty, sandbox: at });
        }
      }
      let command = run.command;
      const env = {
        ...run.env,
        HOME: IN_SANDBOX.home,
        USER: IN_SANDBOX.user,
        LOGNAME: IN_SANDBOX.user,
        TMPDIR: "/tmp",
      };
      if (run.egress) {
        const socketPath = path.join(runDir, "egress.sock");
        egress = await startEgress({
          socketPath,
          model: run.egress.model,
          network: run.egress.network,
          log: this.opts.log.child({ component: "egress" }),
          ...(run.egress.budgetUsd !== undefined ? { budgetUsd: run.egress.budgetUsd } : {}),
          ...(this.opts.serverTools ? { serverTools: this.opts.serverTools } : {}),
          ...(run.egress.onOverBudget ? { onOverBudget: run.egress.onOverBudget } : {}),
          ...(run.egress.mcpRemotes ? { mcpRemotes: run.egress.mcpRemotes } : {}),
        });
        binds.push({ host: socketPath, sandbox: IN_SANDBOX.egressSocket });
        // Tools that honour the usual proxy variables (curl, git, npm, pip) go through the
        // bridge, and so get the policy's answer (a 403 that says why) rather than no network.
        // An operator's own proxy means nothing inside: the egress proxy is the way out.
        Object.assign(env, proxyEnv(), run.modelEnv?.inside ?? {});
        command = bridgeCommand(run.command, { wait: run.egress.waitForBridge ?? true });
      }
      for (const { name, server } of run.mcpHosts ?? []) {
        const socketPath = path.join(runDir, `mcp-${name}.sock`);
        const made = await this.mcpServerCommand(runDir, name, server, seccomp);
        if (made.egress) mcpEgress.push(made.egress);
        mcpHosts.push(
          await startMcpHost({
            name,
            socketPath,
            command: made.command,
            log: this.opts.log.child({ component: "mcp", server: name }),
          }),
        );
        binds.push({ host: socketPath, sandbox: mcpSocketPath(name) });
      }
      const args = bwrapArgs({
        root: this.root,
        etc: this.etc,
        passwd: path.join(runDir, "passwd"),
        group: path.join(runDir, "group"),
        binds,
        tmpfs,
        cwd: IN_SANDBOX.workspace,
        command,
        seccompFd: SECCOMP_FD,
      });
      return {
        file: this.opts.bwrapPath,
        args,
        env,
        cwd: runDir,
        fd3: seccomp,
        sandboxed: true,
        egress,
        dispose,
      };
    } catch (err) {
      await dispose();
      throw err;
    }
  }

  /**
   * The bwrap command of one stdio MCP server's own sandbox: the system read-only, its command
   * and arguments' paths, a HOME of its own, its `env`, and no network but the hosts of its
   * `network` list (through an egress proxy of its own). It never sees the agent's workspace.
   */
  private async mcpServerCommand(
    runDir: string,
    name: string,
    server: McpStdioServer,
    seccomp: Buffer,
  ): Promise<{ command: McpHostCommand; egress: Egress | undefined }> {
    const home = path.join(runDir, `mcp-${name}-home`);
    await fs.mkdir(home);
    const binds: Bind[] = [{ host: home, sandbox: IN_SANDBOX.home, writable: true }];
    for (const p of mcpServerPaths(server)) binds.push({ host: p, sandbox: p });
    for (const e of this.opts.extraBinds ?? []) {
      const p = e.endsWith(":rw") ? e.slice(0, -3) : e;
      binds.push({ host: p, sandbox: p, optional: true });
    }
    const env: Record<string, string> = {
      PATH: SYSTEM_PATH,
      HOME: IN_SANDBOX.home,
      USER: IN_SANDBOX.user,
      LOGNAME: IN_SANDBOX.user,
      TMPDIR: "/tmp",
      ...server.env,
    };
    let command = [server.command, ...server.args];
    let egress: Egress | undefined;
    if (server.network.length) {
      const socketPath = path.join(runDir, `mcp-${name}-egress.sock`);
      egress = await startEgress({
        socketPath,
        model: NO_MODEL,
        network: { kind: "hosts", hosts: server.network },
        log: this.opts.log.child({ component: "egress", mcp: name }),
      });
      binds.push({ host: socketPath, sandbox: IN_SANDBOX.egressSocket });
      Object.assign(env, proxyEnv());
      command = bridgeCommand(command);
    }
    const args = bwrapArgs({
      root: this.root,
      etc: this.etc,
      passwd: path.join(runDir, "passwd"),
      group: path.join(runDir, "group"),
      binds,
      cwd: IN_SANDBOX.home,
      command,
      seccompFd: SECCOMP_FD,
    });
    return {
      command: { file: this.opts.bwrapPath, args, env, cwd: runDir, fd3: seccomp },
      egress,
    };
  }
}

/**
 * The host paths a stdio MCP server's command needs to be seen at: the program (found on PATH,
 * its real path) and the absolute paths among its arguments that exist (a script, a config).
 */
export function mcpServerPaths(server: Pick<McpStdioServer, "command" | "args">): string[] {
  const out: string[] = [];
  const found = server.command.includes("/")
    ? server.command
    : SYSTEM_PATH.split(":")
        .map((d) => `${d}/${server.command}`)
        .find((p) => fsSync.existsSync(p));
  for (const p of [found, ...server.args]) {
    if (!p?.startsWith("/") || !fsSync.existsSync(p)) continue;
    out.push(p);
    try {
      const real = fsSync.realpathSync(p);
      if (real !== p) out.push(real);
    } catch {
      /* seen as it is */
    }
  }
  return [...new Set(out)].filter((p) => !p.startsWith("/usr/"));
}

/** The host's /bin, /lib…: links into /usr on merged-/usr systems, directories elsewhere. */
export function hostRoot(): RootEntry[] {
  const out: RootEntry[] = [];
  for (const name of SYSTEM_TOP) {
    const p = `/${name}`;
    try {
      const st = fsSync.lstatSync(p);
      if (st.isSymbolicLink()) out.push({ name, kind: "symlink", target: fsSync.readlinkSync(p) });
      else if (st.isDirectory()) out.push({ name, kind: "dir" });
    } catch {
      /* not on this system */
    }
  }
  return out;
}

function shellWord(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
