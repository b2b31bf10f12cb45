import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { effectiveClass } from "../../skill/registry.ts";
import { fakeTool, loadPack, outputOf, scratchDir, systemCommand, withEnv } from "../pack-kit.ts";

const pack = loadPack(import.meta.dirname);
const KEYS = ["kubernetes_action", "kubernetes_get", "pod_execute", "pod_logs"];
const REAL_KUBECTL = systemCommand("kubectl");
const scratch = scratchDir("kube");
afterAll(() => scratch.cleanup());

/**
 * A stand-in kubectl: records its argv and answers like kubectl would, from canned objects and
 * kubectl's real error messages.
 */
const FAKE = String.raw`
def has(*words):
    return all(w in argv for w in words)

def fail(message, code=1):
    sys.stderr.write(message + "\n")
    sys.exit(code)

def ns():
    return argv[argv.index("--namespace") + 1] if "--namespace" in argv else "default"

managed = [{"manager": "kubectl", "operation": "Update"}]
last = {"kubectl.kubernetes.io/last-applied-configuration": "{...}", "team": "shop"}
def pod(name, restarts):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns(), "managedFields": managed, "annotations": dict(last)},
            "status": {"phase": "Running", "containerStatuses": [{"name": "web", "ready": True, "restartCount": restarts}]}}

cmd = argv[0]
if cmd == "get":
    kind = argv[1]
    if kind == "widgets":
        fail('error: the server doesn\'t have a resource type "widgets"')
    if kind == "nodes":
        fail('Error from server (Forbidden): nodes is forbidden: User "system:serviceaccount:ops:edge" cannot list resource "nodes" in API group "" at the cluster scope')
    if kind == "pods" and len(argv) > 2 and argv[2] == "ghost":
        fail('Error from server (NotFound): pods "ghost" not found')
    if kind == "secrets":
        print(json.dumps({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": argv[2], "namespace": ns(), "annotations": dict(last)}, "type": "Opaque", "data": {"password": "aHVudGVyMg==", "user": "YWRtaW4="}}))
        sys.exit(0)
    if ns() == "expired":
        fail("E1130 10:00:00.000000   1234 memcache.go:265] couldn't get current server API group list: the server has asked for the client to provide credentials\nerror: You must be logged in to the server (Unauthorized)")
    print(json.dumps({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": [pod("web-1", 0), pod("web-2", 3), pod("web-3", 1)]}))
elif cmd == "logs":
    if argv[1] == "multi" and "--container" not in argv:
        fail("error: a container name must be specified for pod multi, choose one of: [app sidecar]")
    if "--previous" in argv:
        fail('Error from server (BadRequest): previous terminated container "web" in pod "web-1" not found')
    print("line one\nline two\nline three")
elif cmd == "exec":
    rest = argv[argv.index("--") + 1:]
    if argv[1] == "failing":
        print("partial output")
        fail("grep: /nope: No such file or directory\ncommand terminated with exit code 2", 2)
    print(json.dumps(rest))
elif cmd == "rollout":
    print("deployment.apps/" + argv[2].split("/")[1])
elif cmd == "scale":
    print({"deployment": "deployment.apps", "statefulset": "statefulset.apps", "replicaset": "replicaset.apps"}[argv[1].split("/")[0]] + "/" + argv[1].split("/")[1])
elif cmd == "delete":
    print(argv[1] + "/" + argv[2])
else:
    fail("error: unknown command " + cmd)
`;
const fake = fakeTool(scratch.dir, "kubectl", FAKE);
/** Calls a kube skill with KUBECTL pointing at the stand-in. */
const call = (key: string, params: Record<string, unknown>) => withEnv({ KUBECTL: fake.path }, () => pack.call(key, params));
/** The argv of the stand-in's last run, without the --request-timeout the pack adds. */
const lastArgv = () => (fake.calls().at(-1) ?? []).filter((a) => !a.startsWith("--request-timeout="));
let before = 0;
beforeEach(() => {
  before = fake.calls().length;
});
const ran = () => fake.calls().length - before;

