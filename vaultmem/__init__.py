"""vaultmem: long-term memory for AI agents that lives in an Obsidian/Markdown vault."""

from .catalog import DoctorReport, Memory
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
from .recall import Hit, Query
from .vault import Vault
from .write import WriteResult

__version__ = "0.1.0"

__all__ = [
    "AmbiguousNote", "ConfigError", "DoctorReport", "Hit", "Memory", "NoteFormatError", "NoteNotFound",
    "PolicyViolation", "Query", "UnsafePath", "Vault", "VaultNotFound", "VaultmemError", "WriteConflict",
    "WriteResult", "__version__",
]
