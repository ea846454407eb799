/**
 * deploy/kubernetes without a cluster: every document validates against the Kubernetes (1.27)
 * and KEDA (v2) schemas of kubernetes-models, kustomization.yaml lists every file, and the
 * manifests agree with the code: the roles, the environment (loadEnv accepts what each container
 * gets), the probes (the path /healthz answers on the port the process listens on), the
 * sandbox's security context, and the KEDA query, run on a migrated database.
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseAllDocuments, parse as parseYaml } from "yaml";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Namespace } from "kubernetes-models/v1/Namespace";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { ScaledObject } from "@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject";
import { TriggerAuthentication } from "@kubernetes-models/keda/keda.sh/v1alpha1/TriggerAuthentication";
import type { Pool } from "../../src/db/pool.js";
import { EnvSchema, loadEnv } from "../../src/env.js";
import { createLogger } from "../../src/log.js";
import { healthRoutes } from "../../src/web/health.js";
import { serveHandlers } from "../../src/web/http.js";
import { createTestDatabase } from "../helpers/db.js";
import { seedTask } from "../helpers/seed.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const DIR = path.join(ROOT, "deploy/kubernetes");

type Doc = Record<string, unknown> & {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
};
interface Model {
  validate(): void;
}
const MODELS: Record<string, new (data: never) => Model> = {
  "v1/Namespace": Namespace,
  "v1/ConfigMap": ConfigMap,
  "v1/Secret": Secret,
  "v1/Service": Service,
  "apps/v1/Deployment": Deployment,
  "networking.k8s.io/v1/NetworkPolicy": NetworkPolicy,
  "keda.sh/v1alpha1/ScaledObject": ScaledObject,
  "keda.sh/v1alpha1/TriggerAuthentication": TriggerAuthentication,
};

const files = fs
  .readdirSync(DIR)
  .filter((f) => /\.ya?ml$/.test(f) && f !== "kustomization.yaml")
  .sort();
const docs: Array<{ file: string; doc: Doc }> = files.flatMap((file) =>
  parseAllDocuments(fs.readFileSync(path.join(DIR, file), "utf8")).map((d) => {
    if (d.errors.length) throw new Error(`${file}: ${d.errors[0]!.message}`);
    return { file, doc: d.toJS() as Doc };
  }),
);
const db = await createTestDatabase();
// Manifests as plain data, for the negative tests to break.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Mutable = Record<string, any>;
const clone = <T>(v: T): T => structuredClone(v);

/** Throws with the schema's complaint when `doc` is not valid for its apiVersion and kind. */
function validate(doc: Doc): void {
  const Model = MODELS[`${doc.apiVersion}/${doc.kind}`];
  if (!Model) throw new Error(`no schema for ${doc.apiVersion} ${doc.kind}`);
  new Model(doc as never).validate();
}

function one(kind: string, name: string): Doc {
  const found = docs.filter((d) => d.doc.kind === kind && d.doc.metadata.name === name);
  expect(found, `${kind} ${name}`).toHaveLength(1);
  return found[0]!.doc;
}

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    secretKeyRef?: { name: string; key: string };
    fieldRef?: { fieldPath: string };
  };
}
interface Probe {
  httpGet: { path: string; port: string | number };
}
interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  ports?: Array<{ name: string; containerPort: number }>;
  env?: EnvVar[];
  envFrom?: Array<{ configMapRef?: { name: string } }>;
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  startupProbe?: Probe;
  securityContext?: Record<string, unknown>;
  volumeMounts?: Array<{ name: string; mountPath: string }>;
}
interface PodSpec {
  hostUsers?: boolean;
  automountServiceAccountToken?: boolean;
  terminationGracePeriodSeconds?: number;
  securityContext?: Record<string, unknown>;
  initContainers?: Container[];
  containers: Container[];
  volumes?: Array<{
    name: string;
    secret?: {
      secretName: string;
      items: Array<{ key: string; path: string }>;
      defaultMode?: number;
    };
  }>;
}
const podOf = (name: string) =>
  (one("Deployment", name).spec as { template: { spec: PodSpec } }).template.spec;