describe("kube pack: loading and gating", () => {
  it("passes readManifest, registers all four skills through the loader and lints clean", () => {
    expect(pack.manifest.problems).toEqual([]);
    expect(pack.report.problems).toEqual([]);
    expect(pack.report.loaded).toEqual(KEYS);
    expect(pack.lintErrors).toEqual([]);
    for (const s of pack.manifest.skills) expect(s.env).toEqual(["KUBECONFIG", "HOME", "KUBECTL"]);
  });

  it("read-only skills are safe; kubernetes_action is classed per action; pod_execute is classified per command", () => {
    const meta = (k: string) => pack.registry.getOrThrow(k).meta;
    expect(meta("kubernetes_get")).toMatchObject({ class: "safe", dynamicRisk: false });
    expect(meta("pod_logs")).toMatchObject({ class: "safe", dynamicRisk: false });
    expect(meta("kubernetes_action")).toMatchObject({ class: "dangerous", dynamicRisk: true, riskClassifier: "param_class:action:restart=mutating,scale=mutating,delete=dangerous" });
    expect(meta("pod_execute")).toMatchObject({ class: "dangerous", dynamicRisk: true, riskClassifier: "shell_command:command" });
    const exec = pack.registry.getOrThrow("pod_execute");
    expect(effectiveClass(exec, { pod: "web-1", command: "cat /etc/resolv.conf" })).toBe("safe");
    expect(effectiveClass(exec, { pod: "web-1", command: "systemctl restart nginx" })).toBe("mutating");
    expect(effectiveClass(exec, { pod: "web-1", command: "rm -rf /data" })).toBe("dangerous");
    const action = pack.registry.getOrThrow("kubernetes_action");
    expect(effectiveClass(action, { action: "restart", kind: "deployment", name: "web" })).toBe("mutating");
    expect(effectiveClass(action, { action: "scale", kind: "deployment", name: "web", replicas: 2 })).toBe("mutating");
    expect(effectiveClass(action, { action: "delete", kind: "pod", name: "web-1" })).toBe("dangerous");
  });
});

describe("kube pack with the real kubectl on this host", () => {
  it.runIf(!REAL_KUBECTL)("kubectl is not installed here: every skill reports tool_missing", async () => {
    for (const [key, params] of [
      ["kubernetes_get", { kind: "pods" }],
      ["pod_logs", { pod: "web-1" }],
      ["pod_execute", { pod: "web-1", command: "ls" }],
      ["kubernetes_action", { action: "delete", kind: "pod", name: "web-1" }],
    ] as const) {
      const env = await pack.call(key, params);
      expect(env.error?.code, key).toBe("tool_missing");
    }
  });

  it.runIf(Boolean(REAL_KUBECTL))("kubectl is installed here but no cluster answers: unavailable (kubeconfig pointing at a closed local port)", async () => {
    const config = join(scratch.dir, "kubeconfig");
    writeFileSync(
      config,
      "apiVersion: v1\nkind: Config\nclusters:\n- name: t\n  cluster: {server: 'https://127.0.0.1:1', insecure-skip-tls-verify: true}\nusers:\n- name: u\n  user: {token: not-a-real-token}\ncontexts:\n- name: c\n  context: {cluster: t, user: u, namespace: shop}\ncurrent-context: c\n",
    );
    await withEnv({ KUBECONFIG: config, HOME: scratch.dir, KUBECTL: undefined }, async () => {
      for (const [key, params] of [
        ["kubernetes_get", { kind: "pods" }],
        ["pod_logs", { pod: "web-1" }],
        ["pod_execute", { pod: "web-1", command: "ls" }],
        ["kubernetes_action", { action: "restart", kind: "deployment", name: "web" }],
      ] as const) {
        const env = await pack.call(key, params);
        expect(env.error?.code, key).toBe("unavailable");
        expect(env.error?.message, key).toMatch(/127\.0\.0\.1:1/);
        expect(env.error?.message, key).not.toMatch(/memcache\.go/); // klog noise is kept out
      }
    });
  });

  it.runIf(Boolean(REAL_KUBECTL))("a kubeconfig user without credentials is unauthenticated (kubectl's username prompt meets /dev/null)", async () => {
    const config = join(scratch.dir, "no-credentials-kubeconfig");
    writeFileSync(
      config,
      "apiVersion: v1\nkind: Config\nclusters:\n- name: t\n  cluster: {server: 'https://127.0.0.1:1', insecure-skip-tls-verify: true}\nusers:\n- name: u\n  user: {}\ncontexts:\n- name: c\n  context: {cluster: t, user: u}\ncurrent-context: c\n",
    );
    const env = await withEnv({ KUBECONFIG: config, HOME: scratch.dir, KUBECTL: undefined }, () => pack.call("kubernetes_get", { kind: "pods" }));
    expect(env.error?.code).toBe("unauthenticated");
    expect(env.error?.hint).toMatch(/no credentials/);
  });

  it.runIf(Boolean(REAL_KUBECTL))("a kubeconfig kubectl cannot parse is kubeconfig_invalid", async () => {
    const config = join(scratch.dir, "broken-kubeconfig");
    writeFileSync(config, "this: [is not yaml\n");
    const env = await withEnv({ KUBECONFIG: config, HOME: scratch.dir, KUBECTL: undefined }, () => pack.call("kubernetes_get", { kind: "pods" }));
    expect(env.error?.code).toBe("kubeconfig_invalid");
  });

  it("reports tool_missing when KUBECTL names a kubectl that does not exist", async () => {
    const env = await withEnv({ KUBECTL: join(scratch.dir, "no-such-kubectl") }, () => pack.call("kubernetes_get", { kind: "pods" }));
    expect(env.success).toBe(false);
    expect(env.error).toMatchObject({ code: "tool_missing", hint: expect.stringMatching(/kubectl/) });
  });
});

