"""Runtime shared by the ongrid skill packs (one identical copy per pack, so each pack installs alone).

The protocol (docs: skill/pack/run.ts): params arrive as one JSON document on stdin, the pack prints
exactly one JSON document on stdout, {"output": ...} or {"error": {"code", "message", "hint"}} (with an "output" beside it when a failure has something to show), and
logs to stderr. Tools are run from an argv list, never through a shell.
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import traceback

# Seconds kept back from the call's deadline so the pack can still report a timeout itself.
DEADLINE_MARGIN = 0.5
# Used when the pack is run by hand without ONGRID_DEADLINE_UNIX_MS.
DEFAULT_BUDGET = 30.0

DURATION_RE = re.compile(r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$")


class PackError(Exception):
    """A failure the caller can act on: a lower_snake code, what went wrong and what to do."""

    def __init__(self, code, message, hint="", output=None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint
        # What the failed call still has to show (a command's exit code, stdout, stderr).
        self.output = output


def log(message):
    """One line on stderr (the runner keeps its tail for error messages)."""
    print(f"[{os.environ.get('ONGRID_SKILL_KEY', '?')}] {message}", file=sys.stderr, flush=True)


def main(handlers):
    """Reads the params, runs the handler of ONGRID_SKILL_KEY and prints its one JSON document."""
    key = os.environ.get("ONGRID_SKILL_KEY", "")
    try:
        handler = handlers.get(key)
        if handler is None:
            raise PackError(
                "unknown_skill",
                f"this pack does not serve skill {key!r}",
                "the pack serves " + ", ".join(sorted(handlers)) + "; check ONGRID_SKILL_KEY and the pack's skill.json",
            )
        doc, status = {"output": handler(read_params())}, 0
    except PackError as e:
        doc, status = {"error": {"code": e.code, "message": e.message, "hint": e.hint}}, 1
        if e.output is not None:
            doc["output"] = e.output
    except Exception as e:  # a bug in the pack: say so, keep the traceback for the operator
        traceback.print_exc(file=sys.stderr)
        doc = {"error": {"code": "pack_internal", "message": f"{type(e).__name__}: {e}", "hint": "this is a fault in the pack, not in the params; report it with the pack's stderr"}}
        status = 1
    sys.stdout.write(json.dumps(doc, ensure_ascii=False, separators=(",", ":")))
    sys.stdout.write("\n")
    sys.stdout.flush()
    return status


def read_params():
    text = sys.stdin.read()
    if not text.strip():
        return {}
    try:
        params = json.loads(text)
    except ValueError as e:
        raise PackError("invalid_argument", f"params on stdin are not JSON: {e}", "send one JSON object on stdin")
    if not isinstance(params, dict):
        raise PackError("invalid_argument", "params on stdin must be a JSON object", "send one JSON object on stdin")
    return params


# ---------------------------------------------------------------------------------------------
# Params, checked again here: the runner validated them, but a value goes into an argv only
# after this pack has seen it match a strict pattern.


def _bad(name, what):
    return PackError("invalid_argument", f"param {name!r} {what}", "fix the param and call again (see the skill's parameter schema)")


def param_str(params, name, *, pattern=None, required=False, default=None, max_len=4096):
    value = params.get(name, default)
    if value is None or value == "":
        if required:
            raise _bad(name, "is required")
        return None
    if not isinstance(value, str):
        raise _bad(name, "must be a string")
    if len(value) > max_len:
        raise _bad(name, f"must be at most {max_len} characters")
    if "\x00" in value:
        raise _bad(name, "must not contain NUL")
    if pattern is not None and not re.fullmatch(pattern, value):
        raise _bad(name, f"must match {pattern}")
    return value


def param_int(params, name, *, default=None, minimum=None, maximum=None, required=False):
    value = params.get(name, default)
    if value is None:
        if required:
            raise _bad(name, "is required")
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(name, "must be an integer")
    if minimum is not None and value < minimum:
        raise _bad(name, f"must be >= {minimum}")
    if maximum is not None and value > maximum:
        raise _bad(name, f"must be <= {maximum}")
    return value


def param_bool(params, name, default=False):
    value = params.get(name, default)
    if not isinstance(value, bool):
        raise _bad(name, "must be true or false")
    return value


def param_enum(params, name, values, *, default=None, required=False):
    value = params.get(name, default)
    if value is None:
        if required:
            raise _bad(name, "is required")
        return None
    if value not in values:
        raise _bad(name, "must be one of " + ", ".join(values))
    return value


def param_duration(params, name, default=None):
    value = params.get(name, default)
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not DURATION_RE.fullmatch(value):
        raise _bad(name, 'must be a duration such as "30s", "5m" or "1h30m"')
    return value


# ---------------------------------------------------------------------------------------------
# Tools


def remaining(margin=DEADLINE_MARGIN):
    """Seconds left before the call's deadline, less a margin; at least 0.1."""
    raw = os.environ.get("ONGRID_DEADLINE_UNIX_MS", "")
    try:
        left = int(raw) / 1000.0 - time.time()
    except ValueError:
        left = DEFAULT_BUDGET
    return max(0.1, left - margin)


