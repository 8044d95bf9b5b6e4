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
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import DISTRIBUTION, MissingArgument, MissingExtra, VaultmemError, VaultNotFound

if TYPE_CHECKING:
    from ..settings import Settings

VAULT_ENV = ("VAULTMEM_VAULT", "OBSIDIAN_VAULT_PATH")
HIDDEN_FLAGS = {"include_superseded": "superseded", "include_candidates": "candidate",
                "include_archived": "archived"}


class Opt(NamedTuple):
    """One command-line option, declared once: cli.py makes the typer option of it, _parser the argparse one."""

    flags: tuple[str, ...]        # the long name first
    help: str
    kind: type = str              # str, int, float or bool (a flag)
    metavar: str | None = None    # shown in --help; None for flags
    many: bool = False            # repeatable: the value is a list
    default: Any = None
    negatable: bool = False       # a flag that also has --no-<name>
    minimum: int | None = None    # below it the full CLI reports the usage error


VAULT = Opt(("--vault", "-V"), "The vault folder (else $VAULTMEM_VAULT, else $OBSIDIAN_VAULT_PATH).",
            metavar="PATH")
JSON = Opt(("--json",), "Print JSON (stable fields, see README) instead of text; errors too, on stderr.", bool,
           default=False)
TAG = Opt(("--tag", "-t"), "A tag (repeatable).", metavar="TAG", many=True)
IDS = Opt(("--ids",), "Print only the ids, one a line (for scripts).", bool, default=False)
LIMIT = Opt(("--limit", "-k"), "How many hits.", int, "N", minimum=1)
SEMANTIC = Opt(("--semantic",), "Also recall by meaning (the 'semantic' extra; default: semantic.enabled in the "
               "config, or $VAULTMEM_SEMANTIC).", bool, negatable=True)

REMEMBER_OPTIONS = {
    "tag": TAG,
    "source": Opt(("--source",), "Who writes it: user, an agent name, web, import:<x>.", metavar="NAME"),
    "lifecycle": Opt(("--lifecycle",), "Sets the half-life: task, note, event, preference, fact, permanent "
                                       "(the config's half_life_hours may add more).", metavar="NAME"),
    "score": Opt(("--score",), "Importance 0..10 (default: computed, see --explain).", float, "0..10"),
    "timestamp": Opt(("--timestamp",), "When it happened (ISO 8601), for imports.", metavar="TIME"),
    "type_": Opt(("--type",), "fact, preference, event, task, lesson, …", metavar="TYPE"),
    "value": Opt(("--value",), "A structured value (an id, a date, a number).", metavar="VALUE"),
    "namespace": Opt(("--namespace",), "shared (default), or an agent's private space.", metavar="NAME"),
    "episode": Opt(("--episode",), "Session or conversation id grouping memories.", metavar="ID"),
    "entity": Opt(("--entity",), "An entity the memory is about (repeatable); its note is created if missing.",
                  metavar="NAME", many=True),
    "candidate": Opt(("--candidate",), "Stage it in the inbox until `vaultmem confirm`.", bool, default=False),
    "supersedes": Opt(("--supersedes",), "Id or title of the memory this one replaces.", metavar="REF"),
    "explain": Opt(("--explain",), "Show the extraction, importance and dedup decision.", bool, default=False),
    "refresh": Opt(("--refresh",), "Rescan notes changed on disk first (batches always do), so dedup sees "
                                   "hand edits.", bool, default=False),
    "vault": VAULT,
    "json_out": JSON,
}
RECALL_OPTIONS = {
    "tag": Opt(("--tag", "-t"), "Only memories with this tag (repeatable: all of them).", metavar="TAG", many=True),
    "limit": LIMIT,
    "type_": Opt(("--type",), "Only this type.", metavar="TYPE"),
    "source": Opt(("--source",), "Only from this source.", metavar="NAME"),
    "namespace": Opt(("--namespace",), "Namespace to read (default: shared plus your own, $VAULTMEM_NAMESPACE "
                     "or the vault's default; '*' reads all).", metavar="NAME"),
    "lifecycle": Opt(("--lifecycle",), "Only this lifecycle.", metavar="NAME"),
    "status": Opt(("--status",), "Only these statuses (repeatable).", metavar="STATUS", many=True),
    "since": Opt(("--since",), "Written on or after (YYYY-MM-DD or ISO 8601).", metavar="DATE"),
    "until": Opt(("--until",), "Written on or before (YYYY-MM-DD or ISO 8601).", metavar="DATE"),
    "as_of": Opt(("--as-of",), "Answer as the vault stood then: notes written later absent, statuses and strength "
                 "as they were, text edited since as git held it (YYYY-MM-DD counts through its day).", metavar="DATE"),
    "include_superseded": Opt(("--include-superseded",), "Also superseded memories.", bool, default=False),
    "include_candidates": Opt(("--include-candidates",), "Also candidates waiting in the inbox.", bool,
                              default=False),
    "include_archived": Opt(("--include-archived",), "Also archived (forgotten) memories.", bool, default=False),
    "explain": Opt(("--explain",), "Show each hit's channel scores, decay and final score.", bool, default=False),
    "semantic": SEMANTIC,
    "refresh": Opt(("--refresh",), "Re-read notes changed on disk first.", bool, default=True, negatable=True),
    "ids": IDS,
    "vault": VAULT,
    "json_out": JSON,
}


