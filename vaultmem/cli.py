"""The `vaultmem` command: thin typer wrappers, each one library call; errors mapped in one place."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from typer.core import TyperGroup

from .console import error_message, open_vault, print_json, recall_command, remember_command, say
from .errors import VaultmemError

EXIT_ERROR = 1
EXIT_PROBLEMS = 3  # doctor found problems


class _Group(TyperGroup):
    """Turns every error into one line on stderr and exit code 1, never a traceback."""

    def invoke(self, ctx):  # noqa: D102
        try:
            return super().invoke(ctx)
        except Exception as exc:
            if hasattr(exc, "exit_code"):  # typer/click's own exits, usage errors and aborts
                raise
            message = error_message(exc)
            if message is None:
                raise
            say(message, err=True)
            raise typer.Exit(EXIT_ERROR) from None


app = typer.Typer(cls=_Group, no_args_is_help=True, add_completion=False, rich_markup_mode=None,
                  help="Long-term memory for AI agents in an Obsidian/Markdown vault.\n\n"
                       "The vault is --vault, else $VAULTMEM_VAULT, else $OBSIDIAN_VAULT_PATH.")

VaultOpt = Annotated[Optional[Path], typer.Option(
    "--vault", "-V", envvar=["VAULTMEM_VAULT", "OBSIDIAN_VAULT_PATH"], show_envvar=True,
    help="The vault folder.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (stable fields, see README) instead of text.")]
TagOpt = Annotated[Optional[list[str]], typer.Option("--tag", "-t", help="A tag (repeatable).")]
# Extra arguments are refused by us, not by click, whose message repeats them: an unquoted
# `remember my password is hunter2` must not print the password back
EXTRA_ARGS = {"allow_extra_args": True}


def _no_extra(ctx: typer.Context, what: str) -> None:
    if ctx.args:
        raise VaultmemError(f"{len(ctx.args)} unexpected argument(s) after {what}; quote text that has spaces")


def _progress(label: str):
    """A rich progress bar on a terminal (stderr), silent otherwise; returns (update(done, total, step), close)."""
    if not sys.stderr.isatty():
        return (lambda done, total, step=None: None), (lambda: None)
    from rich.progress import Progress

    bar = Progress(transient=True)
    task = bar.add_task(label, total=None)
    bar.start()

    def update(done: int, total: int, step: str | None = None) -> None:
        bar.update(task, completed=done, total=total, **({"description": step} if step else {}))

    return update, bar.stop


@app.command()
def init(path: Annotated[Path, typer.Argument(help="Folder to make a vault (created if missing).")],
         json_out: JsonOpt = False) -> None:
    """Create a vault: folders, .vaultmem/config.yaml with every setting, templates."""
    from .vault import Vault

    vault = Vault.init(path)
    if json_out:
        print_json({"vault": str(vault.root), "folders": {k: str(v) for k, v in vault.folders.items()}})
    else:
        say(f"Vault ready at {vault.root}")


@app.command(context_settings=EXTRA_ARGS)
def remember(
    ctx: typer.Context,
    text: Annotated[Optional[str], typer.Argument(help="The memory (omit with --batch).")] = None,
    tag: TagOpt = None,
    source: Annotated[Optional[str], typer.Option(help="Who writes it: user, an agent name, web, import:<x>.")] = None,
    lifecycle: Annotated[Optional[str], typer.Option(help="task, note, event, preference, fact, permanent.")] = None,
    score: Annotated[Optional[float], typer.Option(help="Importance 0..10 (default: computed, see --explain).")] = None,
    timestamp: Annotated[Optional[str], typer.Option(help="When it happened (ISO 8601), for imports.")] = None,
    type_: Annotated[Optional[str], typer.Option("--type", help="fact, preference, event, task, lesson, …")] = None,
    value: Annotated[Optional[str], typer.Option(help="A structured value (an id, a date, a number).")] = None,
    namespace: Annotated[Optional[str], typer.Option(help="shared (default), or an agent's private space.")] = None,
    episode: Annotated[Optional[str], typer.Option(help="Session or conversation id grouping memories.")] = None,
    entity: Annotated[Optional[list[str]], typer.Option(
        help="An entity the memory is about (repeatable); its note is created if missing.")] = None,
    candidate: Annotated[bool, typer.Option(help="Stage it in the inbox until `vaultmem confirm`.")] = False,
    supersedes: Annotated[Optional[str], typer.Option(help="Id or title of the memory this one replaces.")] = None,
    batch: Annotated[Optional[str], typer.Option(help="Import a JSON-lines file ('-' for stdin).")] = None,
    explain: Annotated[bool, typer.Option(help="Show the extraction, importance and dedup decision.")] = False,
    refresh: Annotated[bool, typer.Option(
        help="Rescan notes changed on disk first (batches always do), so dedup sees hand edits.")] = False,
    vault: VaultOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Store a memory: secrets redacted, values extracted, duplicates merged, entities linked."""
    _no_extra(ctx, "the memory text")
    if batch is not None:
        _remember_batch(open_vault(vault), batch, json_out, explain)
        return
    remember_command(text, tag, source, lifecycle, score, timestamp, type_, value, namespace, episode, entity,
                     candidate, supersedes, explain, vault, json_out, refresh)


