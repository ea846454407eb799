/**
 * GitHub's published REST description (`@octokit/openapi`, api.github.com) as a checker for the
 * GitHub stand-ins: every request Tether makes (method, path, path and query parameters, JSON
 * body) and every answer a stand-in gives (status, JSON body) is held against it, so the
 * stand-ins cannot drift from GitHub. `FakeGitHub` and `useNock()` (intake-github.ts) call it on
 * every request; tests fail on what it finds.
 *
 * The description (13 MB) is read once per test file, its examples dropped; a schema is
 * converted (OpenAPI 3.0 `nullable` → JSON Schema) and compiled by Ajv only when an operation
 * that uses it is first seen, and shared by every operation after that.
 *
 * Compiling is most of what the check costs (seconds of CPU for each test file that talks to a
 * stand-in), and every file compiles the same few dozen schemas: so each compiled validator is
 * also kept on disk as Ajv's standalone code (`node_modules/.cache/tether-openapi/`), named by
 * a digest of what it was made from (the description's and Ajv's versions, this file, the
 * validator's key and schema), and loaded from there by the next file. The same Ajv made the
 * code from the same schema, so it checks exactly what a fresh compile would.
 */
import { createHash, randomUUID } from "node:crypto";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Ajv, type ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";
import standaloneCodeModule from "ajv/dist/standalone/index.js";

// ajv-formats and ajv's standalone are CommonJS; under NodeNext a default import is the module.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;
const standaloneCode = standaloneCodeModule as unknown as typeof standaloneCodeModule.default;

type Obj = Record<string, unknown>;

/** What a stand-in saw: a request to GitHub's REST API (path without the GHE /api/v3 prefix). */
export interface ApiRequest {
  method: string;
  /** Path as sent (percent-encoded), without the query, e.g. /repos/o/r/issues/1/comments. */
  path: string;
  query: Record<string, string>;
  /** Parsed JSON body, undefined when there was none. */
  body: unknown;
}

export interface ApiResponse {
  status: number;
  /** Parsed JSON body; a string when the answer was not JSON (only its status is checked). */
  body: unknown;
}

/**
 * Requests the stand-ins answer that GitHub's REST API has no operation for, by name (method
 * and path template). Empty: every route of FakeGitHub is one of GitHub's. A test-control route
 * added over HTTP goes here, and only here.
 */
export const STAND_IN_ONLY_ROUTES: ReadonlySet<string> = new Set<string>([]);

/**
 * Statuses GitHub may give on any operation, documented or not (authentication, permission and
 * rate limits, not found, unparseable JSON, server trouble); their body is a basic error.
 */
export const GENERIC_ERROR_STATUSES: ReadonlySet<number> = new Set([
  400, 401, 403, 404, 429, 500, 502, 503, 504,
]);

const require = createRequire(import.meta.url);
const SPEC_PATH = require.resolve("@octokit/openapi/generated/api.github.com.json");
/**
 * Inside node_modules, so the cached code's own `require("ajv/…")` finds the package
 * (OPENAPI_CACHE_DIR moves it, for the cache's own test).
 */
const CACHE_DIR =
  process.env.OPENAPI_CACHE_DIR ??
  path.join(path.dirname(require.resolve("ajv/package.json")), "..", ".cache", "tether-openapi");
/** What every cached validator was made from, besides its own schema. */
const CACHE_EPOCH = [
  (require("@octokit/openapi/package.json") as { version: string }).version,
  (require("ajv/package.json") as { version: string }).version,
  (require("ajv-formats/package.json") as { version: string }).version,
  createHash("sha256")
    .update(fs.readFileSync(fileURLToPath(import.meta.url)))
    .digest("hex"),
].join(" ");
const REF_BASE = "https://openapi.test/components/schemas/";

interface Operation {
  template: string;
  method: string;
  op: Obj;
}

interface PathEntry {
  template: string;
  segments: Array<{ literal: string } | { param: string }>;
  /** The template ends in `{path}` (a contents path), which may span segments. */
  rest: boolean;
  literals: number;
  ops: Obj;
}

interface Spec {
  doc: Obj;
  paths: PathEntry[];
}