const secretData = () => (one("Secret", "tether").stringData ?? {}) as Record<string, string>;
const configData = () => (one("ConfigMap", "tether-config").data ?? {}) as Record<string, string>;

/** The environment a container gets, Secret values and a sample pod name filled in. */
function containerEnv(c: Container, podName: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const from of c.envFrom ?? []) {
    expect(from.configMapRef?.name).toBe("tether-config");
    Object.assign(env, configData());
  }
  for (const v of c.env ?? []) {
    if (v.value !== undefined) env[v.name] = v.value;
    else if (v.valueFrom?.secretKeyRef) {
      expect(v.valueFrom.secretKeyRef.name).toBe("tether");
      const value = secretData()[v.valueFrom.secretKeyRef.key];
      expect(value, `secret key ${v.valueFrom.secretKeyRef.key}`).toBeDefined();
      env[v.name] = value!;
    } else if (v.valueFrom?.fieldRef?.fieldPath === "metadata.name") env[v.name] = podName;
    else throw new Error(`${c.name}: ${v.name} comes from somewhere this test does not know`);
  }
  return env;
}

describe("deploy/kubernetes against the schemas", () => {
  it("kustomization.yaml lists exactly the manifests in the directory", () => {
    const k = parseYaml(fs.readFileSync(path.join(DIR, "kustomization.yaml"), "utf8")) as {
      resources: string[];
    };
    expect([...k.resources].sort()).toEqual(files);
  });

  it.each(docs.map((d) => [`${d.file}: ${d.doc.kind} ${d.doc.metadata.name}`, d.doc] as const))(
    "%s validates",
    (_, doc) => {
      expect(() => validate(doc)).not.toThrow();
    },
  );

  it("has the web and runner Deployments, the Service, the Secret and KEDA's objects", () => {
    const kinds = docs.map((d) => `${d.doc.kind}/${d.doc.metadata.name}`).sort();
    expect(kinds).toEqual(
      expect.arrayContaining([
        "Deployment/tether-web",
        "Deployment/tether-runner",
        "Service/tether-web",
        "Secret/tether",
        "ScaledObject/tether-runner",
        "TriggerAuthentication/tether-postgres",
      ]),
    );
  });

  // The schemas type-check fields and know which are required; these prove validate() says so.
  it.each<[string, (d: Mutable) => void, RegExp]>([
    [
      "a port given as text",
      (d) => (d.spec.template.spec.containers[0].ports[0].containerPort = "3000"),
      /containerPort must be integer/,
    ],
    [
      "a procMount the API does not have",
      (d) => (d.spec.template.spec.containers[0].securityContext.procMount = "Open"),
      /procMount must be equal to one of the allowed values/,
    ],
    [
      "a Deployment without its selector",
      (d) => delete d.spec.selector,
      /must have required property selector/,
    ],
    [
      "containers misspelt",
      (d) => {
        d.spec.template.spec.container = d.spec.template.spec.containers;
        delete d.spec.template.spec.containers;
      },
      /must have required property containers/,
    ],
  ])("rejects the runner Deployment with %s", (_, mutate, error) => {
    const doc = clone(one("Deployment", "tether-runner"));
    mutate(doc);
    expect(() => validate(doc)).toThrow(error);
  });

  it.each<[string, (d: Mutable) => void, RegExp]>([
    [
      "without scaleTargetRef",
      (d) => delete d.spec.scaleTargetRef,
      /must have required property scaleTargetRef/,
    ],
    [
      "a trigger without a type",
      (d) => delete d.spec.triggers[0].type,
      /must have required property type/,
    ],
    ["a replica count as text", (d) => (d.spec.maxReplicaCount = "8"), /must be integer/],
  ])("rejects the ScaledObject %s", (_, mutate, error) => {
    const doc = clone(one("ScaledObject", "tether-runner"));
    mutate(doc);
    expect(() => validate(doc)).toThrow(error);
  });
});