def installed(name: str) -> bool:
    """Whether a package can be imported, without importing it."""
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # ValueError: sys.modules holds None for it (blocked)
        return False


def one_blas_thread() -> None:
    """Let numpy's BLAS start no thread pool, unless the environment asks for one.

    The PyPI wheels' OpenBLAS starts a thread per core as numpy loads: 50-70 ms of a cold recall on
    a 2-core machine, for a library vaultmem never calls (it multiplies no matrices). Set before
    numpy is imported; worker processes inherit it. Called by vaultmem's own processes (the CLI,
    the MCP server), never in a host that imports vaultmem.
    """
    for name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")


def version_line() -> str:
    """What `vaultmem --version` prints."""
    from .. import __version__  # the one home of the version: pyproject.toml reads it from there

    return f"vaultmem {__version__}"


def given_vault(path: Path | str | None) -> Path | str | None:
    """--vault, else $VAULTMEM_VAULT, else $OBSIDIAN_VAULT_PATH (None when none is set)."""
    if path is not None:
        return path
    return next((os.environ[e] for e in VAULT_ENV if os.environ.get(e)), None)


def open_vault(path: Path | str | None):
    """The vault named by --vault or the environment."""
    from ..vault import Vault

    path = given_vault(path)
    if path is None:
        raise VaultNotFound("no vault given: use --vault PATH or set VAULTMEM_VAULT (or OBSIDIAN_VAULT_PATH)")
    vault = Vault(path)
    if sys.stdin.isatty() and sys.stderr.isatty():  # asked only by what cannot go on without it (encrypted notes)
        vault.keyring.prompt = ask_passphrase
    return vault


def ask_passphrase(why: str) -> str:
    """The passphrase of the encrypted notes, typed at the terminal (not shown)."""
    import getpass

    return getpass.getpass(f"Passphrase ({why}): ")


def check_lifecycle(settings: Settings, name: str | None, where: str = "--lifecycle") -> None:
    """Refuse a lifecycle the config gives no half-life (a typo would silently decay as `default`)."""
    names = [key for key in settings.half_life_hours if key != "default"]
    if name is not None and name not in names:  # the value is not repeated: it may hold a secret
        raise VaultmemError(f"{where} must be one of {', '.join(names)} (half_life_hours in "
                            ".vaultmem/config.yaml names them)")


# Control characters a terminal acts on (ESC starts sequences that clear it, retitle its window,
# rewrite the clipboard...); a note from a shared vault must not reach it with them. Line breaks
# and tabs are text.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_JSON_CONTROLS = re.compile("[\x7f-\x9f]")  # what json.dumps leaves raw with ensure_ascii=False