let spec: Spec | undefined;
const ajv = new Ajv({ strict: false, allErrors: true, logger: false, code: { source: true } });
addFormats(ajv);
/** Parameters arrive as text: this one coerces "42" to 42 before checking. */
const ajvParams = new Ajv({
  strict: false,
  allErrors: true,
  logger: false,
  coerceTypes: true,
  code: { source: true },
});
addFormats(ajvParams);
const added = new Set<string>();
const compiled = new Map<string, ValidateFunction>();

function load(): Spec {
  if (spec) return spec;
  const doc = leanDoc();
  const paths: PathEntry[] = [];
  for (const [template, ops] of Object.entries(doc.paths as Obj)) {
    const segments = template
      .split("/")
      .slice(1)
      .map((s) => {
        const m = /^\{(\w+)\}$/.exec(s);
        return m ? { param: m[1] as string } : { literal: s };
      });
    const last = segments.at(-1);
    paths.push({
      template,
      segments,
      rest: last !== undefined && "param" in last && last.param === "path",
      literals: segments.filter((s) => "literal" in s).length,
      ops: ops as Obj,
    });
  }
  // The most literal template wins: /pulls/comments/{id} before /pulls/{pull_number}/{x}.
  paths.sort((a, b) => b.literals - a.literals);
  spec = { doc, paths };
  return spec;
}

let schemas: Obj | undefined;
/** The description's component schemas: read only when a validator is compiled, not cached. */
function componentSchemas(): Obj {
  schemas ??= (fullDoc().components as Obj).schemas as Obj;
  return schemas;
}

function fullDoc(): Obj {
  const doc = JSON.parse(fs.readFileSync(SPEC_PATH, "utf8")) as Obj;
  // The examples are most of its size and no part of any schema.
  delete (doc.components as Obj).examples;
  return doc;
}

/**
 * What finding an operation and its schemas needs (a fifth of the description): the paths
 * without their prose and examples, and the components but the schemas. Made once from the
 * description and kept in the cache beside the validators.
 */
function leanDoc(): Obj {
  const file = path.join(
    CACHE_DIR,
    `lean-${createHash("sha256").update(CACHE_EPOCH).digest("hex").slice(0, 32)}.json`,
  );
  try {
    return JSON.parse(fs.readFileSync(file, "utf8")) as Obj;
  } catch {
    // Not made yet (or half a file from a crash): make it.
  }
  const doc = fullDoc();
  schemas = (doc.components as Obj).schemas as Obj;
  for (const ops of Object.values(doc.paths as Obj)) {
    for (const op of Object.values(ops as Obj)) {
      if (op === null || typeof op !== "object" || Array.isArray(op)) continue;
      const o = op as Obj;
      for (const k of ["description", "summary", "externalDocs", "x-github", "tags"]) delete o[k];
      const bodies = [o.requestBody, ...Object.values((o.responses as Obj | undefined) ?? {})];
      for (const b of bodies) {
        for (const c of Object.values(((b as Obj | undefined)?.content as Obj | undefined) ?? {}))
          for (const k of ["examples", "example"]) delete (c as Obj)[k];
      }
    }
  }
  const lean = { paths: doc.paths, components: { ...(doc.components as Obj), schemas: {} } };
  keep(file, JSON.stringify(lean));
  return lean;
}

