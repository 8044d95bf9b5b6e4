"""On-write hooks (issue 29 item 4): what a hook is, whether this device enabled it, and one run of it.

A hook is named in config.yaml (`hooks.run`), which travels with the vault: a remote may add or change
one. So a hook runs only when this device's user enabled it (`enable`), which stores a digest of what
it runs (its command, or entry point, and the bytes of any file of the vault its command names) in
this machine's state outside the vault (events.state_dir, never synced by git or a folder-sync tool);
a hook whose digest changed since is off until enabled again. The queue that runs them in the
background is hookqueue.py; this module runs one hook once, in the caller's thread.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..config import HOOK_ACTIONS, HOOK_ENV
from ..errors import VaultmemError
from .events import log_files, read_new_lines, state_dir
from .files import atomic_write

__all__ = ["HOOK_ENV", "Outcome", "digest", "disable", "enabled_digests", "enable", "failures",
           "hook_events", "named", "report", "run_hook", "sample_event"]

_ENABLED_FILE = "hooks.json"
_STDERR_KEPT = 400  # characters of a failed command's stderr kept in its failure record
# an audit event's (event, action) -> the hook action; every other audit event (entity, edit, decay,
# repair, a remember left unchanged) tells a hook nothing it acts on
_AUDITED = {("remember", "created"): "create", ("remember", "merged"): "merge", ("supersede", None): "supersede",
            ("forget", "archive"): "forget", ("forget", "delete"): "forget", ("gc", "archive"): "forget",
            ("gc", "delete"): "forget", ("restore", None): "restore", ("confirm", None): "confirm"}


def hook_events(audited: list[dict[str, Any]], when: float) -> list[dict[str, Any]]:
    """The hook events of a write's audit events: {id, path, action, title, namespace, time}, with
    what the audit event lacks ("" here; hookqueue fills it from the index)."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))
    out = []
    for ev in audited:
        action = _AUDITED.get((ev.get("event"), ev.get("action"))) or _AUDITED.get((ev.get("event"), None))
        if action is not None and isinstance(ev.get("id"), str):
            out.append({"id": ev["id"], "path": str(ev.get("path") or ""), "action": action,
                        "title": str(ev.get("title") or ""), "namespace": "", "time": stamp})
    return out


# -- which hooks this device runs ----------------------------------------------------------------
def digest(spec: Mapping[str, Any], root: Path) -> str:
    """What a hook runs, as a hash: its command or entry point, and every file inside the vault its
    command names (a script a remote can change as easily as the command)."""
    parts: dict[str, Any] = {"command": spec.get("command"), "entry_point": spec.get("entry_point")}
    files = {}
    for word in _words(str(spec.get("command") or "")):
        path = (root / word).resolve()
        if path.is_file() and path.is_relative_to(root):
            files[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    parts["files"] = files
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode("utf-8")).hexdigest()


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:  # an unclosed quote: the shell will refuse it, and the whole text is hashed anyway
        return []


def _enabled_path() -> Path:
    return state_dir() / _ENABLED_FILE


def _read_enabled() -> dict[str, dict[str, dict[str, Any]]]:
    try:
        data = json.loads(_enabled_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def enabled_digests(root: Path) -> dict[str, dict[str, Any]]:
    """{hook name: {digest, command, at}} of the hooks this device enabled for the vault at root."""
    found = _read_enabled().get(str(root), {})
    return found if isinstance(found, dict) else {}


def _write_enabled(root: Path, hooks: dict[str, dict[str, Any]]) -> None:
    data = _read_enabled()
    data[str(root)] = hooks
    if not hooks:
        del data[str(root)]
    path = _enabled_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode("utf-8"))


def enable(root: Path, spec: Mapping[str, Any]) -> dict[str, Any]:
    """Let this device run a configured hook as it is now; returns what was recorded."""
    entry = {"digest": digest(spec, root), "runs": _runs(spec), "at": time.time()}
    _write_enabled(root, {**enabled_digests(root), str(spec["name"]): entry})
    return entry


def disable(root: Path, name: str) -> bool:
    """Stop running a hook on this device; whether it was enabled."""
    hooks = enabled_digests(root)
    if hooks.pop(name, None) is None:
        return False
    _write_enabled(root, hooks)
    return True


def _runs(spec: Mapping[str, Any]) -> str:
    return str(spec.get("command") or spec.get("entry_point"))


def named(specs: tuple[Mapping[str, Any], ...], name: str) -> Mapping[str, Any]:
    """The configured hook of this name; VaultmemError naming the ones there are."""
    for spec in specs:
        if spec["name"] == name:
            return spec
    known = ", ".join(str(spec["name"]) for spec in specs) or "none"
    raise VaultmemError(f"no hook named {name!r} in .vaultmem/config.yaml (hooks.run; configured: {known})")


