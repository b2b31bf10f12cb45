#!/usr/bin/env python3
"""kube pack: the seeds' Kubernetes mode through kubectl. Serves kubernetes_get, pod_logs, pod_execute and kubernetes_action."""

import math
import re
import shlex
import sys

sys.dont_write_bytecode = True  # keep the pack directory clean (the loader watches it)

from ongrid_pack import (  # noqa: E402
    PackError,
    Result,
    failure,
    find_tool,
    main,
    param_bool,
    param_duration,
    param_enum,
    param_int,
    param_str,
    parse_json,
    remaining,
    run,
)

PACKAGE = "kubectl"
OVERRIDE = "KUBECTL"
# Kubernetes names: a namespace or container is a DNS-1123 label, an object a DNS-1123 subdomain.
LABEL_RE = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"
SUBDOMAIN_RE = r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?"
# A resource type as kubectl takes it: "pods", "deploy", "deployments.apps", "ingresses.v1.networking.k8s.io".
KIND_RE = r"[A-Za-z][A-Za-z0-9]{0,62}(\.[A-Za-z0-9][A-Za-z0-9-]{0,62}){0,6}"
# Label selectors: key=value, key!=value, key in (a,b), !key; never starting with "-".
SELECTOR_RE = r"[A-Za-z0-9_./!=(), -]{1,512}"
MAX_CAPTURE = 256 * 1024

RULES = [
    (r"Unable to connect to the server|connection refused|was refused|no such host|i/o timeout|TLS handshake timeout|context deadline exceeded|couldn't get current server API group list|ServiceUnavailable|server is currently unable|network is unreachable", "unavailable", "the Kubernetes API server cannot be reached from this host: check KUBECONFIG (the edge's kubeconfig), the cluster endpoint and the network path"),
    (r"no configuration has been provided|error loading config file|invalid configuration|context was not found|does not exist in kubeconfig|cannot unmarshal", "kubeconfig_invalid", "give the edge a working kubeconfig: set KUBECONFIG (or HOME/.kube/config) for the edge user"),
    (r"\(Unauthorized\)|must be logged in|provide credentials", "unauthenticated", "the kubeconfig's credentials were refused or have expired; refresh them on the edge"),
    # A kubeconfig user without credentials makes kubectl prompt for a username; stdin is /dev/null.
    (r"(?m)^error: EOF$|Please enter Username|error reading input for", "unauthenticated", "the kubeconfig's user has no credentials (kubectl tried to prompt for a username and password): configure a token, client certificate or exec plugin in the edge's kubeconfig"),
    (r"\(Forbidden\)|is forbidden", "permission_denied", "the kubeconfig's user lacks RBAC permission for this verb and resource; grant it or use another context"),
    (r"doesn't have a resource type|the server could not find the requested resource", "unknown_kind", "check the resource type: `pods`, `deployments`, `events`, `deployments.apps`; CRDs need their plural name"),
    (r"a container name must be specified|container .* is not valid for pod", "container_required", "give container: the pod has several containers (kubernetes_get kind=pods name=POD lists them)"),
    (r"\(BadRequest\)|previous terminated container", "bad_request", "the request does not fit the object's state, e.g. previous=true for a container that never restarted"),
    (r"\(NotFound\)|not found", "not_found", "check the name and namespace with kubernetes_get (e.g. kind=pods)"),
    (r"\(Conflict\)|the object has been modified", "conflict", "the object changed meanwhile; read it again and retry"),
]
PERMISSION_HINT = "the kubeconfig or kubectl is not readable by the edge user; check file permissions"


KLOG_RE = re.compile(r"^[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d+\s")


def kubectl_failure(r):
    """The PackError for a failed kubectl run; klog noise (repeated E1130 … lines) is kept out of the message when a plain line says it."""
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    plain = [ln for ln in lines if not KLOG_RE.match(ln)]
    if plain and len(plain) < len(lines):
        r = Result(r.argv, r.returncode, r.stdout, "\n".join(plain))
    return failure(r, RULES, tool="kubectl", permission_hint=PERMISSION_HINT)


def kubectl(args, *, timeout=None):
    """Runs kubectl; returns its result or raises the PackError its stderr means."""
    tool = find_tool("kubectl", PACKAGE, OVERRIDE)
    r = run([tool, *args], package=PACKAGE, timeout=timeout)
    if r.returncode != 0:
        raise kubectl_failure(r)
    return r


def request_timeout():
    return f"--request-timeout={max(1, math.floor(remaining()) - 1)}s"


def scope(params, *, allow_all=False):
    """The namespace args (`-n NS`, `-A` or nothing for the kubeconfig's default) and the namespace reported."""
    ns = param_str(params, "namespace", pattern=LABEL_RE, max_len=63)
    every = param_bool(params, "all_namespaces", False) if allow_all else False
    if ns and every:
        raise PackError("invalid_argument", "give namespace or all_namespaces, not both", "drop one of them")
    if every:
        return ["--all-namespaces"], "*"
    if ns:
        return ["--namespace", ns], ns
    return [], None


