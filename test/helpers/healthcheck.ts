/** The Dockerfile's HEALTHCHECK, run as Docker would: its exec-form command, PORT from the image. */
import { execFile } from "node:child_process";
import { promisify } from "node:util";

/** Runs the exec-form `command` with only PATH and PORT; its exit code (-1: not started). */
export async function runHealthcheck(command: string[], port: number): Promise<number> {
  const [file, ...args] = command;
  try {
    await promisify(execFile)(file === "node" ? process.execPath : file!, args, {
      env: { PATH: process.env.PATH, PORT: String(port) },
      timeout: 10_000,
    });
    return 0;
  } catch (err) {
    return (err as { code?: number }).code ?? -1;
  }
}
