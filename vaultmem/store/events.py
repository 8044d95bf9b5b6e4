"""Per-device append-only logs: access, feedback, pin and decay events (ranking) and the audit trail.

Each device writes only `.vaultmem/devices/<device-id>/`, so a git merge of two machines' logs
never conflicts. The device id is generated once per machine and kept outside the vault.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..errors import VaultmemError
from .files import atomic_write
from ..text.decay import VERDICTS
from ..text.times import LAST_TS

_DEVICE_FILE = "device-id"
FOLDED = ("access", "feedback", "pin", "unpin", "decay")  # the events the index folds from every device's events logs


def state_dir() -> Path:
    """This machine's vaultmem state: $VAULTMEM_HOME, else $XDG_CONFIG_HOME/vaultmem, else ~/.config/vaultmem."""
    explicit = os.environ.get("VAULTMEM_HOME")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "vaultmem"


def _hostname() -> str:
    """This machine's name; POSIX has it from uname, without importing socket (~6 ms a process)."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()


def _new_device_id() -> str:
    host = "".join(ch for ch in _hostname().split(".")[0].lower() if ch.isalnum() or ch == "-")
    return f"{(host or 'device')[:24]}-{os.urandom(2).hex()}"


def device_id() -> str:
    """The id of this machine: $VAULTMEM_DEVICE_ID, else the stored one, else a new one stored now."""
    explicit = os.environ.get("VAULTMEM_DEVICE_ID")
    if explicit:
        return _checked_device_id(explicit)
    path = state_dir() / _DEVICE_FILE
    stored = _stored_device_id(path)
    if stored is not None:
        return stored
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = _new_device_id()
    try:  # whole or not at all: concurrent first runs must never read a file still being written
        atomic_write(path, (fresh + "\n").encode("utf-8"), exclusive=True)
    except FileExistsError:  # another process won the race: use its id
        return _checked_device_id(path.read_text(encoding="utf-8").strip())
    return fresh


def device_info() -> dict[str, str]:
    """This machine's device id and where it comes from: {"device", "source": env|file, "path"}."""
    device = device_id()
    source = "env" if os.environ.get("VAULTMEM_DEVICE_ID") else "file"
    return {"device": device, "source": source, "path": str(state_dir() / _DEVICE_FILE)}


def reset_device_id() -> dict[str, str]:
    """Give this machine a new device id (a cloned VM or a copied home shares its origin's, and two
    machines must never write one device log); the old id's logs stay in every vault and still count.
    Returns {"old", "device", "path"}. Refused while $VAULTMEM_DEVICE_ID sets the id."""
    if os.environ.get("VAULTMEM_DEVICE_ID"):
        raise VaultmemError("the device id comes from $VAULTMEM_DEVICE_ID: change or unset it instead")
    path = state_dir() / _DEVICE_FILE
    old = _stored_device_id(path)
    fresh = _new_device_id()
    while fresh == old:
        fresh = _new_device_id()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (fresh + "\n").encode("utf-8"))
    return {"old": old or "", "device": fresh, "path": str(path)}


def _stored_device_id(path: Path) -> str | None:
    """The stored id, or None when there is none yet. An empty file (left by a version that wrote
    it in place, mid-write or killed) is waited for briefly, then replaced."""
    for _ in range(20):
        try:
            value = path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return None
        if value:
            return _checked_device_id(value)
        time.sleep(0.01)
    path.unlink(missing_ok=True)
    return None


def _checked_device_id(value: str) -> str:
    if not value or not all(ch.isalnum() or ch in "-_" for ch in value) or len(value) > 64:
        raise VaultmemError(f"invalid device id {value!r}: use letters, digits, '-' and '_' only")
    return value


# one encoder for every event: json.dumps with options builds a new one per call (a batch logs 100,000)
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def append_events(folder: Path, kind: str, events: Iterable[dict], now: float | None = None) -> None:
    """Append events as JSON lines to `<folder>/<kind>-YYYY-MM.jsonl` in one write (O_APPEND)."""
    _append_lines(folder, kind, "".join(_ENCODE(ev) + "\n" for ev in events), now)


def append_accesses(folder: Path, ids: Iterable[str], stamp: float) -> None:
    """append_events of one `access` event per id at `stamp`, the same bytes: every recall logs its
    hits, so the line is put together once rather than encoded event by event."""
    head, tail = '{"event":"access","id":', ',"ts":' + _ENCODE(stamp) + "}\n"
    _append_lines(folder, "events", "".join(head + _ENCODE(i) + tail for i in ids), stamp)


def _append_lines(folder: Path, kind: str, lines: str, now: float | None) -> None:
    if not lines:
        return
    stamp = time.time() if now is None else now
    path = folder / f"{kind}-{time.strftime('%Y-%m', time.gmtime(stamp))}.jsonl"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    except FileNotFoundError:  # the device folder is new (or was removed): made on first use
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, lines.encode("utf-8"))
    finally:
        os.close(fd)


