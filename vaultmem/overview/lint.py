"""The last findings of `vaultmem doctor` or `vaultmem lint`, kept for the report.

A doctor run reads every note (at 100,000 notes it takes longer than the whole report may), so each run
keeps what it found in the index's cache folder (`lint.json`: rebuildable, never committed) and the
report shows that, saying when it was found and how many notes were written or edited since. Without
a kept run, or when asked, the report runs lint itself.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from ..store.files import atomic_write

if TYPE_CHECKING:
    from ..store.store import Store

RECORD = "lint.json"
_SCHEMA = "vaultmem-lint/1"


def keep(vault: Store, report: Any, strict: bool, now: float | None = None) -> None:
    """Keep a doctor report (a recall.catalog.DoctorReport) as the vault's last findings."""
    stamp = time.time() if now is None else now
    record = {"schema": _SCHEMA, "at": stamp, "strict": strict, "findings": report.to_dict()}
    try:
        atomic_write(vault.index.cache_dir / RECORD, json.dumps(record, ensure_ascii=False).encode("utf-8"),
                     durable=False)
    except OSError:  # a full disk or a read-only cache: the findings were printed; the report runs lint itself
        pass


def last(vault: Store) -> dict[str, Any] | None:
    """The last findings kept: {at, strict, findings, changed_since (notes written or edited since)}; None
    when there are none (or the record cannot be read)."""
    try:
        record = json.loads((vault.index.cache_dir / RECORD).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("schema") != _SCHEMA or not isinstance(record.get("findings"), dict):
        return None
    at = float(record.get("at") or 0)
    record["changed_since"] = vault.index.count("mtime_ns > ?", (int(at * 1e9),))
    return record


__all__ = ["RECORD", "keep", "last"]
