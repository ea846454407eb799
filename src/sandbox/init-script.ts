import { EGRESS_PORT, IN_SANDBOX } from "./bwrap-args.js";

/**
 * The first process of a sandbox that may reach out: it bridges 127.0.0.1:EGRESS_PORT (inside
 * the sandbox's own network namespace, where nothing else listens) to the egress proxy's unix
 * socket, then becomes the command. socat starts in about 12 ms here (it loads OpenSSL); a
 * Node.js bridge would cost 40–150 ms of start-up on every turn.
 *
 * By default the command starts once the bridge listens. The wait reads /proc/net/tcp with
 * shell builtins (no grep, no sleep: a fork each would cost more than the check), for the first
 * 300 rounds without pausing, then every 5 ms, 2 s at most; against a grep-and-sleep loop that
 * took 8 ms off a sandbox's start (median of 30 bwrap runs). A command that boots for far longer
 * than socat (the Claude CLI: about 430 ms to its first output) starts at once instead, beside
 * the bridge, and so does not pay for it at all.
 *
 * The bridge holds nothing secret: the agent may stop it, and then only loses its own way out.
 */
const LISTENING = `:${EGRESS_PORT.toString(16).toUpperCase().padStart(4, "0")} 00000000:0000 0A`;
const START_BRIDGE = `socat -lf /dev/null TCP-LISTEN:${EGRESS_PORT},bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:${IN_SANDBOX.egressSocket} &`;
const WAIT = `
i=0
up=
while [ -z "$up" ] && [ "$i" -lt 700 ]; do
  while IFS= read -r line; do
    case $line in *"${LISTENING}"*) up=1; break ;; esac
  done < /proc/net/tcp
  i=$((i + 1))
  [ -n "$up" ] || [ "$i" -lt 300 ] || sleep 0.005
done`;
const EXEC = `exec "$@"`;

/** `command` wrapped by the bridge; `wait: false` starts it without waiting for the bridge. */
export function bridgeCommand(command: string[], opts: { wait?: boolean } = {}): string[] {
  const script = [START_BRIDGE, ...(opts.wait === false ? [] : [WAIT.trim()]), EXEC].join("\n");
  return ["/bin/sh", "-c", script, "tether-bridge", ...command];
}

/** The environment a process in the sandbox uses to go through the bridge. */
export const BRIDGE_URL = `http://127.0.0.1:${EGRESS_PORT}`;
export function proxyEnv(): Record<string, string> {
  return {
    HTTP_PROXY: BRIDGE_URL,
    HTTPS_PROXY: BRIDGE_URL,
    http_proxy: BRIDGE_URL,
    https_proxy: BRIDGE_URL,
    NO_PROXY: "127.0.0.1,localhost",
    no_proxy: "127.0.0.1,localhost",
  };
}