def scrub(obj):
    """Drops managedFields and last-applied annotations (bulk) and the values of Secret data (credentials)."""
    if isinstance(obj, dict):
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            meta.pop("managedFields", None)
            ann = meta.get("annotations")
            if isinstance(ann, dict):
                ann.pop("kubectl.kubernetes.io/last-applied-configuration", None)
        if obj.get("kind") == "Secret":
            for field in ("data", "stringData"):
                if isinstance(obj.get(field), dict):
                    obj[field] = {k: "[REDACTED]" for k in obj[field]}
        for item in obj.get("items", []) if isinstance(obj.get("items"), list) else []:
            scrub(item)
    return obj


def kubernetes_get(params):
    kind = param_str(params, "kind", pattern=KIND_RE, required=True, max_len=253)
    name = param_str(params, "name", pattern=SUBDOMAIN_RE, max_len=253)
    selector = param_str(params, "selector", pattern=SELECTOR_RE, max_len=512)
    limit = param_int(params, "limit", default=50, minimum=1, maximum=1000)
    ns_args, ns = scope(params, allow_all=True)
    if name and selector:
        raise PackError("invalid_argument", "give name or selector, not both", "drop one of them")
    if name and ns == "*":
        raise PackError("invalid_argument", "a name needs one namespace, not all_namespaces", "give namespace instead")
    args = ["get", kind, *([name] if name else []), *ns_args, *([f"--selector={selector}"] if selector else []), "--output=json", request_timeout()]
    doc = parse_json(kubectl(args).stdout, "kubectl")
    if not isinstance(doc, dict):
        raise PackError("bad_tool_output", "kubectl get -o json did not print an object", "check the kubectl version")
    scrub(doc)
    out = {"kind": kind, "namespace": ns}
    if name:
        out["name"] = name
        out["object"] = doc
        return out
    items = doc.get("items", []) if isinstance(doc.get("items"), list) else []
    out["count"] = len(items)
    out["items"] = items[:limit]
    if len(items) > limit:
        out["truncated"] = True
        out["hint"] = f"only the first {limit} of {len(items)} are listed; narrow with namespace/selector or raise limit"
    return out


def pod_logs(params):
    pod = param_str(params, "pod", pattern=SUBDOMAIN_RE, required=True, max_len=253)
    container = param_str(params, "container", pattern=LABEL_RE, max_len=63)
    tail_lines = param_int(params, "tail_lines", default=200, minimum=1, maximum=10000)
    since = param_duration(params, "since")
    previous = param_bool(params, "previous", False)
    ns_args, ns = scope(params)
    args = ["logs", pod, *ns_args, *(["--container", container] if container else []), f"--tail={tail_lines}", f"--limit-bytes={4 * 1024 * 1024}"]
    if since:
        args.append(f"--since={since}")
    if previous:
        args.append("--previous")
    args.append(request_timeout())
    text = kubectl(args).stdout
    lines = text.splitlines()
    return {"pod": pod, "namespace": ns, "container": container, "previous": previous, "since": since, "tail_lines": tail_lines, "line_count": len(lines), "lines": lines}


# Characters a shell would treat specially when unquoted; pod_execute runs no shell, so they are refused.
UNQUOTED_META = set(";&|<>()$`*?[]{}~#!\n\r")
# Inside double quotes a shell still expands $ and backticks.
DQUOTED_META = set("$`")


def split_command(command):
    """argv for the command line, shlex-split; refuses anything a shell would have interpreted."""
    if "\x00" in command:
        raise PackError("invalid_argument", "param 'command' must not contain NUL", "send plain text")
    quote = None
    escaped = False
    for i, ch in enumerate(command):
        if escaped:
            escaped = False
            continue
        if quote == "'":
            if ch == "'":
                quote = None
            continue
        if ch == "\\":
            escaped = True
            continue
        if quote == '"':
            if ch == '"':
                quote = None
            elif ch in DQUOTED_META:
                raise meta_error(ch, i)
            continue
        if ch in ("'", '"'):
            quote = ch
        elif ch in UNQUOTED_META:
            raise meta_error(ch, i)
    try:
        argv = shlex.split(command, posix=True)
    except ValueError as e:
        raise PackError("invalid_argument", f"param 'command' cannot be split into arguments: {e}", "close every quote")
    if not argv:
        raise PackError("invalid_argument", "param 'command' is empty", "give a command such as `cat /etc/resolv.conf`")
    return argv


def meta_error(ch, i):
    shown = {"\n": "\\n", "\r": "\\r"}.get(ch, ch)
    return PackError(
        "shell_syntax_refused",
        f"param 'command' contains the shell metacharacter '{shown}' at offset {i}; pod_execute runs one program with its arguments and no shell (no pipes, redirections, globs, variables or command lists)",
        "run one program per call, e.g. `cat /etc/nginx/nginx.conf`; quote an argument with single quotes to pass such characters literally, or run a pipeline explicitly as `sh -c '…'` (the whole command is risk-classified)",
    )