function resolve(o: unknown): Obj {
  let x = o as Obj;
  for (let i = 0; i < 10 && typeof x?.$ref === "string"; i++) {
    const parts = (x.$ref as string).replace(/^#\//, "").split("/");
    let at: unknown = load().doc;
    for (const p of parts) at = (at as Obj)[p.replace(/~1/g, "/").replace(/~0/g, "~")];
    x = at as Obj;
  }
  return x;
}

/** OpenAPI 3.0 schema → JSON Schema draft-07 for Ajv; component refs become shared schemas. */
function convert(s: unknown): unknown {
  if (Array.isArray(s)) return s.map(convert);
  if (s === null || typeof s !== "object") return s;
  const src = s as Obj;
  if (typeof src.$ref === "string") {
    const name = /^#\/components\/schemas\/(.+)$/.exec(src.$ref)?.[1];
    if (!name) throw new Error(`openapi: unexpected schema $ref ${src.$ref}`);
    ensureComponent(name);
    return { $ref: REF_BASE + name };
  }
  const out: Obj = {};
  for (const [k, v] of Object.entries(src)) {
    if (k === "example" || k === "examples" || k === "description" || k === "nullable") continue;
    if (k === "properties" || k === "patternProperties") {
      out[k] = Object.fromEntries(Object.entries(v as Obj).map(([p, ps]) => [p, convert(ps)]));
    } else out[k] = convert(v);
  }
  if (src.nullable === true) {
    if (typeof out.type === "string") out.type = [out.type, "null"];
    else if (out.type === undefined) return { anyOf: [out, { type: "null" }] };
    if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
  }
  return out;
}

function ensureComponent(name: string): void {
  if (added.has(name)) return;
  added.add(name);
  const schema = componentSchemas()[name];
  if (schema === undefined) throw new Error(`openapi: no schema ${name}`);
  ajv.addSchema({ ...(convert(schema) as Obj), $id: REF_BASE + name });
}

/**
 * Puts `text` in the cache as `file`: written to a temporary name and renamed, so a file running
 * beside this one reads it whole or not at all. A cache that cannot be written only costs the
 * next test file the work again.
 */
function keep(file: string, text: string): void {
  try {
    fs.mkdirSync(CACHE_DIR, { recursive: true });
    const tmp = `${file}.${process.pid}.${randomUUID()}.tmp`;
    fs.writeFileSync(tmp, text);
    fs.renameSync(tmp, file);
  } catch {
    // Unwritable: nothing kept.
  }
}

function validator(key: string, schema: unknown, params = false): ValidateFunction {
  let v = compiled.get(key);
  if (!v) {
    v = cachedCompile(key, schema, params);
    compiled.set(key, v);
  }
  return v;
}

/**
 * The validator from the disk cache, or compiled and put there. The digest covers the schema as
 * the description gives it (its `$ref`s by name) and CACHE_EPOCH (the description's version, so
 * the components behind those names too).
 */
function cachedCompile(key: string, schema: unknown, params: boolean): ValidateFunction {
  const digest = createHash("sha256")
    .update(`${CACHE_EPOCH}\n${params}\n${key}\n${JSON.stringify(schema)}`)
    .digest("hex")
    .slice(0, 32);
  const file = path.join(CACHE_DIR, `${digest}.cjs`);
  try {
    return require(file) as ValidateFunction;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "MODULE_NOT_FOUND") throw e;
  }
  const a = params ? ajvParams : ajv;
  const v = a.compile(convert(schema) as Obj);
  keep(file, standaloneCode(a, v));
  return v;
}

function errorsOf(v: ValidateFunction, where: string): string[] {
  return (v.errors ?? [])
    .slice(0, 20)
    .map((e) => `${where}${e.instancePath || ""} ${e.message ?? "invalid"}${paramsText(e.params)}`);
}

function paramsText(p: unknown): string {
  const o = p as Obj;
  if (typeof o?.missingProperty === "string") return ` (${o.missingProperty})`;
  if (Array.isArray(o?.allowedValues)) return ` (${o.allowedValues.join(", ")})`;
  return "";
}

/** The operation for a request; undefined when GitHub has none for that method and path. */
export function findOperation(
  method: string,
  rawPath: string,
): { operation: Operation; params: Record<string, string> } | undefined {
  const segs = rawPath.replace(/\/+$/, "").split("/").slice(1);
  const m = method.toLowerCase();
  for (const p of load().paths) {
    const op = p.ops[m];
    if (!op) continue;
    if (p.rest ? segs.length < p.segments.length : segs.length !== p.segments.length) continue;
    const params: Record<string, string> = {};
    let ok = true;
    for (let i = 0; i < p.segments.length && ok; i++) {
      const s = p.segments[i]!;
      const last = i === p.segments.length - 1;
      const value = last && p.rest ? segs.slice(i).join("/") : (segs[i] ?? "");
      if ("literal" in s) ok = s.literal === value;
      else {
        ok = value !== "";
        try {
          params[s.param] = decodeURIComponent(value);
        } catch {
          params[s.param] = value;
        }
      }
    }
    if (ok) return { operation: { template: p.template, method: m, op: op as Obj }, params };
  }
  return undefined;
}