def report(root: Path, device_dir: Path, specs: tuple[Mapping[str, Any], ...]) -> list[dict[str, Any]]:
    """Each configured hook: what it runs, its state on this device (enabled | not enabled | changed
    since enabled) and the failures recorded since it was enabled."""
    enabled = enabled_digests(root)
    out = []
    for spec in specs:
        name, entry = str(spec["name"]), enabled.get(str(spec["name"]))
        state = "not enabled" if entry is None else "enabled" if entry.get("digest") == digest(spec, root) \
            else "changed since enabled"
        failed = failures(device_dir, name, float(entry.get("at", 0))) if entry else []
        out.append({"name": name, "kind": "command" if spec.get("command") else "entry_point", "runs": _runs(spec),
                    "actions": list(spec.get("actions", HOOK_ACTIONS)), "state": state, "failures": len(failed),
                    "last_failure": failed[-1] if failed else None})
    return out


def failures(device_dir: Path, name: str, since: float = 0.0) -> list[dict[str, Any]]:
    """This device's recorded failures of a hook at or after `since`, oldest first."""
    found = []
    for path in log_files(device_dir.parent, "hooks"):
        if path.parent == device_dir:
            found += [ev for ev in read_new_lines(path, 0)[0]
                      if ev.get("hook") == name and isinstance(ev.get("ts"), (int, float)) and ev["ts"] >= since]
    return found


# -- one run ---------------------------------------------------------------------------------------
class Outcome:
    """How one run of a hook ended: ok, or why not (exit 1, timed out, crashed)."""

    __slots__ = ("ok", "seconds", "stderr", "why")

    def __init__(self, why: str = "", seconds: float = 0.0, stderr: str = ""):
        self.ok, self.why, self.seconds, self.stderr = not why, why, seconds, stderr

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "why": self.why, "seconds": round(self.seconds, 3), "stderr": self.stderr}


def run_hook(spec: Mapping[str, Any], events: list[dict[str, Any]], root: Path, timeout: float) -> Outcome:
    """Run a hook once for these events: a command gets them as JSON lines on stdin; an entry point
    is called with each event's dict. Never raises for the hook's own failure."""
    start = time.monotonic()
    if spec.get("command"):
        why, stderr = _run_command(str(spec["command"]), str(spec["name"]), events, root, timeout)
    else:
        why, stderr = _call_entry_point(str(spec["entry_point"]), events, timeout), ""
    return Outcome(why, time.monotonic() - start, stderr)


def _run_command(command: str, name: str, events: list[dict[str, Any]], root: Path, timeout: float
                 ) -> tuple[str, str]:
    """(why it failed or "", the end of its stderr). Its own process group, so a timeout kills what it started too."""
    lines = "".join(json.dumps(ev, ensure_ascii=False) + "\n" for ev in events).encode("utf-8")
    env = {**os.environ, HOOK_ENV: name, "VAULTMEM_VAULT": str(root)}
    try:
        proc = subprocess.Popen(command, shell=True, cwd=root, env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        return f"could not start: {exc.strerror or exc}", ""
    try:
        _, err = proc.communicate(lines, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return f"timed out after {timeout:g} s (killed with its process group)", ""
    stderr = err.decode("utf-8", "replace")[-_STDERR_KEPT:]
    if proc.returncode < 0:
        return f"killed by signal {-proc.returncode}", stderr
    return (f"exit {proc.returncode}" if proc.returncode else ""), stderr


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.kill()
    proc.communicate()


def _call_entry_point(target: str, events: list[dict[str, Any]], timeout: float) -> str:
    """Call `module:function` with each event in a thread of its own: one that outlives the timeout is
    left behind (Python cannot stop a thread) and the run counts as timed out."""
    failed: list[str] = []

    def call() -> None:
        try:
            function = _entry_point(target)
            for event in events:
                function(dict(event))
        except Exception as exc:  # the hook's own failure, whatever it is: recorded, never raised
            failed.append(f"crashed: {type(exc).__name__}: {exc}"[:_STDERR_KEPT])

    worker = threading.Thread(target=call, name=f"vaultmem-hook-{target}", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        return f"timed out after {timeout:g} s (the call is left running: a thread cannot be killed)"
    return failed[0] if failed else ""


def _entry_point(target: str) -> Callable[[dict[str, Any]], Any]:
    module, _, attribute = target.partition(":")
    function = importlib.import_module(module)
    for part in attribute.split("."):
        function = getattr(function, part)
    if not callable(function):
        raise VaultmemError(f"{target} is not a function")
    return function  # type: ignore[return-value]


def sample_event() -> dict[str, Any]:
    """The event `vaultmem hooks test` sends: the shape of a real one, naming no note."""
    return {"id": "", "path": "", "action": "test", "title": "vaultmem hooks test", "namespace": "",
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
