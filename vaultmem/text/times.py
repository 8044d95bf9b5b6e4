"""Times every layer agrees on: the bounds of a timestamp a note or a log line may hold."""

from __future__ import annotations

import datetime as dt

__all__ = ["FIRST_TS", "LAST_TS"]

# Seconds a datetime can show in every time zone: a day inside the years 1 to 9999.
FIRST_TS = dt.datetime(1, 1, 2, tzinfo=dt.timezone.utc).timestamp()
LAST_TS = dt.datetime(9999, 12, 30, tzinfo=dt.timezone.utc).timestamp()