def _remember_batch(vault, batch: str, json_out: bool, explain: bool) -> None:
    from .write import read_jsonl

    if batch == "-":
        lines = sys.stdin.read().splitlines()
    else:
        path = Path(batch)
        if not path.is_file():
            raise VaultmemError(f"{batch}: no such file")
        lines = path.read_text(encoding="utf-8").splitlines()
    items = list(read_jsonl(lines))
    update, close = _progress("remembering")
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


@app.command()
def confirm(ref: Annotated[str, typer.Argument(help="The candidate's id, path or title.")],
            vault: VaultOpt = None, json_out: JsonOpt = False) -> None:
    """Promote a candidate from the inbox: it becomes an active memory."""
    v = open_vault(vault)
    v.refresh()
    result = v.confirm(ref)
    if json_out:
        print_json(result.to_dict())
    else:
        say(f"confirmed: {result.path} ({result.id})")


entity_app = typer.Typer(cls=_Group, no_args_is_help=True, help="Entity notes: people, projects, customers.")
app.add_typer(entity_app, name="entity")


@entity_app.command("add", context_settings=EXTRA_ARGS)
def entity_add(ctx: typer.Context,
               name: Annotated[str, typer.Argument(help="The entity's name (its note's file name).")],
               alias: Annotated[Optional[list[str]], typer.Option(
                   "--alias", "-a", help="Another name it goes by (repeatable).")] = None,
               tag: TagOpt = None, vault: VaultOpt = None, json_out: JsonOpt = False) -> None:
    """Create an entity note (or add aliases to an existing one); mentions then become links."""
    _no_extra(ctx, "the name")
    v = open_vault(vault)
    v.refresh()
    action, path = v.add_entity(name, alias or [], tag or [])
    if json_out:
        print_json({"action": action, "path": path})
    else:
        say(f"{action}: {path}")


hermes_app = typer.Typer(cls=_Group, no_args_is_help=True,
                         help="Hermes Agent: install vaultmem as its memory provider, check it, remove it.")
app.add_typer(hermes_app, name="hermes")
HermesHomeOpt = Annotated[Optional[Path], typer.Option(
    "--hermes-home", envvar="HERMES_HOME", show_envvar=True, help="Hermes' home folder (default ~/.hermes).")]


@hermes_app.command("install")
def hermes_install(hermes_home: HermesHomeOpt = None,
                   vault: Annotated[Optional[Path], typer.Option(
                       "--vault", "-V", help="The vault to use (made a vault if it is not one); default: "
                                             "$VAULTMEM_VAULT, $OBSIDIAN_VAULT_PATH, else $HERMES_HOME/vaultmem.")] = None,
                   json_out: JsonOpt = False) -> None:
    """Write the plugin into $HERMES_HOME/plugins/vaultmem/ and set memory.provider: vaultmem in
    $HERMES_HOME/config.yaml (no other line of it changes).

    \b
    Example:
      vaultmem hermes install --vault ~/Obsidian/Memory
    """
    from .surfaces.hermes import install

    _hermes_report(install(hermes_home, vault), json_out, "installed")


@hermes_app.command("status")
def hermes_status(hermes_home: HermesHomeOpt = None, json_out: JsonOpt = False) -> None:
    """Whether the plugin is installed and active, which vault it uses, and whether it can open it.

    \b
    Example:
      vaultmem hermes status --json
    """
    from .surfaces.hermes import status

    _hermes_report(status(hermes_home), json_out, "status")


