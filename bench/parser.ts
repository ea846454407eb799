/**
 * Parser throughput and memory on a synthetic Claude stream-json stream.
 *
 *   npx tsx bench/parser.ts [MB=100] [runs=5]
 *
 * Measures what the adapter does per byte of CLI output: split lines (bounded), JSON.parse,
 * zod per event type, fold into the run's evidence. The stream mixes the recorded line types
 * in the proportions of a working agent (tool results dominate the bytes), cut into 64 KiB
 * chunks at arbitrary points like a pipe delivers them. Also runs the same bytes through a
 * real pipe from a child process, and a stream of lines over the 32 MiB limit (skipped
 * without being held). Target: >= 100 MiB/s with flat memory.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { newEvidence, observe } from "../src/claude/run-evidence.js";
import { StreamParser } from "../src/claude/stream-parser.js";

const MB = 1024 * 1024;
const totalMb = Number(process.argv[2] ?? process.env.PARSER_BENCH_MB ?? 100);
const runs = Number(process.argv[3] ?? process.env.PARSER_BENCH_RUNS ?? 5);
const CHUNK = 64 * 1024;
const FIXTURES = path.resolve(import.meta.dirname, "../test/helpers/fake-claude-fixtures");

/**
 * About 1 MB of lines, repeated to make the stream. "agent": a working agent's mix, where tool
 * results (files read, command output) carry most bytes. "chatty": text and tool calls only,
 * short lines, the worst case per byte.
 */
function pattern(kind: "agent" | "chatty"): Buffer {
  const read = (f: string) =>
    fs.readFileSync(path.join(FIXTURES, f), "utf8").split("\n").filter(Boolean);
  const [init, text, result] = read("claude-code-2.1.197/fresh-turn.jsonl") as [
    string,
    string,
    string,
  ];
  const [, toolUse, toolResult] = read("recorded-by-adapter/tool-use-turn.jsonl") as [
    string,
    string,
    string,
  ];
  const retry = read("claude-code-2.1.197/auth-failure-retrying-killed-at-60s.jsonl")[1]!;
  const withContent = (size: number) => {
    const line = JSON.parse(toolResult) as {
      message: { content: Array<{ content: string }> };
      tool_use_result: { stdout: string };
    };
    const body = "const x = 1; // source line of a file the agent read\n"
      .repeat(Math.ceil(size / 52))
      .slice(0, size);
    line.message.content[0]!.content = body;
    line.tool_use_result.stdout = body;
    return JSON.stringify(line);
  };
  const lines: string[] = [init];
  let size = init.length;
  for (let turn = 0; size < MB; turn++) {
    const more =
      kind === "agent"
        ? [text, toolUse, withContent(turn % 10 === 0 ? 100_000 : turn % 3 === 0 ? 10_000 : 1_000)]
        : [text, toolUse];
    if (turn % 25 === 0) more.push(retry);
    lines.push(...more);
    size += more.reduce((n, l) => n + l.length + 1, 0);
  }
  lines.push(result);
  return Buffer.from(`${lines.join("\n")}\n`);
}

interface RunFigures {
  mbPerS: number;
  /** MB per second of this process's CPU time: what the parser costs, whatever else runs. */
  mbPerCpuS: number;
  lines: number;
  unreadable: number;
  rss: number[];
  /** Time to handle each chunk, in microseconds. */
  chunkMicros: number[];
}

/** Feeds `bytes` of the repeated pattern through parser + evidence. */
function runInProcess(source: Buffer, bytes: number, maxLineBytes?: number): RunFigures {
  const parser = new StreamParser(maxLineBytes);
  const evidence = newEvidence();
  const rss: number[] = [];
  const quarter = bytes / 4;
  let nextMark = quarter;
  let fed = 0;
  let offset = 0;
  const chunkMicros: number[] = [];
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  // Past `bytes`, read on to the end of the line so the stream ends whole.
  while (fed < bytes || (offset !== 0 && source[offset - 1] !== 0x0a)) {
    const rest = fed < bytes ? bytes - fed : source.indexOf(0x0a, offset) + 1 - offset;
    const take = Math.min(CHUNK, source.length - offset, rest);
    const c0 = process.hrtime.bigint();
    for (const m of parser.push(source.subarray(offset, offset + take))) observe(evidence, m);
    chunkMicros.push(Number(process.hrtime.bigint() - c0) / 1000);
    fed += take;
    offset = (offset + take) % source.length;
    if (fed >= nextMark) {
      rss.push(process.memoryUsage().rss);
      nextMark += quarter;
    }
  }
  for (const m of parser.end()) observe(evidence, m);
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  return {
    mbPerS: fed / MB / seconds,
    mbPerCpuS: fed / MB / ((cpu.user + cpu.system) / 1e6),
    lines: parser.counts.lines,
    unreadable: parser.counts.unreadable,
    rss,
    chunkMicros,
  };
}