describe("kubernetes_get (stand-in kubectl)", () => {
  it("lists in the context's default namespace without -n, drops managedFields and last-applied annotations, honours limit", async () => {
    const out = outputOf(await call("kubernetes_get", { kind: "pods", limit: 2 }));
    expect(lastArgv()).toEqual(["get", "pods", "--output=json"]);
    expect(fake.calls().at(-1)!.at(-1)).toMatch(/^--request-timeout=\d+s$/);
    expect(out).toMatchObject({ kind: "pods", namespace: null, count: 3, truncated: true });
    expect(out.items.map((p: { metadata: { name: string } }) => p.metadata.name)).toEqual(["web-1", "web-2"]);
    expect(out.items[0].metadata.managedFields).toBeUndefined();
    expect(out.items[0].metadata.annotations).toEqual({ team: "shop" });
  });

  it("passes namespace, all_namespaces and selector as separate argv items", async () => {
    await call("kubernetes_get", { kind: "pods", namespace: "shop", selector: "app=web,tier in (api,worker)" });
    expect(lastArgv()).toEqual(["get", "pods", "--namespace", "shop", "--selector=app=web,tier in (api,worker)", "--output=json"]);
    const out = outputOf(await call("kubernetes_get", { kind: "deployments.apps", all_namespaces: true }));
    expect(lastArgv()).toEqual(["get", "deployments.apps", "--all-namespaces", "--output=json"]);
    expect(out.namespace).toBe("*");
  });

  it("refuses namespace with all_namespaces, and name with a selector, without running kubectl", async () => {
    expect((await call("kubernetes_get", { kind: "pods", namespace: "shop", all_namespaces: true })).error?.code).toBe("invalid_argument");
    expect((await call("kubernetes_get", { kind: "pods", name: "web-1", selector: "app=web" })).error?.code).toBe("invalid_argument");
    expect(ran()).toBe(0);
  });

  it("redacts Secret values but keeps their keys", async () => {
    const out = outputOf(await call("kubernetes_get", { kind: "secrets", name: "db", namespace: "shop" }));
    expect(lastArgv()).toEqual(["get", "secrets", "db", "--namespace", "shop", "--output=json"]);
    expect(out.object.data).toEqual({ password: "[REDACTED]", user: "[REDACTED]" });
    expect(JSON.stringify(out)).not.toMatch(/aHVudGVyMg|YWRtaW4|last-applied/);
  });

  it("maps kubectl's errors to distinct codes: not_found, unknown_kind, permission_denied, unauthenticated", async () => {
    expect((await call("kubernetes_get", { kind: "pods", name: "ghost" })).error).toMatchObject({ code: "not_found", message: 'kubectl: Error from server (NotFound): pods "ghost" not found' });
    expect((await call("kubernetes_get", { kind: "widgets" })).error?.code).toBe("unknown_kind");
    expect((await call("kubernetes_get", { kind: "nodes" })).error).toMatchObject({ code: "permission_denied", hint: expect.stringMatching(/RBAC/) });
    const expired = await call("kubernetes_get", { kind: "pods", namespace: "expired" });
    expect(expired.error?.code).toBe("unauthenticated");
    expect(expired.error?.message).not.toMatch(/memcache/);
  });

  it("refuses a kind or name that kubectl would read as a flag", async () => {
    await expect(call("kubernetes_get", { kind: "--raw=/api" })).rejects.toMatchObject({ code: "invalid_argument" });
    expect((await withEnv({ KUBECTL: fake.path }, () => pack.callUnvalidated("kubernetes_get", { kind: "pods", name: "--all" }))).error?.code).toBe("invalid_argument");
    expect(ran()).toBe(0);
  });
});

