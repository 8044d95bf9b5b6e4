"""Who is asking: the namespaces a caller may read and write, and the most its writes are trusted.

Every operation that names notes (a ref, a query, a selection) asks its Store's `caller` here, in
one place: Store.resolve drops the notes a caller may not see (they are not found, rather than
refused, so a caller learns nothing of them), recall and every selection read `caller.namespaces()`,
and the write pipeline checks `caller.write_namespace()` and caps trust with `caller.trusted()`.

Two kinds of caller:
- the vault's owner (`namespace` None: a person at the command line, a script of theirs): every
  namespace on request (`"*"`), `shared` plus the vault's default one when none is named;
- an agent confined to its namespace (`Vault(path, namespace="alice")`, `vault.as_caller(...)`, or
  $VAULTMEM_NAMESPACE for a process): it reads and writes `shared`, the vault's default namespace,
  its own, and the notes that have none (an unparsable one); naming any other is NamespaceDenied.

Trust: a caller with `trust` set (a surface: MCP, Hermes, an HTTP token) writes at most that trust;
a write's `source` is provenance, and may only lower the trust the policy gives it, never raise it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ..errors import NamespaceDenied, VaultmemError

__all__ = ["ALL_NAMESPACES", "Caller", "NAMESPACE_ENV", "SHARED", "TRUST_LEVELS", "lower_trust"]

SHARED = "shared"  # the namespace every agent reads (SPEC §8)
ALL_NAMESPACES = "*"
NAMESPACE_ENV = "VAULTMEM_NAMESPACE"  # how a process says which agent it is
TRUST_LEVELS = ("external", "agent", "user")  # lowest first


def lower_trust(a: str, b: str | None) -> str:
    """The lower of two trust levels (b None: a)."""
    if b is None:
        return a
    return min(a, b, key=lambda level: TRUST_LEVELS.index(level) if level in TRUST_LEVELS else -1)


@dataclass(frozen=True)
class Caller:
    """The caller of a Store's operations (see the module docstring)."""

    # the agent's own namespace, or several (an HTTP token's); None: the owner, who may read every one
    namespace: str | tuple[str, ...] | None = None
    trust: str | None = None      # the most its writes are trusted; None: as the policy rates the source
    name: str = ""                # who, for the audit log (a surface, a token's name)

    def __post_init__(self) -> None:
        own = (self.namespace,) if isinstance(self.namespace, str) else tuple(self.namespace or ())
        for name in own:
            if not isinstance(name, str) or not name.strip() or name == ALL_NAMESPACES:
                raise VaultmemError(f"a caller's namespace must be a name, not {name!r}")
        if self.namespace is not None and not own:
            raise VaultmemError("a confined caller needs at least one namespace")
        object.__setattr__(self, "own", own)  # the namespaces as a tuple (empty: the owner)
        if self.trust is not None and self.trust not in TRUST_LEVELS:
            raise VaultmemError(f"trust must be one of {', '.join(TRUST_LEVELS)}, not {self.trust!r}")

    @classmethod
    def from_env(cls) -> Caller:
        """The caller a process is: confined to $VAULTMEM_NAMESPACE when it is set, else the owner."""
        own = os.environ.get(NAMESPACE_ENV, "").strip()
        return cls(namespace=own or None)

    @property
    def confined(self) -> bool:
        """Whether this caller is an agent confined to its namespace (not the vault's owner)."""
        return self.namespace is not None

    def readable(self, default_namespace: str) -> list[str]:
        """The namespaces a confined caller may read and write ("" : notes without one)."""
        return list(dict.fromkeys([SHARED, str(default_namespace), *self.own, ""]))

    def sees(self, namespace: str, default_namespace: str) -> bool:
        """Whether this caller may read or change a note of this namespace."""
        return not self.confined or namespace in self.readable(default_namespace)

    def namespaces(self, given: str | list[str] | tuple[str, ...] | None, default_namespace: str) -> list[str] | None:
        """The namespaces an operation reads (None: every one) for what the caller asked.

        Given none: `shared`, the vault's default namespace, the caller's own and the notes without
        one. `"*"`: every namespace for the owner, every readable one for a confined caller. Names:
        those; a confined caller naming one it may not read gets NamespaceDenied.
        """
        if given is None:
            own = self.own if self.confined else (str(default_namespace),)
            return list(dict.fromkeys([SHARED, str(default_namespace), *own, ""]))
        names = [given] if isinstance(given, str) else list(given)
        if not self.confined:
            return None if ALL_NAMESPACES in names else names
        if ALL_NAMESPACES in names:
            return self.readable(default_namespace)
        self._check(names, default_namespace)
        return names

    def write_namespace(self, given: Any, default_namespace: str) -> None:
        """Raise NamespaceDenied if this caller may not write into the namespace given (None: the default)."""
        if self.confined and given not in (None, ""):
            self._check([str(given)], default_namespace)

    def audit_fields(self) -> dict[str, Any]:
        """What an audit event records of its caller: its name (never a token) and namespaces."""
        fields: dict[str, Any] = {"caller": self.name} if self.name else {}
        if self.confined:
            fields["caller_namespaces"] = list(self.own)
        return fields

    def trusted(self, rated: str) -> str:
        """The trust of a write the policy rates `rated` (from its source), capped by this caller's."""
        return lower_trust(rated, self.trust)

    def _check(self, names: list[str], default_namespace: str) -> None:
        allowed = self.readable(default_namespace)
        refused = [n for n in names if n not in allowed]
        if refused:
            shown = ", ".join(n for n in allowed if n)
            raise NamespaceDenied(f"namespace {refused[0]!r} is not this caller's: an agent confined to "
                                  f"{', '.join(self.own)} reads and writes only {shown}")