@hermes_app.command("uninstall")
def hermes_uninstall(hermes_home: HermesHomeOpt = None, json_out: JsonOpt = False) -> None:
    """Remove the plugin and clear memory.provider when it is vaultmem; the vault and its notes stay.

    \b
    Example:
      vaultmem hermes uninstall --hermes-home ~/.hermes/profiles/coder
    """
    from .surfaces.hermes import uninstall

    _hermes_report(uninstall(hermes_home), json_out, "uninstalled")


def _hermes_report(report: dict, json_out: bool, what: str) -> None:
    if json_out:
        print_json(report)
        return
    say(f"vaultmem for Hermes ({what}):")
    for key, value in report.items():
        say(f"  {key}: {value}")


@app.command()
def recall(
    query: Annotated[Optional[str], typer.Argument(help="Free text (Chinese, English, ids like CT2024).")] = None,
    tag: TagOpt = None,
    limit: Annotated[Optional[int], typer.Option("--limit", "-k", min=1, help="How many hits.")] = None,
    type_: Annotated[Optional[str], typer.Option("--type", help="Only this type.")] = None,
    source: Annotated[Optional[str], typer.Option(help="Only from this source.")] = None,
    namespace: Annotated[Optional[str], typer.Option(help="Only this namespace.")] = None,
    lifecycle: Annotated[Optional[str], typer.Option(help="Only this lifecycle.")] = None,
    status: Annotated[Optional[list[str]], typer.Option(help="Only these statuses (repeatable).")] = None,
    since: Annotated[Optional[str], typer.Option(help="Written on or after (YYYY-MM-DD or ISO 8601).")] = None,
    until: Annotated[Optional[str], typer.Option(help="Written on or before (YYYY-MM-DD or ISO 8601).")] = None,
    include_superseded: Annotated[bool, typer.Option(help="Also superseded memories.")] = False,
    include_candidates: Annotated[bool, typer.Option(help="Also candidates waiting in the inbox.")] = False,
    include_archived: Annotated[bool, typer.Option(help="Also archived (forgotten) memories.")] = False,
    explain: Annotated[bool, typer.Option(help="Show each hit's channel scores, decay and final score.")] = False,
    refresh: Annotated[bool, typer.Option(help="Re-read notes changed on disk first.")] = True,
    vault: VaultOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Recall the memories that best match a query and/or tags, best first."""
    recall_command(query, tag, limit, type_, source, namespace, lifecycle, status, since, until, include_superseded,
                   include_candidates, include_archived, explain, refresh, vault, json_out)


@app.command()
def context(
    query: Annotated[str, typer.Argument(help="What the prompt is about (free text, any language).")],
    budget: Annotated[int, typer.Option("--budget", "-b", min=1, help="Token budget of the block.")] = 800,
    tag: TagOpt = None,
    limit: Annotated[Optional[int], typer.Option("--limit", "-k", min=1,
                                                 help="Memories recalled to choose from (default 30).")] = None,
    source: Annotated[Optional[str], typer.Option(help="Only from this source.")] = None,
    namespace: Annotated[Optional[str], typer.Option(help="Only this namespace.")] = None,
    refresh: Annotated[bool, typer.Option(help="Re-read notes changed on disk first.")] = True,
    vault: VaultOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Weave the memories for a query into labelled lines that fit a token budget, for a prompt.

    \b
    Example:
      vaultmem context "张三的合同" --budget 400
      - [from finance-bot, 2026-10-14] 客户 老张 续签后新的合同编号是 CT2024-0876 …
    """
    v = _refreshed(vault, refresh)
    found = v.context(query, budget, tags=tag or [], limit=limit, source=source, namespace=namespace)
    if json_out:
        print_json(found.to_dict())
        return
    say(found.text or "No memories match.")
    say(f"({found.tokens} of {found.budget} tokens; {found.dropped} memories left out)", err=True)


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="A question about an entity's attribute.")],
    min_confidence: Annotated[Optional[float], typer.Option(
        min=0.0, max=1.0, help="Answer only at this confidence or above (default 0.6).")] = None,
    refresh: Annotated[bool, typer.Option(help="Re-read notes changed on disk first.")] = True,
    vault: VaultOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Answer a question from the value a note holds, with its confidence and note; exit 0 also
    when no answer is confident ("no confident answer"; --json lists the best candidates).

    \b
    Example:
      vaultmem ask "张三的合同编号是多少"
      CT2024-0876  (confidence 0.95, 客户张三合同编号 CT2024-0876, 01M4VZM6H0TGH81P9ENBTTGEQN)
    """
    v = _refreshed(vault, refresh)
    found = v.ask(question, min_confidence=min_confidence)
    if json_out:
        print_json(found.to_dict())
    elif found.answered:
        say(f"{found.answer}  (confidence {found.confidence:.2f}, {found.title}, {found.id})")
    else:
        say(f"no confident answer: {found.reason}")


def _refreshed(vault: Path | None, refresh: bool):
    """The vault, rescanned first (without waiting out another writer) when asked and configured."""
    v = open_vault(vault)
    if refresh and v.config["index"]["auto_refresh"]:
        v.refresh(wait=False)
    return v


@app.command("mcp")
def mcp_server(
    vault: VaultOpt = None,
    source: Annotated[str, typer.Option(help="Who memories written without a source are from.")] = "mcp",
) -> None:
    """Serve the vault to MCP clients over stdio (tools remember, recall, ask, context, show; notes as
    vault://note/{id}) until the client closes the pipe. Needs the 'mcp' extra.

    \b
    Example (what an MCP client's config runs):
      vaultmem mcp --vault ~/notes/agent-memory
    """
    from .surfaces.mcp import serve

    serve(vault, source)


@app.command()
def show(ref: Annotated[str, typer.Argument(help="An id, a vault path or a note title.")],
         vault: VaultOpt = None, json_out: JsonOpt = False) -> None:
    """Show one note by id, path or title."""
    memory = open_vault(vault).get(ref)
    if json_out:
        print_json(memory.to_dict())
        return
    say(f"{memory.title}\n{memory.path}  id={memory.id}  status={memory.status}")
    for key, value in memory.meta.items():
        say(f"  {key}: {value}")
    say("")
    say(memory.content.strip())


@app.command("list")
def list_(since: Annotated[Optional[str], typer.Option(help="Written on or after this date.")] = None,
          tag: TagOpt = None,
          all_tags: Annotated[bool, typer.Option(help="List every tag with its count instead.")] = False,
          limit: Annotated[Optional[int], typer.Option("--limit", "-k", min=1, help="At most this many.")] = None,
          vault: VaultOpt = None, json_out: JsonOpt = False) -> None:
    """List memories newest first (or every tag with --all-tags)."""
    v = open_vault(vault)
    v.refresh(wait=False)
    if all_tags:
        from .catalog import tag_counts

        counts = tag_counts(v)
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
        say(f"{m.timestamp[:16]:16}  {m.status:10}  {m.title}")


@app.command()
def reindex(full: Annotated[bool, typer.Option(help="Re-parse every note, not only changed ones.")] = True,
            vault: VaultOpt = None, json_out: JsonOpt = False) -> None:
    """Rebuild the index sidecar from the notes (nothing in the notes changes)."""
    v = open_vault(vault)
    update, close = _progress("indexing")
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
def stats(vault: VaultOpt = None, json_out: JsonOpt = False) -> None:
    """Counts by kind, status, namespace and lifecycle, and the index's state."""
    v = open_vault(vault)
    v.refresh(wait=False)
    data = v.stats()
    if json_out:
        print_json(data)
        return
    for key, value in data.items():
        say(f"{key}: {value}")


@app.command()
def doctor(vault: VaultOpt = None, json_out: JsonOpt = False) -> None:
    """Find unparsable notes, duplicate ids, broken links and index drift (exit 3 if any)."""
    report = open_vault(vault).doctor()
    if json_out:
        print_json(report.to_dict())
    else:
        _print_report(report)
    if not report.ok:
        raise typer.Exit(EXIT_PROBLEMS)


def _print_report(report) -> None:
    for item in report.unparsable:
        say(f"unparsable: {item['error']}")
    for item in report.bad_log_lines:
        say(f"bad log line (skipped): {item['path']}, line {item['line']}: {item['problem']}")
    for note_id, paths in report.duplicate_ids.items():
        say(f"duplicate id {note_id}: {', '.join(paths)}")
    for item in report.broken_links:
        say(f"broken link [[{item['link']}]] in {item['path']}")
    for path in report.missing_ids:
        say(f"no id (found by path until it has one): {path}")
    for warning in report.warnings:
        say(f"warning: {warning}")
    drift = report.drift
    say(f"index drift before refresh: {drift['new']} new, {drift['changed']} changed, {drift['deleted']} deleted")
    say("ok" if report.ok else "problems found")
