"""The tokens that open a vault's HTTP server (`vaultmem token add/list/revoke`, `vaultmem serve`).

A token is 256 random bits (`secrets.token_urlsafe(32)`), shown once when it is made. The vault
keeps only its SHA-256, in this device's append-only log `.vaultmem/devices/<device>/tokens-*.jsonl`
(an `token-add` event: name, sha256, scope, namespaces, trust, ts; a `token-revoke` event: name,
ts), never the token: not in the vault, its config or git. So much entropy needs no slow
key-derivation function (bcrypt, scrypt): nobody can search a 2^256 space for a preimage, and a
slow hash would only make every request slower. A token a client sends is hashed and compared with
each stored hash in constant time (hmac.compare_digest).

Every device's log counts, so a vault synced with git carries its tokens to the machine that serves
it; for each name the latest event decides (a revoke made elsewhere counts from the next sync). A
token names the namespaces it may touch, or `*` for all of them (the owner's token): see Token.caller.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvalidValue, MissingArgument, VaultmemError
from ..text.times import local_iso
from .caller import ALL_NAMESPACES, TRUST_LEVELS, Caller
from .events import append_events, log_files, read_new_lines

__all__ = ["PREFIX", "SCOPES", "Token", "TokenBook"]

SCOPES = ("read", "read-write")
PREFIX = "vm_"  # marks a vaultmem token in a config file or a leak scanner's findings
_LOG = "tokens"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True)
class Token:
    """A token as the vault knows it (never the token itself, nor its hash): its name, scope (read or
    read-write), the namespaces it may touch (`("*",)`: all, the owner's), the most its writes are
    trusted, when and on which device it was made."""

    name: str
    scope: str
    namespaces: tuple[str, ...]
    trust: str
    created: str
    device: str

    @property
    def writes(self) -> bool:
        """Whether the token may change the vault (scope read-write)."""
        return self.scope == "read-write"

    def caller(self) -> Caller:
        """The caller its requests act as: confined to its namespaces (or the owner's, for `*`), its
        writes trusted at most its trust, named in the audit log by the token's name."""
        everything = ALL_NAMESPACES in self.namespaces
        return Caller(namespace=None if everything else self.namespaces, trust=self.trust, name=self.name)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (`token list --json`)."""
        return {"name": self.name, "scope": self.scope, "namespaces": list(self.namespaces), "trust": self.trust,
                "created": self.created, "device": self.device}


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def _checked(name: str, scope: str, namespaces: tuple[str, ...], trust: str, all_namespaces: bool) -> tuple[str, ...]:
    """The namespaces a new token holds (`("*",)` for all), once its fields are found usable."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidValue("a token's name is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit")
    if scope not in SCOPES:
        raise InvalidValue(f"a token's scope is {' or '.join(SCOPES)}, not {scope!r}")
    if trust not in TRUST_LEVELS:
        raise InvalidValue(f"a token's trust is one of {', '.join(TRUST_LEVELS)}, not {trust!r}")
    names = tuple(dict.fromkeys(n.strip() for n in namespaces))
    if all_namespaces and names:
        raise InvalidValue("a token holds either the namespaces named or all of them, not both")
    if not all_namespaces and not names:
        raise MissingArgument("a token must name the namespaces it may touch", ("namespaces", "all_namespaces"))
    if all_namespaces:
        return (ALL_NAMESPACES,)
    Caller(namespace=names)  # the same check as any caller's namespaces
    return names


class TokenBook:
    """A vault's tokens as every device's log says, read again whenever a log changed (a stat of
    each per lookup, so a revoke in another process counts from its next request). Shared by the
    threads of a process."""

    def __init__(self, devices_dir: Path, device_dir: Path, device: str):
        self.devices_dir = devices_dir
        self.device_dir = device_dir
        self.device = device
        self._lock = threading.Lock()
        self._seen: tuple = ()
        self._live: dict[str, tuple[str, Token]] = {}  # name -> (sha256, token)

    def _current(self) -> dict[str, tuple[str, Token]]:
        stamp = _logs_stamp(self.devices_dir)
        with self._lock:
            if stamp != self._seen:
                self._live, self._seen = _replayed(list(log_files(self.devices_dir, _LOG))), stamp
            return self._live

    def tokens(self) -> list[Token]:
        """The live tokens, by name."""
        return [token for _, token in sorted(self._current().values(), key=lambda pair: pair[1].name)]

    def find(self, secret: str) -> Token | None:
        """The live token whose hash is that of `secret`, compared with every stored one in constant time."""
        wanted = _digest(secret)
        found = None
        for stored, token in self._current().values():
            if hmac.compare_digest(stored, wanted):
                found = token
        return found

    def add(self, name: str, scope: str, namespaces: tuple[str, ...], trust: str,
            all_namespaces: bool) -> tuple[str, Token]:
        """Make a token: (the token, shown this once; what the vault keeps of it)."""
        names = _checked(name, scope, tuple(namespaces), trust, all_namespaces)
        if name in self._current():
            raise VaultmemError(f"a token named {name!r} exists: revoke it first (vaultmem token revoke {name}), "
                                "or choose another name")
        secret = PREFIX + secrets.token_urlsafe(32)
        now = time.time()
        append_events(self.device_dir, _LOG, [{"event": "token-add", "name": name, "sha256": _digest(secret),
                                               "scope": scope, "namespaces": list(names), "trust": trust, "ts": now}])
        return secret, Token(name, scope, names, trust, local_iso(now), self.device)

    def revoke(self, name: str) -> Token | None:
        """End a token now (every process that serves this vault refuses it from its next request);
        the Token it was, or None when no live token has the name (a revoke is idempotent, as RFC 7009's)."""
        live = self._current().get(name)
        if live is None:
            return None
        append_events(self.device_dir, _LOG, [{"event": "token-revoke", "name": name, "ts": time.time()}])
        return live[1]


def _logs_stamp(devices_dir: Path) -> tuple:
    """(path, mtime, size) of every device's token log: what changes when one is added to or made.
    os.scandir, not a glob: every request of a server looks (~10 µs for a few devices, a glob ~40)."""
    found = []
    try:
        devices = list(os.scandir(devices_dir))
    except OSError:  # no devices folder yet: no tokens
        return ()
    for device in devices:
        try:
            for entry in os.scandir(device.path):
                if entry.name.startswith(_LOG + "-") and entry.name.endswith(".jsonl"):
                    st = entry.stat()
                    found.append((entry.path, st.st_mtime_ns, st.st_size))
        except OSError:  # not a folder, or removed meanwhile
            continue
    return tuple(sorted(found))


def _replayed(files: list[Path]) -> dict[str, tuple[str, Token]]:
    """The live tokens after every event of these logs, in time order (the latest event per name decides)."""
    events = []
    for path in files:
        try:
            found, _ = read_new_lines(path, 0)
        except OSError:
            continue
        events += [(ev, path.parent.name) for ev in found if _usable(ev)]
    live: dict[str, tuple[str, Token]] = {}
    for ev, device in sorted(events, key=lambda pair: pair[0]["ts"]):
        if ev["event"] == "token-revoke":
            live.pop(ev["name"], None)
            continue
        token = Token(ev["name"], ev["scope"], tuple(ev["namespaces"]), ev["trust"], local_iso(ev["ts"]), device)
        live[ev["name"]] = (ev["sha256"], token)
    return live


def _usable(ev: dict[str, Any]) -> bool:
    """Whether a log line is a whole token event (a hand-edited or half-merged one is skipped)."""
    if ev.get("event") not in ("token-add", "token-revoke") or not isinstance(ev.get("name"), str):
        return False
    if not isinstance(ev.get("ts"), (int, float)) or isinstance(ev.get("ts"), bool):
        return False
    if ev["event"] == "token-revoke":
        return True
    spaces = ev.get("namespaces")
    return (isinstance(ev.get("sha256"), str) and len(ev["sha256"]) == 64 and ev.get("scope") in SCOPES
            and ev.get("trust") in TRUST_LEVELS and isinstance(spaces, list) and bool(spaces)
            and all(isinstance(n, str) and n.strip() for n in spaces))
