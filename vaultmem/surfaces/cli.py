"""The `vaultmem` command: thin typer wrappers, each one library call; errors mapped in one place.

Every command's help ends with an example that runs as written on the bundled sample vault
(`export VAULTMEM_VAULT=sample-vault`); tests/test_docs.py runs them all.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from .cli_app import (EXIT_ERROR, EXIT_PROBLEMS, EXTRA_ARGS, HELP_OPTIONS, IdsOpt, JsonOpt, Rec, Rem, TagOpt,
                      VaultOpt, app, no_extra, progress, show_report, sub_app)
from .console import (check_lifecycle, open_vault, print_json, read_stdin, recall_command, remember_command, say,
                      version_line)
from ..errors import VaultmemError


def _version(value: bool) -> None:
    if value:
        say(version_line())
        raise typer.Exit()


@app.callback()
def _main(ctx: typer.Context, vault: VaultOpt = None,
          version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print the version and exit.")] = False) -> None:
    if vault is not None:  # `vaultmem --vault P COMMAND`: P is every command's --vault default
        ctx.default_map = _vault_defaults(ctx.command, vault)


def _vault_defaults(group, vault: Path) -> dict:
    """A default_map giving --vault to every (sub)command that has one; a command's own --vault wins."""
    found = {}
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            found[name] = _vault_defaults(command, vault)
        elif any(param.name == "vault" for param in command.params):
            found[name] = {"vault": vault}
    return found


@app.command()
def init(path: Annotated[Path, typer.Argument(metavar="PATH", help="Folder to make a vault (created if missing).")],
         json_out: JsonOpt = False) -> None:
    """Create a vault: folders, .vaultmem/config.yaml with every setting, templates.

    \b
    Example:
      vaultmem init ~/notes/agent-memory
      Vault ready at
    """
    from ..vault import Vault

    vault = Vault.init(path)
    if json_out:
        print_json({"vault": str(vault.root), "folders": {k: str(v) for k, v in vault.folders.items()}})
    else:
        say(f"Vault ready at {vault.root}")


@app.command(context_settings=EXTRA_ARGS)
def remember(
    ctx: typer.Context,
    text: Annotated[Optional[str], typer.Argument(
        metavar="TEXT", help="The memory; '-' reads it from stdin (omit with --batch).")] = None,
    tag: Rem["tag"] = None,
    source: Rem["source"] = None,
    lifecycle: Rem["lifecycle"] = None,
    score: Rem["score"] = None,
    timestamp: Rem["timestamp"] = None,
    type_: Rem["type_"] = None,
    value: Rem["value"] = None,
    namespace: Rem["namespace"] = None,
    episode: Rem["episode"] = None,
    entity: Rem["entity"] = None,
    candidate: Rem["candidate"] = False,
    supersedes: Rem["supersedes"] = None,
    batch: Annotated[Optional[str], typer.Option(
        metavar="FILE", help="Import a JSON-lines file, one memory an object ('-' for stdin); fields in the "
                             "README.")] = None,
    explain: Rem["explain"] = False,
    refresh: Rem["refresh"] = False,
    vault: Rem["vault"] = None,
    json_out: Rem["json_out"] = False,
) -> None:
    """Store a memory: secrets redacted, values extracted, duplicates merged, entities linked.

    \b
    Example:
      vaultmem remember "Deploy window is Tuesday 22:00" --tag ops --lifecycle fact
      created: memories/
    """
    no_extra(ctx, "the memory text")
    if batch is not None:
        _remember_batch(open_vault(vault), batch, json_out, explain)
        return
    remember_command(text, tag, source, lifecycle, score, timestamp, type_, value, namespace, episode, entity,
                     candidate, supersedes, explain, vault, json_out, refresh)


