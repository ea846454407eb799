/**
 * The one way Tether signals its children: a whole process group (a child started with
 * `detached: true` leads its own, and everything it started stays in it unless it leaves), or
 * one process. One that is gone, or not Tether's to signal, is no error.
 */

/** Signals the process group that `pid` leads. Returns whether the signal was sent. */
export function killGroup(pid: number | undefined, signal: NodeJS.Signals): boolean {
  return pid !== undefined && send(-pid, signal);
}

/** Signals one process. Returns whether the signal was sent. */
export function killProcess(pid: number, signal: NodeJS.Signals): boolean {
  return send(pid, signal);
}

function send(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false; // already gone (ESRCH) or not ours (EPERM)
  }
}