def find_tool(name, package, override_env=None):
    """Absolute path of a tool: the override variable when set (an absolute path), else PATH."""
    override = os.environ.get(override_env) if override_env else None
    if override:
        if not os.path.isabs(override):
            raise PackError("invalid_config", f"{override_env} must be an absolute path, got {override!r}", f"set {override_env} to the absolute path of {name}, or unset it to use PATH")
        if not os.path.isfile(override):
            raise PackError("tool_missing", f"{name} not found at {override} (from {override_env})", f"install the {package} package, or point {override_env} at an existing {name}")
        if not os.access(override, os.X_OK):
            raise PackError("permission_denied", f"{override} (from {override_env}) is not executable by this user", f"chmod +x it, or point {override_env} at an executable {name}")
        return override
    path = shutil.which(name)
    if path is None:
        raise PackError("tool_missing", f"{name} is not installed on this host (not found in PATH={os.environ.get('PATH', '')})", f"install the {package} package")
    return path


class Result:
    """How a tool run ended: exit code and decoded output."""

    def __init__(self, argv, returncode, stdout, stderr):
        self.argv = argv
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr


def run(argv, *, package, timeout=None, env=None):
    """Runs argv (no shell, stdin from /dev/null) within the call's deadline."""
    budget = remaining() if timeout is None else min(timeout, remaining())
    log("run: " + " ".join(shlex.quote(a) for a in argv))
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=budget, env=env, check=False)
    except FileNotFoundError:
        raise PackError("tool_missing", f"{argv[0]} is not installed on this host", f"install the {package} package")
    except PermissionError:
        raise PackError("permission_denied", f"{argv[0]} cannot be executed by this user", "check the file's permissions, or run the edge as a user allowed to run it")
    except subprocess.TimeoutExpired:
        raise PackError("deadline_exceeded", f"{os.path.basename(argv[0])} did not finish within {budget:.1f}s and was killed", "retry with a longer deadline or a narrower request")
    out = p.stdout.decode("utf-8", "replace")
    err = p.stderr.decode("utf-8", "replace")
    if err.strip():
        log(f"{os.path.basename(argv[0])} exited {p.returncode}; stderr: {tail(err, 500)}")
    return Result(argv, p.returncode, out, err)


# Messages every tool prints when the kernel or a socket refuses this user.
PERMISSION_RE = re.compile(r"Operation not permitted|Permission denied|must be root|EPERM|EACCES", re.I)


def failure(result, rules, *, tool, permission_hint):
    """The PackError for a failed run: the first matching (regex, code, hint) rule, else permission, else tool_failed."""
    text = (result.stderr.strip() or result.stdout.strip() or f"exit code {result.returncode}")
    said = tail(text) if text.startswith(f"{tool}:") else f"{tool}: {tail(text)}"
    for pattern, code, hint in rules:
        if re.search(pattern, text, re.I):
            return PackError(code, said, hint)
    if PERMISSION_RE.search(text):
        return PackError("permission_denied", said, permission_hint)
    return PackError("tool_failed", f"{tool} exited with code {result.returncode}: {tail(text)}", f"see the message above; `{' '.join(shlex.quote(a) for a in [os.path.basename(result.argv[0])] + result.argv[1:])}` is what ran")


def parse_json(text, tool):
    """A tool's JSON mode output; empty output is None."""
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except ValueError as e:
        raise PackError("bad_tool_output", f"{tool} printed output that is not JSON: {e} (began {text[:80]!r})", f"check that this {tool} supports JSON output")


def tail(text, limit=1000):
    t = text.strip()
    return t if len(t) <= limit else "…" + t[-limit:]