def _remember_batch(vault, batch: str, json_out: bool, explain: bool) -> None:
    from .. import read_jsonl

    items = list(read_jsonl(_batch_text(batch).splitlines()))
    for number, item in enumerate(items, 1):
        lifecycle = item.get("lifecycle")
        check_lifecycle(vault.settings, lifecycle if lifecycle is None else str(lifecycle), f"item {number}: lifecycle")
    update, close = progress("remembering")
    try:
        # the last memory decided, the notes are written and indexed (a long minute at 100k)
        results = vault.remember_many(items, explain=explain, progress=lambda n: update(
            n, len(items), "writing notes and index" if n == len(items) else None))
    finally:
        close()
    counts = {"created": 0, "merged": 0, "unchanged": 0}
    for r in results:
        counts[r.action] = counts.get(r.action, 0) + 1
    if json_out:  # one result a line: the C encoder (json.dumps(indent=...) runs in Python: ~3 s at 100k)
        head = "".join(f'  "{key}": {number},\n' for key, number in {"total": len(results), **counts}.items())
        encode = json.JSONEncoder(ensure_ascii=False, default=str).encode  # one encoder, not one a result
        lines = ",\n".join(["    " + encode(r.to_dict()) for r in results])
        sys.stdout.write("{\n" + head + '  "results": [\n' + lines + "\n  ]\n}\n")
    else:
        say(f"{len(results)} memories: {counts['created']} created, {counts['merged']} merged, "
            f"{counts['unchanged']} unchanged")


def _batch_text(batch: str) -> str:
    """The text of --batch FILE ('-': stdin), UTF-8 as JSON is (NotText otherwise)."""
    from .. import decode_text

    if batch == "-":
        return read_stdin()
    path = Path(batch)
    if path.is_dir():
        raise VaultmemError(f"{batch} is a directory; --batch takes a JSON-lines file, one memory an object")
    try:  # read, not checked to be a regular file: a pipe (`--batch <(…)`) is a batch too
        return decode_text(path.read_bytes(), batch)
    except FileNotFoundError:
        raise VaultmemError(f"{batch}: no such file") from None


@app.command()
def confirm(ref: Annotated[str, typer.Argument(metavar="REF", help="The candidate's id, path or title.")],
            vault: VaultOpt = None, json_out: JsonOpt = False) -> None:
    """Promote a candidate from the inbox: it becomes an active memory.

    \b
    Example:
      vaultmem confirm "ACK managed clusters may add a management fee"
      confirmed: memories/ACK managed clusters may add a management fee.md
    """
    v = open_vault(vault)
    v.refresh()
    result = v.confirm(ref)
    if json_out:
        print_json(result.to_dict())
    else:
        say(f"confirmed: {result.path} ({result.id})", style="good")


entity_app = sub_app("Entity notes: people, projects, customers.")
app.add_typer(entity_app, name="entity")


@entity_app.command("add", context_settings=EXTRA_ARGS)
def entity_add(ctx: typer.Context,
               name: Annotated[str, typer.Argument(metavar="NAME", help="The entity's name (its note's file name).")],
               alias: Annotated[Optional[list[str]], typer.Option(
                   "--alias", "-a", metavar="NAME", help="Another name it goes by (repeatable).")] = None,
               tag: TagOpt = None, vault: VaultOpt = None, json_out: JsonOpt = False) -> None:
    """Create an entity note (or add aliases to an existing one); mentions then become links.

    \b
    Example:
      vaultmem entity add 张三 --alias "Mr. Zhang"
      merged: entities/张三.md
    """
    no_extra(ctx, "the name")
    v = open_vault(vault)
    v.refresh()
    action, path = v.add_entity(name, alias or [], tag or [])
    if json_out:
        print_json({"action": action, "path": path})
    else:
        say(f"{action}: {path}")


@app.command()
def recall(
    query: Annotated[Optional[str], typer.Argument(
        metavar="QUERY", help="Free text (Chinese, English, ids like CT2024).")] = None,
    tag: Rec["tag"] = None,
    limit: Rec["limit"] = None,
    type_: Rec["type_"] = None,
    source: Rec["source"] = None,
    namespace: Rec["namespace"] = None,
    lifecycle: Rec["lifecycle"] = None,
    status: Rec["status"] = None,
    since: Rec["since"] = None,
    until: Rec["until"] = None,
    as_of: Rec["as_of"] = None,
    include_superseded: Rec["include_superseded"] = False,
    include_candidates: Rec["include_candidates"] = False,
    include_archived: Rec["include_archived"] = False,
    explain: Rec["explain"] = False,
    semantic: Rec["semantic"] = None,
    refresh: Rec["refresh"] = True,
    ids: Rec["ids"] = False,
    vault: Rec["vault"] = None,
    json_out: Rec["json_out"] = False,
) -> None:
    """Recall the memories that best match a query and/or tags, best first.

    \b
    Example:
      vaultmem recall "合同编号" --explain
      1. 客户张三合同编号 CT2024-0876
    """
    recall_command(query, tag, limit, type_, source, namespace, lifecycle, status, since, until, include_superseded,
                   include_candidates, include_archived, explain, refresh, vault, json_out, ids, as_of,
                   semantic)