/** What is wrong with a request by GitHub's description; [] when nothing is. */
export function checkRequest(req: ApiRequest): string[] {
  const name = `${req.method.toUpperCase()} ${req.path}`;
  const found = findOperation(req.method, req.path);
  if (!found) return [`${name}: GitHub has no such operation`];
  const { operation, params } = found;
  const id = `${operation.method.toUpperCase()} ${operation.template}`;
  if (STAND_IN_ONLY_ROUTES.has(id)) return [];
  const problems: string[] = [];
  const declared = ((operation.op.parameters as unknown[]) ?? []).map(resolve);
  const inQuery = new Set<string>();
  for (const p of declared) {
    const pname = String(p.name);
    const where = p.in === "path" ? params : p.in === "query" ? req.query : undefined;
    if (p.in === "query") inQuery.add(pname);
    if (!where) continue;
    const value = where[pname];
    if (value === undefined) {
      if (p.required === true) problems.push(`${id}: ${p.in} parameter ${pname} is missing`);
      continue;
    }
    const v = validator(`param ${id} ${pname}`, p.schema ?? {}, true);
    const holder = { value };
    if (!v(holder.value)) problems.push(...errorsOf(v, `${id}: ${p.in} parameter ${pname}`));
  }
  for (const q of Object.keys(req.query)) {
    if (!inQuery.has(q)) problems.push(`${id}: query parameter ${q} is not one of the operation's`);
  }
  const rb = operation.op.requestBody ? resolve(operation.op.requestBody) : undefined;
  const schema = ((rb?.content as Obj | undefined)?.["application/json"] as Obj | undefined)
    ?.schema;
  if (req.body === undefined) {
    if (rb?.required === true) problems.push(`${id}: the request body is missing`);
  } else if (!schema) {
    if (!(isEmptyObject(req.body) || req.body === "")) {
      problems.push(`${id}: the operation takes no JSON body, got ${preview(req.body)}`);
    }
  } else {
    const v = validator(`body ${id}`, schema);
    if (!v(req.body)) problems.push(...errorsOf(v, `${id}: request body`));
  }
  return problems.map((p) => `${name} → ${p}`);
}

/** What is wrong with an answer to `req` by GitHub's description; [] when nothing is. */
export function checkResponse(req: ApiRequest, res: ApiResponse): string[] {
  const name = `${req.method.toUpperCase()} ${req.path} ${res.status}`;
  const found = findOperation(req.method, req.path);
  if (!found) return [`${name}: GitHub has no such operation`];
  const { operation } = found;
  const id = `${operation.method.toUpperCase()} ${operation.template}`;
  if (STAND_IN_ONLY_ROUTES.has(id)) return [];
  const responses = operation.op.responses as Obj;
  const documented = responses[String(res.status)];
  let schema: unknown;
  if (documented) {
    const content = resolve(documented).content as Obj | undefined;
    schema = (content?.["application/json"] as Obj | undefined)?.schema;
  } else if (res.status === 304 && req.method.toUpperCase() === "GET") {
    // A conditional GET (If-None-Match, If-Modified-Since) of what has not changed: GitHub
    // answers 304 without a body on any GET, documented on some operations and not on others.
    return [];
  } else if (GENERIC_ERROR_STATUSES.has(res.status)) {
    schema = { $ref: "#/components/schemas/basic-error" };
  } else {
    return [
      `${name} → ${id}: status ${res.status} is not one GitHub documents (${Object.keys(responses).join(", ")})`,
    ];
  }
  if (schema === undefined || typeof res.body === "string" || res.body === undefined) return [];
  const v = validator(`response ${id} ${documented ? res.status : "error"}`, schema);
  return v(res.body) ? [] : errorsOf(v, `${name} → ${id}: response body`);
}

function isEmptyObject(x: unknown): boolean {
  return x !== null && typeof x === "object" && Object.keys(x).length === 0;
}

function preview(x: unknown): string {
  const s = JSON.stringify(x) ?? String(x);
  return s.length > 120 ? `${s.slice(0, 120)}…` : s;
}

/** Parse a JSON body if it is one; otherwise the text (or undefined when empty). */
export function parseBody(text: string | undefined): unknown {
  if (text === undefined || text === "") return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
