"""The provider's background writer: Hermes' turn hooks hand it work and return at once.

One daemon thread runs jobs in the order they came (a turn, then a mirrored `memory` tool write,
then the next turn), so a replace never lands before the add it replaces. A job that fails is
logged and remembered as `last_error`; it never reaches the agent, which has long moved on.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from ...errors import VaultmemError

log = logging.getLogger("vaultmem.hermes")

_STOP = object()


class TurnWorker:
    """A queue and the one thread that drains it."""

    def __init__(self, name: str = "vaultmem-turns"):
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.last_error = ""
        self.done = 0
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, job: Callable[[], Any]) -> None:
        """Queue a job; returns at once (a put on an unbounded queue takes microseconds)."""
        self._jobs.put(job)

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until every job queued so far has run; False when `timeout` passed first."""
        if not self._thread.is_alive():
            return True
        reached = threading.Event()
        self._jobs.put(reached.set)
        return reached.wait(timeout)

    def close(self, timeout: float = 30.0) -> bool:
        """Run what is queued, then stop the thread; False when it did not finish in time."""
        if self._thread.is_alive():
            self._jobs.put(_STOP)
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is _STOP:
                return
            try:
                job()
                self.done += 1
            except (VaultmemError, OSError) as exc:
                self.last_error = str(exc)
                log.warning("vaultmem: a memory write failed: %s", exc)
            except Exception as exc:  # a bug must not kill the thread that writes every later turn
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.exception("vaultmem: a memory write failed")


def paragraphs(text: str) -> list[str]:
    """A message's paragraphs (blank-line separated), each stripped; a turn's memories are kept one
    per paragraph, so a cue in one does not carry the small talk of the next into the vault."""
    parts = [" ".join(p.split()) for p in text.replace("\r\n", "\n").split("\n\n")]
    return [p for p in parts if p]


def called_tool(messages: list[dict[str, Any]] | None, name: str) -> bool:
    """Whether the turn's assistant messages (those after the last user message) called tool `name`:
    when the model chose what to store, storing the user's words as well would keep it twice."""
    if not messages:
        return False
    for message in reversed(messages):
        if not isinstance(message, dict):
            continue
        if message.get("role") == "user":
            return False
        for call in message.get("tool_calls") or ():
            function = (call or {}).get("function") if isinstance(call, dict) else getattr(call, "function", None)
            called = function.get("name") if isinstance(function, dict) else getattr(function, "name", None)
            if called == name:
                return True
    return False


__all__ = ["TurnWorker", "called_tool", "paragraphs"]