@app.command()
def context(
    query: Annotated[str, typer.Argument(metavar="QUERY", help="What the prompt is about (free text, any language).")],
    budget: Annotated[int, typer.Option("--budget", "-b", min=1, metavar="TOKENS",
                                        help="Token budget of the block.")] = 800,
    tag: TagOpt = None,
    limit: Annotated[Optional[int], typer.Option("--limit", "-k", min=1, metavar="N",
                                                 help="Memories recalled to choose from (default 30).")] = None,
    source: Rec["source"] = None,
    namespace: Rec["namespace"] = None,
    as_of: Rec["as_of"] = None,
    semantic: Rec["semantic"] = None,
    refresh: Rec["refresh"] = True,
    vault: VaultOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Weave the memories for a query into labelled lines that fit a token budget, for a prompt.

    \b
    Example:
      vaultmem context "张三的合同" --budget 400
      - [from finance-bot, 2026-10-14] 客户 老张 续签后新的合同编号是 CT2024-0876
    """
    v = _refreshed(vault, refresh)
    found = v.context(query, budget, tags=tag or [], limit=limit, source=source, namespace=namespace, as_of=as_of,
                      semantic=semantic)
    if json_out:
        print_json(found.to_dict())
        return
    say(found.text or "No memories match.")
    say(f"({found.tokens} of {found.budget} tokens; {found.dropped} memories left out)", err=True, style="dim")


@app.command()
def ask(
    question: Annotated[str, typer.Argument(metavar="QUESTION", help="A question about an entity's attribute.")],
    min_confidence: Annotated[Optional[float], typer.Option(
        min=0.0, max=1.0, metavar="0..1", help="Answer only at this confidence or above (default 0.6).")] = None,
    as_of: Rec["as_of"] = None,
    semantic: Rec["semantic"] = None,
    refresh: Rec["refresh"] = True,
    vault: VaultOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Answer a question from the value a note holds, with its confidence and note; exit 0 also
    when no answer is confident ("no confident answer"; --json lists the best candidates).

    \b
    Example:
      vaultmem ask "张三的合同编号是多少"
      CT2024-0876  (confidence 1.00, 客户张三合同编号 CT2024-0876, 01M4VZM6H0TGH81P9ENBTTGEQN)
    """
    v = _refreshed(vault, refresh)
    found = v.ask(question, min_confidence=min_confidence, as_of=as_of, semantic=semantic)
    if json_out:
        print_json(found.to_dict())
    elif found.answered:
        say(f"{found.answer}  (confidence {found.confidence:.2f}, {found.title}, {found.id})")
    else:
        say(f"no confident answer: {found.reason}")


def _refreshed(vault: Path | None, refresh: bool):
    """The vault, freshened first (without waiting out another writer) when asked and configured."""
    v = open_vault(vault)
    if refresh and v.settings.index.auto_refresh:
        v.freshen()
    return v


@app.command("mcp")
def mcp_server(
    vault: VaultOpt = None,
    source: Annotated[str, typer.Option(metavar="NAME", help="Who memories written without a source are from.")] = "mcp",
    namespace: Annotated[str | None, typer.Option(
        metavar="NAME", help="Confine the server to this agent's namespace (else $VAULTMEM_NAMESPACE).")] = None,
    trust: Annotated[str | None, typer.Option(
        metavar="LEVEL", help="The most its writes are trusted: external, agent or user (default: as the "
                              "vault's policy rates --source; mcp is agent).")] = None,
) -> None:
    """Serve the vault to MCP clients over stdio (tools remember, recall, ask, context, show, feedback,
    forget; notes as vault://note/{id}) until the client closes the pipe. Needs the 'mcp' extra.

    \b
    Example (what an MCP client's config runs; it ends when its input closes):
      vaultmem mcp --vault sample-vault
    """
    from .mcp import serve

    serve(vault, source, namespace, trust)


@app.command()
def show(ref: Annotated[str, typer.Argument(metavar="REF", help="An id, a vault path or a note title.")],
         vault: VaultOpt = None, json_out: JsonOpt = False) -> None:
    """Show one note by id, path or title.

    \b
    Example:
      vaultmem show 01M4VZM6H0TGH81P9ENBTTGEQN
      客户张三合同编号 CT2024-0876
    """
    memory = open_vault(vault).get(ref)
    shown = memory.to_dict()
    if json_out:
        print_json(shown)
        return
    say(memory.title, style="title")
    say(f"{memory.path}  id={memory.id}  status={memory.status}", style="dim")
    for key, value in shown["meta"].items():
        said = _property(value)
        say(f"  {key}:{' ' + said if said else ''}")
    say("")
    say(memory.content.strip())


def _property(value) -> str:
    """A property (JSON-ready) as YAML says it: lists in brackets, true/false, nothing for null."""
    if isinstance(value, list):
        return "[" + ", ".join(map(_property, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key}: {_property(item)}" for key, item in value.items()) + "}"
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


@app.command("list")
def list_(since: Annotated[Optional[str], typer.Option(metavar="DATE", help="Written on or after this date.")] = None,
          tag: TagOpt = None,
          all_tags: Annotated[bool, typer.Option("--all-tags", help="List every tag with its count instead.")] = False,
          limit: Annotated[Optional[int], typer.Option("--limit", "-k", min=1, metavar="N",
                                                       help="At most this many.")] = None,
          ids: IdsOpt = False, vault: VaultOpt = None, json_out: JsonOpt = False) -> None:
    """List memories newest first (or every tag with --all-tags).

    \b
    Example:
      vaultmem list --since 2026-11-01 --tag atlas
      active      准备 Atlas 验收演示
    """
    v = open_vault(vault)
    v.refresh(wait=False)
    if all_tags:

        counts = v.tag_counts()
        if json_out:
            print_json(counts)
        else:
            for name, count in counts.items():
                say(f"{count:6d}  #{name}")
        return
    memories = v.list(since=since, tags=tag, limit=limit)
    if json_out:
        print_json([m.to_dict() for m in memories])
        return
    for m in memories:
        say(m.id if ids else f"{m.timestamp[:16]:16}  {m.status:10}  {m.title}")


@app.command()
def reindex(full: Annotated[bool, typer.Option(help="Re-parse every note, not only changed ones.",
                                               show_default=True)] = True,
            vault: VaultOpt = None, json_out: JsonOpt = False) -> None:
    """Rebuild the index sidecar from the notes (nothing in the notes changes).

    \b
    Example:
      vaultmem reindex
      Indexed
    """
    v = open_vault(vault)
    update, close = progress("indexing")
    try:
        stats = v.refresh(progress=update, force=full)
        if not full:
            v.index.compact()
    finally:
        close()
    if json_out:
        print_json(stats.__dict__)
    else:
        say(f"Indexed {stats.scanned} notes ({stats.parsed} parsed, {stats.removed} removed).")


@app.command()
def stats(vault: VaultOpt = None, json_out: JsonOpt = False,
          lambda_: Annotated[bool, typer.Option("--lambda", help="The adaptive λ estimate and the pin events it "
                                                                  "comes from, instead of the counts.")] = False) -> None:
    """Counts by kind, status, namespace and lifecycle, and the index's state.

    \b
    Example:
      vaultmem stats
      memories by status
    """
    v = open_vault(vault)
    v.refresh(wait=False)
    if lambda_:
        from .cli_feedback import print_lambda

        report = v.lambda_estimate()
        if json_out:
            print_json(report)
        else:
            print_lambda(report)
        return
    data = v.stats()
    if json_out:
        print_json(data)
        return
    _print_stats(data)


def _print_stats(data: dict) -> None:
    """Plain values as `name  value` lines, then each group of counts as a small table, largest first."""
    plain = {k: v for k, v in data.items() if not isinstance(v, dict)}
    width = max(map(len, plain), default=0)
    for key, value in plain.items():
        say(f"{key.replace('_', ' '):<{width}}  {value}")
    for key, table in data.items():
        if isinstance(table, dict):
            say("")
            say(key.replace("_", " "), style="title")
            rows = sorted(table.items(), key=lambda kv: -kv[1]) if key.startswith(("by_", "memories_by_")) \
                else table.items()
            name_width = max((len(str(name)) for name in table), default=0)
            for name, value in rows:
                say(f"  {str(name):<{name_width}}  {value:>9}")


@app.command()
def doctor(vault: VaultOpt = None, json_out: JsonOpt = False,
           strict: Annotated[bool, typer.Option(
               "--strict", help="Also read every note for secrets and expired notes (for CI; `vaultmem lint`).")] = False) -> None:
    """Find unparsable notes, duplicate ids and memories, broken links, conflict markers, sync-conflict copies and index drift (exit 3 if any).

    \b
    Example:
      vaultmem doctor
      index drift before refresh
    """
    show_report(open_vault(vault).doctor(strict), json_out, _print_report)


@app.command()
def lint(vault: VaultOpt = None, json_out: JsonOpt = False) -> None:
    """Check the vault for CI: `doctor --strict` (parse errors, duplicate ids and memories, dead links,
    conflict markers, sync copies, secrets, expired notes); exit 3 on findings.

    \b
    Example:
      vaultmem lint --json
      "ok"
    """
    doctor(vault=vault, json_out=json_out, strict=True)


def _print_report(report) -> None:
    for item in report.unparsable:
        say(f"unparsable: {item['error']}", style="warn")
    for item in report.bad_log_lines:
        say(f"bad log line (skipped): {item['path']}, line {item['line']}: {item['problem']}", style="warn")
    for note_id, paths in report.duplicate_ids.items():
        say(f"duplicate id {note_id}: {', '.join(paths)} (fold the copies into one: vaultmem repair)", style="warn")
    for group in report.duplicate_memories:
        say(f"duplicate memories ({group['reason']}): {', '.join(group['paths'])}", style="warn")
    for item in report.broken_links:
        say(f"broken link [[{item['link']}]] in {item['path']}", style="warn")
    for item in report.conflict_markers:
        say(f"git conflict markers in {item['path']}, line {item['line']} (a merge bypassed vaultmem's driver; "
            "fix: vaultmem repair)", style="warn")
    for path in report.sync_conflicts:
        say(f"sync conflict copy: {path} (fold it into its note: vaultmem repair)", style="warn")
    for item in report.secrets:
        say(f"secret ({', '.join(item['kinds'])}) in {item['path']}", style="warn")
    for item in report.expired:
        say(f"expired ({item['expires']}): {item['path']} (vaultmem forget {item['id']} --reason expired)", style="warn")
    for item in report.oversized:
        say(f"oversized note: {item['path']} ({item['chars']:,} characters, {item['bytes']:,} bytes; over "
            f"write.max_text_chars): only its first {item['limit']:,} characters are indexed and recalled "
            "(split it into several memories)", style="warn")
    for path in report.missing_ids:
        say(f"no id (found by path until it has one): {path}")
    for warning in report.warnings:
        say(f"warning: {warning}", style="warn")
    drift = report.drift
    say(f"index drift before refresh: {drift['new']} new, {drift['changed']} changed, {drift['deleted']} deleted")
    say("ok" if report.ok else "problems found", style="good" if report.ok else "warn")


# The topic modules register their commands on cli_app's app as they are imported (after this module's
# own, the order `vaultmem --help` lists them in); none imports this module back.
from . import cli_watch  # noqa: E402,F401
from . import cli_repair  # noqa: E402,F401
from . import cli_feedback  # noqa: E402,F401
from . import cli_forget  # noqa: E402,F401
from . import cli_sync  # noqa: E402,F401
from . import cli_hermes  # noqa: E402,F401
from . import cli_consolidate  # noqa: E402,F401
from . import cli_http  # noqa: E402,F401
from . import cli_hooks  # noqa: E402,F401
from . import cli_encrypt  # noqa: E402,F401
from . import cli_semantic  # noqa: E402,F401
from . import cli_overview  # noqa: E402,F401


__all__ = ["EXIT_ERROR", "EXIT_PROBLEMS", "EXTRA_ARGS", "HELP_OPTIONS", "IdsOpt", "JsonOpt", "Rec", "Rem",
           "TagOpt", "VaultOpt", "app", "ask", "confirm", "context", "doctor", "entity_add", "entity_app",
           "init", "lint", "list_", "mcp_server", "recall", "reindex", "remember", "show", "show_report", "stats",
           "sub_app"]