def terminal_safe(text: str) -> str:
    """The text with control characters other than line breaks and tabs shown as `\\xNN`."""
    return _CONTROLS.sub(lambda m: f"\\x{ord(m[0]):02x}", text)


_STYLES = {"title": "1", "dim": "2", "error": "31", "good": "32", "warn": "33"}  # ANSI SGR codes


def colour(stream) -> bool:
    """Colour only on a terminal, never with NO_COLOR set (https://no-color.org) or TERM=dumb."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no stream, or a closed one
        return False


def say(text: str = "", err: bool = False, style: str | None = None) -> None:
    """Print a line for a person (stdout, or stderr with err): how all such text reaches the terminal.

    The style (title, dim, error, good, warn) colours the line on a terminal; it is added after the
    text is made terminal-safe, so a note can never send escape sequences of its own.
    """
    stream = sys.stderr if err else sys.stdout
    line = terminal_safe(text)
    if style and colour(stream):
        line = f"\x1b[{_STYLES[style]}m{line}\x1b[0m"
    print(line, file=stream)


def print_json(data: Any) -> None:
    """Indented UTF-8 JSON on stdout (C1 controls escaped too, as JSON allows)."""
    text = json.dumps(data, ensure_ascii=False, indent=2, default=str)
    sys.stdout.write(_JSON_CONTROLS.sub(lambda m: f"\\u{ord(m[0]):04x}", text) + "\n")


def recall_command(query: str | None, tag: list[str] | None, limit: int | None, type_: str | None,
                   source: str | None, namespace: str | None, lifecycle: str | None, status: list[str] | None,
                   since: str | None, until: str | None, include_superseded: bool, include_candidates: bool,
                   include_archived: bool, explain: bool, refresh: bool, vault: Path | str | None,
                   json_out: bool, ids: bool = False, as_of: str | None = None, semantic: bool | None = None) -> None:
    """`vaultmem recall`: refresh, recall, print."""
    v = open_vault(vault)
    if refresh and v.settings.index.auto_refresh:
        v.freshen()  # README "Freshness without a watcher"; during another writer's batch: what is indexed
    flags = {"include_superseded": include_superseded, "include_candidates": include_candidates,
             "include_archived": include_archived}
    include = [status_name for flag, status_name in HIDDEN_FLAGS.items() if flags[flag]]
    hits = v.recall(query or "", tags=tag or [], limit=limit, type=type_, source=source, namespace=namespace,
                    lifecycle=lifecycle, status=status, include=include, since=since,
                    until=until, explain=explain, as_of=as_of, semantic=semantic)
    if json_out:  # with --explain an object, so the list form stays what it was for every other caller
        found = [h.to_dict() for h in hits]
        told = {"hits": found, "suppressed": hits.suppressed, **({"history": hits.history} if as_of else {})}
        print_json(told if explain else found)
    elif ids:
        for hit in hits:
            say(hit.id)
    elif not hits:
        say("No memories match.", err=True)
    if explain and as_of and hits.history and not json_out and not ids:
        say(f"as of {as_of}: {hits.history}", style="dim")
    for rank, hit in enumerate([] if json_out or ids else hits, 1):
        _print_hit(rank, hit, explain)
    if explain and not json_out and not ids:
        _print_suppressed(hits.suppressed)


def _print_hit(rank: int, hit, explain: bool) -> None:
    tags = " ".join("#" + t for t in hit.tags)
    say(f"{rank}. {hit.title}  [{hit.timestamp[:10]} · {hit.source or '-'}]  {tags}", style="title")
    say("   " + " ".join(hit.content.split())[:200])
    if explain:
        if hit.as_of:
            told = hit.as_of
            say(f"   as of {told['date'][:10]}: written {told.get('written', '?')[:16]} (dated by "
                f"{told.get('dated_by', '?')}), status then {told.get('status', '?')}, text {told.get('text', '?')}",
                style="dim")
        parts = "  ".join(f"{k}={v:.3f}" for k, v in hit.channels.items())
        say(f"   {parts}  score={hit.score:g} decay={hit.decay:.3f} effective={hit.effective:.3f} "
            f"final={hit.final:.3f}  ({hit.path})", style="dim")
        own = [f"{k}={v:g}" if not isinstance(v, bool) else k for k, v in hit.policy.items()]
        if hit.feedback:
            own.append(f"feedback={hit.feedback['weight']:.3f} (+{hit.feedback['up']}/-{hit.feedback['down']}"
                       + (f", decayed x{hit.feedback['decayed']:.3f})" if "decayed" in hit.feedback else ")"))
        if own:
            say(f"   {'  '.join(own)}", style="dim")


def _print_suppressed(suppressed: list[dict]) -> None:
    """What decay alone kept out of the top k (recall --explain)."""
    if not suppressed:
        return
    say("suppressed by decay (would be in the top k without it):", style="title")
    for item in suppressed:
        say(f"   {item['title']}  rank without decay {item['rank_without_decay']}  decay={item['decay']:.3f}  "
            f"lexical={item['lexical']:.3f}  ({item['path']})", style="dim")


def remember_command(text: str | None, tag: list[str] | None, source: str | None, lifecycle: str | None,
                     score: float | None, timestamp: str | None, type_: str | None, value: str | None,
                     namespace: str | None, episode: str | None, entity: list[str] | None, candidate: bool,
                     supersedes: str | None, explain: bool, vault: Path | str | None, json_out: bool,
                     refresh: bool = False) -> None:
    """`vaultmem remember TEXT`: run the write pipeline, print what happened.

    No rescan first (it costs more than the write at 10k notes): dedup sees the index as of the
    last recall, refresh or watcher pass; `--refresh` rescans first.
    """
    if text == "-":  # `echo … | vaultmem remember -`, as cat and git read stdin
        text = read_stdin()
    if not text or not text.strip():
        raise VaultmemError("nothing to remember: give a TEXT ('-' reads it from stdin) or --batch FILE")
    v = open_vault(vault)
    check_lifecycle(v.settings, lifecycle)
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


def read_stdin() -> str:
    """All of stdin as UTF-8 text, whatever the locale says (notes and JSON lines are UTF-8); NotText
    naming the first byte that is not."""
    from .. import decode_text

    return decode_text(sys.stdin.buffer.read(), "stdin")


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


def _parser(prog: str, positional: tuple[str, str | None], options: dict[str, Opt]) -> argparse.ArgumentParser:
    """The argparse twin of a typer command, made from the same option table."""
    # a fixed width: argparse would import shutil (~5 ms) to measure a terminal it never prints to here
    p = argparse.ArgumentParser(prog=prog, add_help=False, exit_on_error=False,
                                formatter_class=lambda prog: argparse.HelpFormatter(prog, width=80))
    p.error = lambda message: (_ for _ in ()).throw(_Unparsed(message))  # type: ignore[method-assign]
    p.add_argument(positional[0], nargs=positional[1])
    for name, spec in options.items():
        if spec.kind is bool:
            action = argparse.BooleanOptionalAction if spec.negatable else "store_true"
            p.add_argument(*spec.flags, dest=name, action=action, default=spec.default)
        else:
            p.add_argument(*spec.flags, dest=name, type=spec.kind, action="append" if spec.many else "store")
    return p


class _Unparsed(Exception):
    pass


def _parse(parser: argparse.ArgumentParser, options: dict[str, Opt], argv: list[str]) -> dict[str, Any] | None:
    """The options of argv, or None when the full CLI must say what is wrong with them."""
    try:
        opts = vars(parser.parse_args(argv))
    except (argparse.ArgumentError, _Unparsed):
        return None
    low = [n for n, spec in options.items() if spec.minimum is not None and opts[n] is not None and opts[n] < spec.minimum]
    return None if low else opts


def fast_recall(argv: list[str], vault: str | None = None) -> int | None:
    """Run `recall ARGS` without typer; None when the arguments need the full CLI (help, errors).

    vault is a global `vaultmem --vault P recall …`; the command's own --vault wins over it.
    """
    opts = _parse(_parser("vaultmem recall", ("query", "?"), RECALL_OPTIONS), RECALL_OPTIONS, argv)
    if opts is None:
        return None
    opts["vault"] = opts["vault"] or vault
    return guarded(recall_command, **opts)


def fast_remember(argv: list[str], vault: str | None = None) -> int | None:
    """Run `remember TEXT ARGS` without typer; None when the arguments need the full CLI."""
    opts = _parse(_parser("vaultmem remember", ("text", None), REMEMBER_OPTIONS), REMEMBER_OPTIONS, argv)
    if opts is None:
        return None
    opts["vault"] = opts["vault"] or vault
    return guarded(remember_command, **opts)


# what the commands call the API's parameters a MissingArgument names
CLI_NAMES = {"ids": "ID", "tags": "--tag", "query": "--query", "since": "--since", "until": "--until",
             "source": "--source", "reason": "--reason TEXT", "namespaces": "--namespace",
             "all_namespaces": "--all-namespaces"}


def error_message(exc: BaseException) -> str | None:
    """The one-line message for an error a user can meet; None for Ctrl-C and exits.

    Anything that is not a VaultmemError is a bug or an environment problem: it still gets one
    line (with VAULTMEM_DEBUG=1 the traceback is shown instead).
    """
    if isinstance(exc, MissingArgument):
        return f"Error: {exc.said(CLI_NAMES)}"
    if isinstance(exc, VaultmemError):
        return f"Error: {exc}"
    if isinstance(exc, OSError):
        return f"Error: {exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else "")
    if isinstance(exc, Exception) and not os.environ.get("VAULTMEM_DEBUG"):
        return f"Error: unexpected {type(exc).__name__}: {exc} (VAULTMEM_DEBUG=1 shows the traceback)"
    return None


def report_error(message: str, exc: BaseException, json_out: bool) -> None:
    """An error on stderr: one line for a person, or with --json one JSON object for a script."""
    if json_out:
        kind = type(exc).__name__ if isinstance(exc, (VaultmemError, OSError)) else "unexpected"
        sys.stderr.write(json.dumps({"error": message.removeprefix("Error: "), "kind": kind, "exit_code": 1},
                                    ensure_ascii=False) + "\n")
    else:
        say(message, err=True, style="error")


def reader_left() -> None:
    """The reader of stdout went away (`vaultmem … | head -1`): drop what is left to print, quietly."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the flush at exit does not fail a second time
    except (OSError, ValueError, AttributeError):  # no real file descriptor behind stdout
        pass


def guarded(fn, *args: Any, json_out: bool = False, **kwargs: Any) -> int:
    """Run a command body; a known error becomes one line on stderr (JSON with json_out) and exit code 1."""
    try:
        fn(*args, json_out=json_out, **kwargs)
    except BrokenPipeError:
        reader_left()
    except Exception as exc:
        message = error_message(exc)
        if message is None:
            raise
        report_error(message, exc, json_out)
        return 1
    return 0


__all__ = ["CLI_NAMES", "DISTRIBUTION", "HIDDEN_FLAGS", "IDS", "JSON", "LIMIT", "MissingExtra", "Opt", "RECALL_OPTIONS", "REMEMBER_OPTIONS", "SEMANTIC", "TAG",
           "VAULT", "VAULT_ENV", "check_lifecycle", "colour", "error_message", "fast_recall", "fast_remember",
           "given_vault", "guarded", "installed", "one_blas_thread", "open_vault", "print_json", "read_stdin", "reader_left",
           "recall_command", "remember_command", "report_error", "say", "terminal_safe", "version_line"]