def pod_execute(params):
    pod = param_str(params, "pod", pattern=SUBDOMAIN_RE, required=True, max_len=253)
    container = param_str(params, "container", pattern=LABEL_RE, max_len=63)
    command = param_str(params, "command", required=True, max_len=4096)
    argv = split_command(command)
    ns_args, ns = scope(params)
    tool = find_tool("kubectl", PACKAGE, OVERRIDE)
    r = run([tool, "exec", pod, *ns_args, *(["--container", container] if container else []), "--", *argv], package=PACKAGE)
    stderr = r.stderr
    m = re.search(r"command terminated with exit code (\d+)\s*$", stderr)
    if r.returncode != 0 and not m:
        raise kubectl_failure(r)
    exit_code = int(m.group(1)) if m else r.returncode
    if m:
        stderr = stderr[: m.start()]
    out = {"pod": pod, "namespace": ns, "container": container, "argv": argv, "exit_code": exit_code}
    for name, text in (("stdout", r.stdout), ("stderr", stderr)):
        data = text.encode("utf-8")
        out[name] = data[-MAX_CAPTURE:].decode("utf-8", "ignore") if len(data) > MAX_CAPTURE else text
        out[f"{name}_truncated"] = len(data) > MAX_CAPTURE
    # The exit status is the result: a command that failed inside the container fails the call,
    # with what it printed kept in the output.
    if exit_code != 0:
        last = out["stderr"].strip()[-200:]
        raise PackError("exit_status", f"the command exited with status {exit_code}" + (f": {last}" if last else ""), "read stderr and stdout in the output; the command ran in the container and its exit status says it did not succeed", output=out)
    return out


RESTARTABLE = {"deployment": "deployment", "deployments": "deployment", "deploy": "deployment", "statefulset": "statefulset", "statefulsets": "statefulset", "sts": "statefulset", "daemonset": "daemonset", "daemonsets": "daemonset", "ds": "daemonset"}
SCALABLE = {"deployment": "deployment", "deployments": "deployment", "deploy": "deployment", "statefulset": "statefulset", "statefulsets": "statefulset", "sts": "statefulset", "replicaset": "replicaset", "replicasets": "replicaset", "rs": "replicaset"}
# Cluster-wide objects whose deletion takes everything in them down: never through this skill.
UNDELETABLE = {"namespace", "namespaces", "ns", "node", "nodes", "no", "customresourcedefinition", "customresourcedefinitions", "crd", "crds", "persistentvolume", "persistentvolumes", "pv", "clusterrole", "clusterroles", "clusterrolebinding", "clusterrolebindings"}


def kubernetes_action(params):
    action = param_enum(params, "action", ["restart", "scale", "delete"], required=True)
    kind = param_str(params, "kind", pattern=KIND_RE, required=True, max_len=253)
    name = param_str(params, "name", pattern=SUBDOMAIN_RE, required=True, max_len=253)
    replicas = param_int(params, "replicas", minimum=0, maximum=1000)
    ns_args, ns = scope(params)
    base = kind.split(".")[0].lower()
    if action != "scale" and replicas is not None:
        raise PackError("invalid_argument", f"param 'replicas' only applies to action=scale, not {action}", "drop replicas, or use action=scale")
    if action == "restart":
        target = RESTARTABLE.get(base)
        if not target:
            raise PackError("invalid_argument", f"action=restart works on deployments, statefulsets and daemonsets, not {kind!r}", "to restart a single pod, use action=delete with kind=pod (its controller recreates it)")
        args = ["rollout", "restart", f"{target}/{name}"]
    elif action == "scale":
        target = SCALABLE.get(base)
        if not target:
            raise PackError("invalid_argument", f"action=scale works on deployments, statefulsets and replicasets, not {kind!r}", "give kind=deployment (or statefulset, replicaset)")
        if replicas is None:
            raise PackError("invalid_argument", "action=scale needs param 'replicas'", "give replicas, e.g. replicas=3 (0 stops every pod)")
        args = ["scale", f"{target}/{name}", f"--replicas={replicas}"]
    else:
        if base in UNDELETABLE:
            raise PackError("kind_not_allowed", f"deleting a {kind} through this skill is refused: it takes down everything inside it", "do this with kubectl directly under a change ticket")
        target = kind
        args = ["delete", kind, name, "--wait=false"]
    r = kubectl([*args, *ns_args, "--output=name", request_timeout()])
    out = {"action": action, "kind": target, "name": name, "namespace": ns, "resource": r.stdout.strip() or None}
    if action == "scale":
        out["replicas"] = replicas
    return out


if __name__ == "__main__":
    sys.exit(main({"kubernetes_get": kubernetes_get, "pod_logs": pod_logs, "pod_execute": pod_execute, "kubernetes_action": kubernetes_action}))
