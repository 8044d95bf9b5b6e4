"""Command bodies shared by the typer CLI and the fast `recall`/`remember` paths (no typer here).

`vaultmem recall` and `vaultmem remember` are what agents and hooks call most; importing typer
costs more than either, so `__main__` parses their plain forms with argparse and runs the same body.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from .errors import VaultmemError, VaultNotFound

VAULT_ENV = ("VAULTMEM_VAULT", "OBSIDIAN_VAULT_PATH")
HIDDEN_FLAGS = {"include_superseded": "superseded", "include_candidates": "candidate",
                "include_archived": "archived"}


def open_vault(path: Path | str | None):
    """The vault named by --vault (the environment is consulted by the caller's option parser)."""
    from .vault import Vault

    if path is None:
        raise VaultNotFound("no vault given: use --vault PATH or set VAULTMEM_VAULT (or OBSIDIAN_VAULT_PATH)")
    return Vault(path)


# Control characters a terminal acts on (ESC starts sequences that clear it, retitle its window,
# rewrite the clipboard...); a note from a shared vault must not reach it with them. Line breaks
# and tabs are text.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_JSON_CONTROLS = re.compile("[\x7f-\x9f]")  # what json.dumps leaves raw with ensure_ascii=False


def terminal_safe(text: str) -> str:
    """The text with control characters other than line breaks and tabs shown as `\\xNN`."""
    return _CONTROLS.sub(lambda m: f"\\x{ord(m[0]):02x}", text)


def say(text: str = "", err: bool = False) -> None:
    """Print a line for a person (stdout, or stderr with err): how all such text reaches the terminal."""
    print(terminal_safe(text), file=sys.stderr if err else sys.stdout)


def print_json(data: Any) -> None:
    """Indented UTF-8 JSON on stdout (C1 controls escaped too, as JSON allows)."""
    text = json.dumps(data, ensure_ascii=False, indent=2, default=str)
    sys.stdout.write(_JSON_CONTROLS.sub(lambda m: f"\\u{ord(m[0]):04x}", text) + "\n")


def epoch(value: str | None, end_of_day: bool = False) -> float | None:
    """POSIX seconds of a YYYY-MM-DD or ISO 8601 option (a bare date ends at midnight with end_of_day)."""
    from .records import given_epoch

    return None if value is None else given_epoch(value, end_of_day)


def recall_command(query: str | None, tag: list[str] | None, limit: int | None, type_: str | None,
                   source: str | None, namespace: str | None, lifecycle: str | None, status: list[str] | None,
                   since: str | None, until: str | None, include_superseded: bool, include_candidates: bool,
                   include_archived: bool, explain: bool, refresh: bool, vault: Path | str | None,
                   json_out: bool) -> None:
    """`vaultmem recall`: refresh, recall, print."""
    v = open_vault(vault)
    if refresh and v.config["index"]["auto_refresh"]:
        v.refresh(wait=False)  # during another writer's batch: answer from what is indexed
    flags = {"include_superseded": include_superseded, "include_candidates": include_candidates,
             "include_archived": include_archived}
    include = [status_name for flag, status_name in HIDDEN_FLAGS.items() if flags[flag]]
    hits = v.recall(query or "", tags=tag or [], limit=limit, type=type_, source=source, namespace=namespace,
                    lifecycle=lifecycle, status=status, include=include, since=epoch(since),
                    until=epoch(until, True))
    if json_out:
        print_json([h.to_dict() for h in hits])
    elif not hits:
        say("No memories match.")
    for rank, hit in enumerate([] if json_out else hits, 1):
        _print_hit(rank, hit, explain)


def _print_hit(rank: int, hit, explain: bool) -> None:
    tags = " ".join("#" + t for t in hit.tags)
    say(f"{rank}. {hit.title}  [{hit.timestamp[:10]} · {hit.source or '-'}]  {tags}")
    say("   " + " ".join(hit.content.split())[:200])
    if explain:
        parts = "  ".join(f"{k}={v:.3f}" for k, v in hit.channels.items())
        say(f"   {parts}  score={hit.score:g} decay={hit.decay:.3f} effective={hit.effective:.3f} "
            f"final={hit.final:.3f}  ({hit.path})")


def remember_command(text: str | None, tag: list[str] | None, source: str | None, lifecycle: str | None,
                     score: float | None, timestamp: str | None, type_: str | None, value: str | None,
                     namespace: str | None, episode: str | None, entity: list[str] | None, candidate: bool,
                     supersedes: str | None, explain: bool, vault: Path | str | None, json_out: bool,
                     refresh: bool = False) -> None:
    """`vaultmem remember TEXT`: run the write pipeline, print what happened.

    No rescan first (it costs more than the write at 10k notes): dedup sees the index as of the
    last recall, refresh or watcher pass; `--refresh` rescans first.
    """
    if not text:
        raise VaultmemError("nothing to remember: give a TEXT or --batch FILE")
    v = open_vault(vault)
    if refresh:
        v.refresh()
    result = v.remember(text, tags=tag, source=source, lifecycle=lifecycle, score=score, timestamp=timestamp,
                        type=type_, value=value, namespace=namespace, episode=episode, entity=entity,
                        candidate=candidate or None, supersedes=supersedes, explain=explain)
    if json_out:
        print_json(result.to_dict())
        return
    say(f"{result.action}: {result.path} ({result.id})")
    if explain:
        _print_explain(result)


def _print_explain(result) -> None:
    info = result.explain or {}
    say(f"  type: {result.type or '-'}  value: {result.value or '-'}  score: {result.score:g}"
        f"  status: {result.status}  tags: {', '.join(result.tags) or '-'}")
    for label, points in info.get("importance", []):
        say(f"  importance {points:+g}  {label}")
    for item in info.get("values", []):
        say(f"  extracted {item['type']}: {item['value']}")
    if info.get("cues"):
        say(f"  cues: {', '.join(info['cues'])}")
    if info.get("entities"):
        say(f"  linked: {', '.join(info['entities'])}")
    if info.get("redacted"):
        say(f"  redacted: {', '.join(info['redacted'])}")
    say(f"  trust: {info.get('trust')}  decision: {info.get('decision')}")


def _parser(prog: str) -> argparse.ArgumentParser:
    # a fixed width: argparse would import shutil (~5 ms) to measure a terminal it never prints to here
    p = argparse.ArgumentParser(prog=prog, add_help=False, exit_on_error=False,
                                formatter_class=lambda prog: argparse.HelpFormatter(prog, width=80))
    p.error = lambda message: (_ for _ in ()).throw(_Unparsed(message))  # type: ignore[method-assign]
    p.add_argument("--vault", "-V")
    p.add_argument("--json", dest="json_out", action="store_true")
    p.add_argument("--tag", "-t", action="append")
    for name in ("--type", "--source", "--namespace", "--lifecycle"):
        p.add_argument(name)
    return p


def _remember_parser() -> argparse.ArgumentParser:
    p = _parser("vaultmem remember")
    p.add_argument("text")
    p.add_argument("--score", type=float)
    for name in ("--timestamp", "--value", "--episode", "--supersedes"):
        p.add_argument(name)
    p.add_argument("--entity", action="append")
    for flag in ("candidate", "explain", "refresh"):
        p.add_argument(f"--{flag}", action="store_true")
    return p


def _recall_parser() -> argparse.ArgumentParser:
    p = _parser("vaultmem recall")
    p.add_argument("query", nargs="?")
    p.add_argument("--limit", "-k", type=int)
    for name in ("--since", "--until"):
        p.add_argument(name)
    p.add_argument("--status", action="append")
    for flag in ("include-superseded", "include-candidates", "include-archived", "explain", "refresh"):
        p.add_argument(f"--{flag}", action=argparse.BooleanOptionalAction, default=flag == "refresh")
    return p


class _Unparsed(Exception):
    pass


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> dict[str, Any]:
    try:
        opts = vars(parser.parse_args(argv))
    except (argparse.ArgumentError, _Unparsed):
        raise _Unparsed from None
    opts["type_"] = opts.pop("type")
    if opts["vault"] is None:
        opts["vault"] = next((os.environ[e] for e in VAULT_ENV if os.environ.get(e)), None)
    return opts


def fast_recall(argv: list[str]) -> int | None:
    """Run `recall ARGS` without typer; None when the arguments need the full CLI (help, errors)."""
    try:
        opts = _parse(_recall_parser(), argv)
    except _Unparsed:
        return None
    if opts["limit"] is not None and opts["limit"] < 1:
        return None
    return guarded(recall_command, **opts)


def fast_remember(argv: list[str]) -> int | None:
    """Run `remember TEXT ARGS` without typer; None when the arguments need the full CLI."""
    try:
        opts = _parse(_remember_parser(), argv)
    except _Unparsed:
        return None
    return guarded(remember_command, **opts)


def error_message(exc: BaseException) -> str | None:
    """The one-line message for an error a user can meet; None for Ctrl-C and exits.

    Anything that is not a VaultmemError is a bug or an environment problem: it still gets one
    line (with VAULTMEM_DEBUG=1 the traceback is shown instead).
    """
    if isinstance(exc, VaultmemError):
        return f"Error: {exc}"
    if isinstance(exc, OSError):
        return f"Error: {exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else "")
    if isinstance(exc, Exception) and not os.environ.get("VAULTMEM_DEBUG"):
        return f"Error: unexpected {type(exc).__name__}: {exc} (VAULTMEM_DEBUG=1 shows the traceback)"
    return None


def guarded(fn, *args: Any, **kwargs: Any) -> int:
    """Run a command body; a known error becomes one line on stderr and exit code 1."""
    try:
        fn(*args, **kwargs)
    except Exception as exc:
        message = error_message(exc)
        if message is None:
            raise
        say(message, err=True)
        return 1
    return 0
