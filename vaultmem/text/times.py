"""Times every layer agrees on: how ISO 8601 text is read, and the bounds of a timestamp a note or
a log line may hold."""

from __future__ import annotations

import datetime as dt

__all__ = ["FIRST_TS", "LAST_TS", "iso_time", "local_iso"]

# Seconds a datetime can show in every time zone: a day inside the years 1 to 9999.
FIRST_TS = dt.datetime(1, 1, 2, tzinfo=dt.timezone.utc).timestamp()
LAST_TS = dt.datetime(9999, 12, 30, tzinfo=dt.timezone.utc).timestamp()


def iso_time(text: str) -> dt.datetime | None:
    """An ISO 8601 date or time (`Z` for UTC, spaces around ignored), or None."""
    try:
        return dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None


def local_iso(ts: float) -> str:
    """POSIX seconds as this machine's local time in ISO 8601, to the second (what a person reads)."""
    return dt.datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds")
