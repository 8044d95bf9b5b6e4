"""vaultmem: long-term memory for AI agents that lives in an Obsidian/Markdown vault."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import (
    AmbiguousNote,
    ConfigError,
    NoteFormatError,
    NoteNotFound,
    PolicyViolation,
    UnsafePath,
    VaultmemError,
    VaultNotFound,
    WriteConflict,
)

if TYPE_CHECKING:
    from .answer import Answer
    from .catalog import DoctorReport, Memory
    from .context import Context, ContextItem
    from .recall import Hit, Query
    from .vault import Vault
    from .write import WriteResult

__version__ = "0.1.0"

# Loaded on first use (PEP 562): `import vaultmem` stays cheap, and a write never imports numpy.
_LAZY = {"Answer": "answer", "Context": "context", "ContextItem": "context", "DoctorReport": "catalog",
         "Memory": "catalog", "Hit": "recall", "Query": "recall", "Vault": "vault", "WriteResult": "write"}

__all__ = [
    "AmbiguousNote", "Answer", "ConfigError", "Context", "ContextItem", "DoctorReport", "Hit", "Memory",
    "NoteFormatError", "NoteNotFound", "PolicyViolation", "Query", "UnsafePath", "Vault", "VaultNotFound", "VaultmemError", "WriteConflict",
    "WriteResult", "__version__",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'vaultmem' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
