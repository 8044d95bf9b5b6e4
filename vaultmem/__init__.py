"""vaultmem: long-term memory for AI agents that lives in an Obsidian/Markdown vault."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import (
    AmbiguousNote,
    ConfigError,
    MissingExtra,
    NamespaceDenied,
    NoteFormatError,
    NoteNotFound,
    OwnerOnly,
    PolicyViolation,
    UnsafePath,
    VaultmemError,
    VaultNotFound,
    WriteConflict,
)

if TYPE_CHECKING:
    from .recall.answer import Answer
    from .recall.catalog import DoctorReport, Memory
    from .recall.feed import Change, Changes
    from .recall.context import Context, ContextItem
    from .recall.ranking import Hit, Query
    from .store.caller import Caller
    from .store.tokens import Token
    from .vault import Vault
    from .store.events import device_info, reset_device_id
    from .sync.mergedriver import run_merge_driver
    from .text.encoding import decode_text
    from .write.drafts import OWN_PROPERTIES
    from .write.items import WriteResult, read_jsonl

__version__ = "0.1.0"

# Loaded on first use (PEP 562): `import vaultmem` stays cheap, and a write never imports numpy.
_LAZY = {"Answer": "recall.answer", "Caller": "store.caller", "Change": "recall.feed", "Changes": "recall.feed",
         "Context": "recall.context", "ContextItem": "recall.context",
         "DoctorReport": "recall.catalog", "Memory": "recall.catalog", "Hit": "recall.ranking", "Query": "recall.ranking",
         "OWN_PROPERTIES": "write.drafts", "Token": "store.tokens", "Vault": "vault", "WriteResult": "write.items",
         "decode_text": "text.encoding", "device_info": "store.events", "read_jsonl": "write.items",
         "reset_device_id": "store.events", "run_merge_driver": "sync.mergedriver"}

__all__ = [
    "AmbiguousNote", "Answer", "Caller", "Change", "Changes", "ConfigError", "Context", "ContextItem", "DoctorReport",
    "Hit", "Memory", "MissingExtra", "NamespaceDenied", "NoteFormatError", "NoteNotFound", "OWN_PROPERTIES",
    "OwnerOnly", "PolicyViolation", "Query", "Token", "UnsafePath", "Vault", "VaultNotFound", "VaultmemError",
    "WriteConflict",
    "WriteResult", "__version__", "decode_text", "device_info", "read_jsonl", "reset_device_id", "run_merge_driver",
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