describe("deploy/kubernetes against the code", () => {
  const closers: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const close of closers) await close();
  });
  const containers = () => [
    ...podOf("tether-web").containers,
    ...(podOf("tether-web").initContainers ?? []),
    ...podOf("tether-runner").containers,
  ];

  it("runs the image's entrypoint with a role main.ts knows, one role per Deployment", () => {
    const role = (c: Container) => {
      expect(c.command, `${c.name} keeps the image's ENTRYPOINT`).toBeUndefined();
      expect(c.args).toHaveLength(1);
      expect(EnvSchema.shape.TETHER_ROLE.safeParse(c.args![0]).success).toBe(true);
      return c.args![0];
    };
    expect(podOf("tether-web").containers.map(role)).toEqual(["web"]);
    expect((podOf("tether-web").initContainers ?? []).map(role)).toEqual(["migrate"]);
    expect(podOf("tether-runner").containers.map(role)).toEqual(["runner"]);
  });

  it("sets only variables Tether reads, and each container's environment loads", () => {
    const known = new Set([...Object.keys(EnvSchema.shape), "ANTHROPIC_API_KEY"]);
    for (const c of containers()) {
      const env = containerEnv(c, "tether-runner-7d9f8b6c4-x2k9p");
      expect(
        Object.keys(env).filter((k) => !known.has(k)),
        c.name,
      ).toEqual([]);
      expect(() => loadEnv(env, "/app"), c.name).not.toThrow();
    }
    // The web and runner processes are the app (APP_ID set), so the key file and secret are needed.
    for (const c of [podOf("tether-web").containers[0]!, podOf("tether-runner").containers[0]!]) {
      const env = loadEnv(containerEnv(c, "tether-runner-7d9f8b6c4-x2k9p"), "/app");
      expect(env.APP_ID).toBeDefined();
      expect(env.PRIVATE_KEY_PATH).toBeDefined();
      expect(env.HOST).toBe("0.0.0.0");
      expect(env.DATABASE_URL).toBeDefined();
    }
  });

  it("mounts the app's key where PRIVATE_KEY_PATH says", () => {
    for (const name of ["tether-web", "tether-runner"]) {
      const pod = podOf(name);
      const c = pod.containers[0]!;
      const keyPath = c.env!.find((v) => v.name === "PRIVATE_KEY_PATH")!.value!;
      const volume = pod.volumes!.find((v) => v.secret?.secretName === "tether")!;
      const mount = c.volumeMounts!.find((m) => m.name === volume.name)!;
      const item = volume.secret!.items.find((i) => path.join(mount.mountPath, i.path) === keyPath);
      expect(item, name).toBeDefined();
      expect(secretData()[item!.key]).toContain("PRIVATE KEY");
      // The volume's files are root's, group fsGroup: the process (runAsUser, in fsGroup) reads
      // the key through the group bits, or not at all.
      const mode = volume.secret!.defaultMode!;
      const ctx = pod.securityContext as { runAsUser: number; fsGroup?: number };
      expect(ctx.runAsUser, name).not.toBe(0);
      const readable = (mode & 0o004) !== 0 || (ctx.fsGroup !== undefined && (mode & 0o040) !== 0);
      expect(
        readable,
        `${name}: key mode ${mode.toString(8)} unreadable by uid ${ctx.runAsUser}`,
      ).toBe(true);
      expect(mode & 0o007, `${name}: key readable by others`).toBe(0);
    }
  });

  it("probes /healthz on the port the process listens on, and /healthz answers there", async () => {
    for (const name of ["tether-web", "tether-runner"]) {
      const c = podOf(name).containers[0]!;
      const port = Number(containerEnv(c, "p").PORT);
      for (const probe of [c.readinessProbe, c.livenessProbe, c.startupProbe]) {
        expect(probe?.httpGet.path).toBe("/healthz");
        const p = probe!.httpGet.port;
        const resolved =
          typeof p === "number" ? p : c.ports!.find((x) => x.name === p)?.containerPort;
        expect(resolved, `${name} probe port`).toBe(port);
      }
    }
    const pool = { query: async () => ({ rows: [] }) } as unknown as Pool;
    const served = await serveHandlers([
      healthRoutes({ env: loadEnv({}), log: createLogger("silent"), pool }),
    ]);
    closers.push(served.close);
    const res = await fetch(`${served.url}/healthz`);
    expect(res.status).toBe(200);
  });

  it("gives running turns their shutdown deadline before the pod is killed", () => {
    const shutdownMs = Number(configData().TETHER_SHUTDOWN_TIMEOUT_MS);
    for (const name of ["tether-web", "tether-runner"]) {
      expect(podOf(name).terminationGracePeriodSeconds! * 1000).toBeGreaterThan(shutdownMs);
    }
  });

  it("gives the runner what bubblewrap needs, and the web processes none of it", () => {
    const runner = podOf("tether-runner");
    expect(runner.hostUsers).toBe(false);
    expect(runner.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
    expect(runner.containers[0]!.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"] },
      seccompProfile: { type: "Localhost", localhostProfile: "tether-runner.json" },
      appArmorProfile: { type: "Unconfined" },
      procMount: "Unmasked",
    });
    const web = podOf("tether-web");
    expect(web.securityContext).toMatchObject({ seccompProfile: { type: "RuntimeDefault" } });
    for (const c of [...web.containers, ...(web.initContainers ?? [])]) {
      expect(c.securityContext).toEqual({
        allowPrivilegeEscalation: false,
        capabilities: { drop: ["ALL"] },
      });
    }
  });

  it("runs the runner under the shipped seccomp profile, named as the docs tell to install it", () => {
    const profile = (
      podOf("tether-runner").containers[0]!.securityContext!.seccompProfile as {
        localhostProfile: string;
      }
    ).localhostProfile;
    expect(fs.existsSync(path.join(ROOT, "deploy/seccomp", profile))).toBe(true);
    expect(fs.readFileSync(path.join(ROOT, "docs/deploying.md"), "utf8")).toContain(
      `/var/lib/kubelet/seccomp/${profile}`,
    );
  });

  it("mounts no service account token in any pod (Tether never calls the Kubernetes API)", () => {
    for (const name of ["tether-web", "tether-runner"])
      expect(podOf(name).automountServiceAccountToken, name).toBe(false);
  });

  it("puts /metrics behind TETHER_METRICS_TOKEN in every pod that serves it", () => {
    for (const name of ["tether-web", "tether-runner"]) {
      const c = podOf(name).containers[0]!;
      const env = containerEnv(c, "p");
      expect(env.TETHER_METRICS_TOKEN, name).toBeDefined();
      expect(() => loadEnv(env)).not.toThrow(); // 16+ characters
      expect(env.TETHER_METRICS_TOKEN).not.toBe(env.TETHER_DASHBOARD_TOKEN);
    }
  });

  it("lets runners reach DNS, Postgres and public HTTPS/HTTP only, and be reached on their port only", () => {
    const np = one("NetworkPolicy", "tether-runner").spec as Mutable;
    const runnerLabels = (one("Deployment", "tether-runner").spec as Mutable).template.metadata
      .labels as Record<string, string>;
    expect(runnerLabels).toMatchObject(np.podSelector.matchLabels);
    expect([...np.policyTypes].sort()).toEqual(["Egress", "Ingress"]);
    const runnerPort = Number(containerEnv(podOf("tether-runner").containers[0]!, "p").PORT);
    expect(np.ingress).toEqual([{ ports: [{ protocol: "TCP", port: runnerPort }] }]);
    const ports = (np.egress as Mutable[]).map((r) =>
      (r.ports as Mutable[]).map((p) => `${p.protocol}/${p.port}`).sort(),
    );
    expect(ports).toEqual([["TCP/53", "UDP/53"], ["TCP/5432"], ["TCP/443", "TCP/80"]]);
    const web = (np.egress as Mutable[])[2]!.to as Mutable[];
    const v4 = web.find((t) => t.ipBlock.cidr === "0.0.0.0/0")!.ipBlock.except as string[];
    // The cloud metadata endpoint, the cluster's and the node's private ranges.
    for (const cidr of ["169.254.0.0/16", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"])
      expect(v4).toContain(cidr);
    const v6 = web.find((t) => t.ipBlock.cidr === "::/0")!.ipBlock.except as string[];
    for (const cidr of ["fc00::/7", "fe80::/10", "::ffff:0:0/96"]) expect(v6).toContain(cidr);
  });

  it("routes the Service to the web pods' HTTP port", () => {
    const svc = one("Service", "tether-web").spec as {
      selector: Record<string, string>;
      ports: Array<{ targetPort: string }>;
    };
    const web = one("Deployment", "tether-web").spec as {
      template: { metadata: { labels: Record<string, string> } };
    };
    expect(web.template.metadata.labels).toMatchObject(svc.selector);
    const runner = one("Deployment", "tether-runner").spec as typeof web;
    expect(runner.template.metadata.labels).not.toMatchObject(svc.selector);
    expect(podOf("tether-web").containers[0]!.ports!.map((p) => p.name)).toContain(
      svc.ports[0]!.targetPort,
    );
  });
});

