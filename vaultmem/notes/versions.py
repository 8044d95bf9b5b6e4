"""Version vectors in a note's `version` property: `[laptop-1:3, desk-2:1]`, one counter per device
that wrote the note (the merge driver joins two by the higher counter per device)."""

from __future__ import annotations

from typing import Any

__all__ = ["bump_version"]


def bump_version(version: Any, device: str) -> list[str]:
    """The version vector with this device's counter raised by one (a device new to it starts at 1)."""
    entries = [str(v) for v in version] if isinstance(version, list) else []
    for i, entry in enumerate(entries):
        name, _, count = entry.rpartition(":")
        if name == device:
            entries[i] = f"{device}:{int(count) + 1 if count.isdigit() else 1}"
            return entries
    return [*entries, f"{device}:1"]