describe("pod_logs (stand-in kubectl)", () => {
  it("returns lines with tail, since, container and namespace passed as flags", async () => {
    const out = outputOf(await call("pod_logs", { pod: "web-1", namespace: "shop", container: "web", tail_lines: 50, since: "10m" }));
    expect(lastArgv()).toEqual(["logs", "web-1", "--namespace", "shop", "--container", "web", "--tail=50", "--limit-bytes=4194304", "--since=10m"]);
    expect(out).toEqual({ pod: "web-1", namespace: "shop", container: "web", previous: false, since: "10m", tail_lines: 50, line_count: 3, lines: ["line one", "line two", "line three"] });
  });

  it("defaults to 200 lines in the context's namespace", async () => {
    await call("pod_logs", { pod: "web-1" });
    expect(lastArgv()).toEqual(["logs", "web-1", "--tail=200", "--limit-bytes=4194304"]);
  });

  it("a multi-container pod without container is container_required; previous without a crash is bad_request", async () => {
    expect((await call("pod_logs", { pod: "multi" })).error).toMatchObject({ code: "container_required", message: expect.stringContaining("[app sidecar]") });
    const prev = await call("pod_logs", { pod: "web-1", previous: true });
    expect(lastArgv()).toContain("--previous");
    expect(prev.error?.code).toBe("bad_request");
  });
});

describe("pod_execute (stand-in kubectl)", () => {
  it("splits the command into argv after --, with quotes grouping words and no shell", async () => {
    const out = outputOf(await call("pod_execute", { pod: "web-1", namespace: "shop", container: "web", command: `grep -c 'worker_connections' "/etc/nginx/nginx.conf"` }));
    expect(lastArgv()).toEqual(["exec", "web-1", "--namespace", "shop", "--container", "web", "--", "grep", "-c", "worker_connections", "/etc/nginx/nginx.conf"]);
    expect(out).toMatchObject({ pod: "web-1", namespace: "shop", container: "web", argv: ["grep", "-c", "worker_connections", "/etc/nginx/nginx.conf"], exit_code: 0, stderr: "" });
    expect(JSON.parse(out.stdout)).toEqual(["grep", "-c", "worker_connections", "/etc/nginx/nginx.conf"]);
  });

  it.each([
    ["a pipe", "ps aux | grep nginx", "|"],
    ["a command list", "id; reboot", ";"],
    ["&&", "true && rm -rf /data", "&"],
    ["a redirection", "echo x > /etc/motd", ">"],
    ["command substitution", "echo $(id)", "$"],
    ["backticks", "echo `id`", "`"],
    ["a variable", "cat $HOME/.profile", "$"],
    ["a variable inside double quotes", 'echo "$PATH"', "$"],
    ["a glob", "ls /var/log/*.log", "*"],
    ["a newline", "ls\nreboot", "\\n"],
    ["a background job", "sleep 100 &", "&"],
  ])("refuses %s without running kubectl", async (_what, command, shown) => {
    const env = await call("pod_execute", { pod: "web-1", command });
    expect(env.error?.code).toBe("shell_syntax_refused");
    expect(env.error?.message).toContain(`'${shown}'`);
    expect(env.error?.hint).toMatch(/no shell|sh -c/);
    expect(ran()).toBe(0);
  });

  it("passes metacharacters inside single quotes literally; an explicit sh -c is a wrapper, so dangerous whatever it runs", async () => {
    const out = outputOf(await call("pod_execute", { pod: "web-1", command: "grep -E 'a|b;c' /var/log/app.log" }));
    expect(out.argv).toEqual(["grep", "-E", "a|b;c", "/var/log/app.log"]);
    expect(effectiveClass(pack.registry.getOrThrow("pod_execute"), { pod: "web-1", command: "grep -E 'a|b;c' /var/log/app.log" })).toBe("safe");
    expect(effectiveClass(pack.registry.getOrThrow("pod_execute"), { pod: "web-1", command: "sh -c 'ps aux | grep nginx'" })).toBe("dangerous");
    expect(effectiveClass(pack.registry.getOrThrow("pod_execute"), { pod: "web-1", command: "sh -c 'rm -rf /data'" })).toBe("dangerous");
  });

  it("refuses an unterminated quote and an empty command", async () => {
    expect((await call("pod_execute", { pod: "web-1", command: "echo 'oops" })).error?.code).toBe("invalid_argument");
    expect((await call("pod_execute", { pod: "web-1", command: "   " })).error?.code).toBe("invalid_argument");
    expect(ran()).toBe(0);
  });

  it("a non-zero exit inside the container fails the call (exit_status), with its exit code, stdout and stderr kept", async () => {
    const r = await call("pod_execute", { pod: "failing", command: "grep x /nope" });
    expect(r.success).toBe(false);
    expect(r.error).toMatchObject({ code: "exit_status", message: "the command exited with status 2: grep: /nope: No such file or directory" });
    expect(r.output).toMatchObject({ exit_code: 2, stdout: "partial output\n", stderr: "grep: /nope: No such file or directory\n", stdout_truncated: false });
  });
});