describe("the KEDA ScaledObject", () => {
  const so = () =>
    one("ScaledObject", "tether-runner").spec as {
      scaleTargetRef: { name: string };
      triggers: Array<{
        type: string;
        authenticationRef: { name: string };
        metadata: Record<string, string>;
      }>;
    };

  it("scales the runner Deployment through KEDA's PostgreSQL scaler, with the app's database", () => {
    expect(so().scaleTargetRef.name).toBe("tether-runner");
    const [trigger] = so().triggers;
    expect(trigger!.type).toBe("postgresql");
    const auth = one("TriggerAuthentication", trigger!.authenticationRef.name).spec as {
      secretTargetRef: Array<{ parameter: string; name: string; key: string }>;
    };
    expect(auth.secretTargetRef).toEqual([
      { parameter: "connection", name: "tether", key: "DATABASE_URL" },
    ]);
    // The schema leaves a trigger's metadata open: a misspelt key would be ignored by KEDA, so
    // only the PostgreSQL scaler's own parameters are allowed here (KEDA's docs), and these two
    // must be there.
    const scalerKeys = [
      "query",
      "targetQueryValue",
      "activationTargetQueryValue",
      "connectionFromEnv",
      "host",
      "port",
      "userName",
      "passwordFromEnv",
      "dbName",
      "sslmode",
    ];
    expect(Object.keys(trigger!.metadata).filter((k) => !scalerKeys.includes(k))).toEqual([]);
    expect(Object.keys(trigger!.metadata)).toEqual(
      expect.arrayContaining(["query", "targetQueryValue"]),
    );
    // One replica's worth of work is what one runner runs at once.
    expect(trigger!.metadata.targetQueryValue).toBe(configData().TETHER_RUNNER_CONCURRENCY);
  });

  it("is the query docs/deploying.md shows", () => {
    const doc = fs.readFileSync(path.join(ROOT, "docs/deploying.md"), "utf8");
    expect(doc.indexOf("### Kubernetes")).toBeGreaterThan(-1);
    const section = doc.slice(doc.indexOf("### Kubernetes"));
    const shown = /```sql\n([\s\S]*?)```/.exec(section)?.[1];
    const words = (q: string) => q.trim().split(/\s+/).join(" ");
    expect(shown && words(shown)).toBe(words(so().triggers[0]!.metadata.query!));
  });

  it("counts the keys with a queued or running task, on a migrated database", async () => {
    const query = so().triggers[0]!.metadata.query!;
    const count = async () => Number((await db.pool.query(query)).rows[0].count);
    expect(await count()).toBe(0);
    // Issue 1: running, with a follow-up queued behind it: one turn can run now.
    await seedTask(db.pool, { issue_number: 1, status: "running" });
    await seedTask(db.pool, { issue_number: 1, status: "queued" });
    // Issue 2: queued. Issue 3: the same issue for another agent, queued.
    await seedTask(db.pool, { issue_number: 2, status: "queued" });
    await seedTask(db.pool, { issue_number: 3, status: "queued" });
    await seedTask(db.pool, { issue_number: 3, agent: "reviewer", status: "queued" });
    // Finished work counts for nothing.
    for (const status of ["succeeded", "failed", "cancelled"])
      await seedTask(db.pool, { issue_number: 4, status });
    // Another repository's issue 2 is another key.
    await seedTask(db.pool, { repo: "octo/gadgets", issue_number: 2, status: "running" });
    expect(await count()).toBe(5);
    // The queue drains: the finished key drops out.
    await db.pool.query(
      "UPDATE tasks SET status = 'succeeded' WHERE repo = 'octo/gadgets' AND status = 'running'",
    );
    expect(await count()).toBe(4);
  });
});
