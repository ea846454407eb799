/**
 * A stdio MCP server that holds a secret (its `env`), served to the agent's CLI from outside the
 * agent's sandbox (issue #39). The server runs in a bubblewrap sandbox of its own, which holds
 * its environment; the agent's sandbox only has a unix socket bound in, and the CLI's stdio
 * "server" is `socat - UNIX-CONNECT:<socket>`, bridged the way the egress socket is. Each
 * connection starts one server process and ends it when either side closes. Nothing of the
 * server's environment is in the agent's sandbox: not in a file, a process, or the socket's
 * path (docs/security.md "MCP servers").
 */
import net from "node:net";
import type { Logger } from "../log.js";
import { closeSocket, listenOnSocket } from "./unix-socket.js";
import { killGroup } from "../process/kill.js";
import { spawnDuplex } from "../process/run-command.js";

/** How one server process is started: a bwrap command line, its environment and seccomp bytes. */
export interface McpHostCommand {
  file: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  fd3: Uint8Array | undefined;
}

export interface McpHost {
  readonly socketPath: string;
  close(): Promise<void>;
}

/** Most server processes one run's socket starts (the CLI starts one; the agent may try more). */
const MAX_CONNECTIONS = 4;

export async function startMcpHost(opts: {
  name: string;
  socketPath: string;
  command: McpHostCommand;
  log: Logger;
}): Promise<McpHost> {
  const { log } = opts;
  const children = new Set<number>();
  const sockets = new Set<net.Socket>();
  let started = 0;
  // Half-open: a client that has said all it has to say (its stdin ended) still gets the
  // answers; the socket ends when the server process does.
  const server = net.createServer({ allowHalfOpen: true }, (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    if (started >= MAX_CONNECTIONS) {
      log.warn({ server: opts.name }, "MCP server socket: too many connections; refused");
      socket.destroy();
      return;
    }
    started++;
    const c = opts.command;
    const child = spawnDuplex(c.file, c.args, { cwd: c.cwd, env: c.env, fd3: c.fd3 });
    if (child.pid === undefined) {
      log.warn({ server: opts.name }, "MCP server could not start");
      socket.destroy();
      return;
    }
    const pid = child.pid;
    children.add(pid);
    socket.pipe(child.stdin);
    child.stdout.pipe(socket);
    child.stdin.on("error", () => {});
    let stderr = "";
    child.stderr.on("data", (b: Buffer) => {
      if (stderr.length < 4000) stderr += b.toString("utf8");
    });
    socket.on("close", () => killGroup(pid, "SIGTERM"));
    void child.exited.then((exit) => {
      children.delete(pid);
      socket.end();
      log.debug(
        { server: opts.name, exit, stderr: stderr.slice(-1000) },
        "MCP server process ended",
      );
    });
  });
  await listenOnSocket(server, opts.socketPath);
  return {
    socketPath: opts.socketPath,
    close: async () => {
      for (const s of sockets) s.destroy();
      for (const pid of children) killGroup(pid, "SIGKILL");
      await closeSocket(server, opts.socketPath);
    },
  };
}