def read_new_lines(path: Path, offset: int) -> tuple[list[dict], int]:
    """Complete JSON lines after byte `offset`, and the offset after the last complete line.

    A half-written last line (a writer still appending) is left for the next read; a line that
    is not a valid event (a bad merge, a hand edit: see bad_lines) is skipped rather than failing
    every command.
    """
    with open(path, "rb") as handle:
        handle.seek(offset)
        data = handle.read()
    end = data.rfind(b"\n") + 1
    lines = [raw for raw in data[:end].splitlines() if raw.strip()]
    parsed = _all_at_once(lines)
    if parsed is None:  # some line is no JSON object on its own: each is read alone (and skipped if bad)
        return [ev for ev in map(_event_of, lines) if ev is not None], offset + end
    return [ev for ev in parsed if not _problem(ev)], offset + end


def _all_at_once(lines: list[bytes]) -> list | None:
    """The lines' values parsed as one JSON array (a log of 300,000 lines: ~5x faster than line by line);
    None unless every line is one object of its own (so no value can span two lines)."""
    if not all(raw.lstrip().startswith(b"{") and raw.rstrip().endswith(b"}") for raw in lines):
        return None
    try:
        values = json.loads(b"[" + b",".join(lines) + b"]")
    except (ValueError, RecursionError):
        return None
    return values if len(values) == len(lines) else None


def _event_of(raw: bytes) -> dict | None:
    return _event(raw)[0]


def bad_lines(path: Path) -> list[tuple[int, str]]:
    """(line number from 1, what is wrong) of each complete line of a log that read_new_lines skips."""
    with open(path, "rb") as handle:
        data = handle.read()
    found = []
    for number, raw in enumerate(data[:data.rfind(b"\n") + 1].splitlines(), 1):
        problem = _event(raw)[1]
        if problem:
            found.append((number, problem))
    return found


def _event(raw: bytes) -> tuple[dict | None, str]:
    """A log line's event, or None and what is wrong with it (a blank line is neither)."""
    if not raw.strip():
        return None, ""
    try:
        ev = json.loads(raw)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None, "not a line of JSON"
    problem = _problem(ev)
    return (None, problem) if problem else (ev, "")


def _problem(ev: object) -> str:
    """What is wrong with a parsed log line ('' for nothing)."""
    if not isinstance(ev, dict):
        return "not a JSON object"
    kind = ev.get("event")
    if kind in FOLDED:  # the events ranking folds: one bad value must not reach the index
        named = f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} event"
        if not isinstance(ev.get("id"), str):
            return f"{named}'s id must be text"
        ts = ev.get("ts", 0)
        if not _seconds(ts):
            return f"{named}'s ts must be POSIX seconds, not {json.dumps(ts)[:40]}"
        if kind == "feedback" and ev.get("verdict") not in VERDICTS:
            return f"a feedback event's verdict must be one of {', '.join(VERDICTS)}"
        if kind == "decay" and not (_number(ev.get("factor")) and 0 < ev["factor"] <= 1):
            return "a decay event's factor must be a number above 0 and at most 1"
        if kind == "pin" and not all(_number(ev.get(key, 0)) for key in ("ratio", "age_hours")):
            return "a pin event's ratio and age_hours must be numbers"
    return ""


def _number(value: object) -> bool:
    """A finite int or float (an int of 400 digits is none: float() overflows)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _seconds(value: object) -> bool:
    return _number(value) and 0 <= value <= LAST_TS  # type: ignore[operator]


def log_files(devices_dir: Path, kind: str) -> Iterator[Path]:
    """Every device's logs of one kind, in a stable order."""
    if devices_dir.is_dir():
        yield from sorted(devices_dir.glob(f"*/{kind}-*.jsonl"))


def events_naming(devices_dir: Path, kind: str, needle: str) -> list[tuple[str, dict]]:
    """(device, event) of every device's logged events of one kind whose line holds `needle` (a note's id),
    in each log's order: one note's history without parsing the other notes' lines (a byte search first)."""
    wanted = needle.encode("utf-8")
    found: list[tuple[str, dict]] = []
    for path in log_files(devices_dir, kind):
        try:
            data = path.read_bytes()
        except OSError:  # a log that cannot be read is left out, as folding leaves it
            continue
        at = data.find(wanted)
        while at >= 0:
            start, end = data.rfind(b"\n", 0, at) + 1, data.find(b"\n", at)
            if end < 0:  # a half-written last line: not an event yet
                break
            event = _event_of(data[start:end])
            if event is not None:
                found.append((path.parent.name, event))
            at = data.find(wanted, end)
    return found


__all__ = ["FOLDED", "append_accesses", "append_events", "bad_lines", "device_id", "device_info", "events_naming",
           "log_files", "read_new_lines",
           "reset_device_id", "state_dir"]