describe("kubernetes_action (stand-in kubectl)", () => {
  it("restart is a rollout restart of the workload", async () => {
    const out = outputOf(await call("kubernetes_action", { action: "restart", kind: "deploy", name: "web", namespace: "shop" }));
    expect(lastArgv()).toEqual(["rollout", "restart", "deployment/web", "--namespace", "shop", "--output=name"]);
    expect(out).toEqual({ action: "restart", kind: "deployment", name: "web", namespace: "shop", resource: "deployment.apps/web" });
  });

  it("scale sets replicas, and requires them", async () => {
    const out = outputOf(await call("kubernetes_action", { action: "scale", kind: "statefulsets", name: "db", namespace: "shop", replicas: 0 }));
    expect(lastArgv()).toEqual(["scale", "statefulset/db", "--replicas=0", "--namespace", "shop", "--output=name"]);
    expect(out).toMatchObject({ action: "scale", kind: "statefulset", resource: "statefulset.apps/db", replicas: 0 });
    before = fake.calls().length;
    const missing = await call("kubernetes_action", { action: "scale", kind: "deployment", name: "web" });
    expect(missing.error).toMatchObject({ code: "invalid_argument", message: expect.stringContaining("replicas") });
    expect(ran()).toBe(0);
  });

  it("delete removes one named object without waiting for finalizers", async () => {
    const out = outputOf(await call("kubernetes_action", { action: "delete", kind: "pod", name: "web-1" }));
    expect(lastArgv()).toEqual(["delete", "pod", "web-1", "--wait=false", "--output=name"]);
    expect(out).toMatchObject({ action: "delete", kind: "pod", name: "web-1", namespace: null, resource: "pod/web-1" });
  });

  it("refuses what does not fit the action, and deleting namespaces, nodes or CRDs, without running kubectl", async () => {
    for (const params of [
      { action: "restart", kind: "pod", name: "web-1" },
      { action: "scale", kind: "daemonset", name: "agent", replicas: 2 },
      { action: "restart", kind: "deployment", name: "web", replicas: 2 },
    ]) {
      expect((await call("kubernetes_action", params)).error?.code, JSON.stringify(params)).toBe("invalid_argument");
    }
    for (const kind of ["namespace", "ns", "nodes", "customresourcedefinitions.apiextensions.k8s.io", "pv"]) {
      expect((await call("kubernetes_action", { action: "delete", kind, name: "prod" })).error?.code, kind).toBe("kind_not_allowed");
    }
    expect(ran()).toBe(0);
  });
});