/** The same through a real pipe: a child process writes the stream, we read and parse it. */
async function runThroughPipe(source: Buffer, bytes: number): Promise<RunFigures> {
  const file = path.join(
    fs.mkdtempSync(path.join(process.env.TMPDIR ?? "/tmp", "tether-bench-")),
    "pattern.jsonl",
  );
  fs.writeFileSync(file, source);
  const writer = `
    const fs = require("fs");
    const src = fs.readFileSync(${JSON.stringify(file)});
    let left = ${bytes}, off = 0;
    function go() {
      while (left > 0 || (off !== 0 && src[off - 1] !== 10)) {
        if (left <= 0) left = src.indexOf(10, off) + 1 - off;
        const n = Math.min(65536, src.length - off, left);
        const ok = process.stdout.write(src.subarray(off, off + n));
        left -= n; off = (off + n) % src.length;
        if (!ok) return process.stdout.once("drain", go);
      }
      process.stdout.end();
    }
    go();`;
  const child = spawn(process.execPath, ["-e", writer], { stdio: ["ignore", "pipe", "inherit"] });
  const parser = new StreamParser();
  const evidence = newEvidence();
  const rss: number[] = [];
  const t0 = process.hrtime.bigint();
  let fed = 0;
  let nextMark = bytes / 4;
  for await (const chunk of child.stdout) {
    for (const m of parser.push(chunk as Buffer)) observe(evidence, m);
    fed += (chunk as Buffer).length;
    if (fed >= nextMark) {
      rss.push(process.memoryUsage().rss);
      nextMark += bytes / 4;
    }
  }
  for (const m of parser.end()) observe(evidence, m);
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  fs.rmSync(path.dirname(file), { recursive: true, force: true });
  return {
    mbPerS: fed / MB / seconds,
    mbPerCpuS: Number.NaN, // the child's writing shares this process's wall clock, not its CPU
    lines: parser.counts.lines,
    unreadable: parser.counts.unreadable,
    rss,
    chunkMicros: [],
  };
}

const median = (xs: number[]) => percentile(xs, 0.5);
function percentile(xs: number[], p: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}
const mib = (n: number) => `${(n / MB).toFixed(0)} MiB`;

/** Peak RSS while `fn` runs, sampled every 10 ms and at the end. */
async function peakRss<T>(
  fn: () => T | Promise<T>,
): Promise<{ value: T; before: number; peak: number }> {
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
  try {
    const value = await fn();
    return { value, before, peak: Math.max(peak, process.memoryUsage().rss) };
  } finally {
    clearInterval(sampler);
  }
}

async function main(): Promise<void> {
  const bytes = Math.round(totalMb * MB);
  console.log(
    `parser bench: ${totalMb} MB per run, ${runs} runs per mix, ${CHUNK / 1024} KiB chunks, node ${process.version}`,
  );
  const medians: Record<string, number> = {};
  for (const kind of ["agent", "chatty"] as const) {
    const source = pattern(kind);
    const lineCount = source.toString("utf8").split("\n").length - 1;
    const {
      value: figures,
      before,
      peak,
    } = await peakRss(() => Array.from({ length: runs }, () => runInProcess(source, bytes)));
    const speeds = figures.map((r) => r.mbPerS);
    const cpuSpeeds = figures.map((r) => r.mbPerCpuS);
    const chunks = figures.flatMap((r) => r.chunkMicros);
    const last = figures.at(-1)!;
    medians[kind] = median(speeds);
    console.log(
      `${kind.padEnd(7)} mix: ${median(speeds).toFixed(0)} MiB/s median (min ${Math.min(...speeds).toFixed(0)}, max ${Math.max(...speeds).toFixed(0)}); ` +
        `avg line ${Math.round(source.length / lineCount)} B, ${Math.round((last.lines / (bytes / MB)) * median(speeds))} lines/s; ` +
        `${median(cpuSpeeds).toFixed(0)} MiB per CPU-second (robust to other load on the machine); ` +
        `per 64 KiB chunk p50 ${percentile(chunks, 0.5).toFixed(0)} us, p99 ${percentile(chunks, 0.99).toFixed(0)} us; ` +
        `unreadable ${last.unreadable}`,
    );
    console.log(
      `             RSS ${mib(before)} before, peak ${mib(peak)}; at 25/50/75/100% of the last run: ${last.rss.map(mib).join(" / ")}`,
    );
  }

  const agent = pattern("agent");
  const piped: RunFigures[] = [];
  for (let i = 0; i < Math.min(runs, 3); i++) piped.push(await runThroughPipe(agent, bytes));
  console.log(
    `agent mix via a pipe from a child process: ${median(piped.map((r) => r.mbPerS)).toFixed(0)} MiB/s median; ` +
      `RSS at 25/50/75/100%: ${piped.at(-1)!.rss.map(mib).join(" / ")}`,
  );

  // Lines over the 32 MiB limit: each is dropped once it passes the limit, never held whole.
  const huge = Buffer.alloc(41 * MB, 0x78);
  huge[huge.length - 1] = 0x0a;
  const hugeLines = Math.max(4, Math.round((2 * totalMb) / 41));
  const overlong = await peakRss(() => runInProcess(huge, huge.length * hugeLines));
  console.log(
    `overlong lines: ${hugeLines} x 41 MiB at ${overlong.value.mbPerS.toFixed(0)} MiB/s, ${overlong.value.unreadable} counted unreadable; ` +
      `RSS ${mib(overlong.before)} before, peak ${mib(overlong.peak)} (the 41 MiB source buffer included)`,
  );

  const ok = Object.values(medians).every((m) => m >= 100);
  console.log(
    `target: >= 100 MB/s with flat memory: ${ok ? "met" : "NOT met"} ` +
      `(agent ${medians.agent!.toFixed(0)}, chatty ${medians.chatty!.toFixed(0)} MiB/s median wall clock)`,
  );
}

await main();
