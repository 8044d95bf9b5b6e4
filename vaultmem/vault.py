"""The Vault facade: a Store (a vault on disk) with the public operations, each kept in its layer's
module. It composes the layers below it; nothing below imports it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from .errors import NoteNotFound, OwnerOnly
from .store.store import Store

__all__ = ["OWNER_ONLY", "Vault"]

# Operations over the whole vault, not over the notes a caller may see: a caller confined to its
# namespace (store/caller.py) gets OwnerOnly from them. Each would read or change other agents'
# notes (doctor and check_staged report on every note, gc and repair rewrite or archive any,
# sync commits and pulls them all, the hooks and the watcher serve the whole vault; the HTTP tokens open
# it to other callers; a namespace's encryption is set in the vault's config.yaml, and a rekey re-seals every
# encrypted note; the dashboard writes into the person's vault, and the report shows every namespace with
# doctor's findings; embed counts and embeds every namespace's notes).
OWNER_ONLY = ("doctor", "repair", "gc", "sync", "install_hook", "uninstall_hook", "check_staged",
              "lambda_estimate", "watch", "add_token", "tokens", "revoke_token", "token_for", "hook_list",
              "enable_hook", "disable_hook", "test_hook", "wait_for_hooks", "encrypt_namespace", "decrypt_namespace",
              "rekey", "dashboard", "report", "embed")


def _owner_only(vault: Store, operation: str) -> None:
    if vault.caller.confined:
        raise OwnerOnly(f"{operation} works on the whole vault, which is its owner's: an agent confined to "
                        f"namespace {', '.join(vault.caller.own)} cannot run it (run it without "
                        "$VAULTMEM_NAMESPACE, as the vault's owner)")


class Vault(Store):
    """One memory vault. Safe to share between threads; several processes may open the same vault.

    `Vault(path, namespace="alice")` (or $VAULTMEM_NAMESPACE, or `vault.as_caller(Caller(...))` for a
    view sharing this one's index) confines every operation to what that agent may read and change:
    store/caller.py. The operations of OWNER_ONLY are then refused."""

    # -- the public operations (each in its own module; the Vault is their one entry point) ----
    def remember(self, text: str, *, explain: bool = False, **fields: Any):
        """Store one memory through the write pipeline. Fields: tags, source, lifecycle, score,
        timestamp, type, value, namespace, episode, title, entity, candidate, supersedes, position.
        Returns a WriteResult (action 'created', 'merged' or 'unchanged'; `explain` adds the why)."""
        from .write.pipeline import remember

        return self._hot(remember(self, text, explain=explain, **fields))

    def remember_many(self, items: Iterable[dict[str, Any]], progress: Callable[[int], None] | None = None,
                      *, explain: bool = False):
        """Store many memories (dicts with `text` and optional fields), crash-safe and idempotent."""
        from .write.pipeline import remember_many

        results = remember_many(self, items, progress, explain=explain)
        self._hot(*results)
        return results

    def confirm(self, ref: str):
        """Promote a candidate memory from the inbox (status active, moved to memories/)."""
        from .lifecycle.status import confirm

        return confirm(self, ref)

    def forget(self, ref: str, reason: str = ""):
        """Archive a memory: status archived, moved to the archive folder (never deleted), audited."""
        from .lifecycle.status import forget

        return forget(self, ref, reason)

    def memorable(self, text: str) -> list[str]:
        """Why a text is worth remembering by the write pipeline's own extraction (a cue, a typed
        value, a stated preference), or [] for small talk (see write/memorable.py)."""
        from .write.drafts import parse_time
        from .write.extract import Extractor
        from .write.memorable import reasons

        extractor = Extractor.of(self)
        return reasons(extractor.extract(text, parse_time(None)), text)

    def add_entity(self, name: str, aliases: Iterable[str] = (), tags: Iterable[str] = ()) -> tuple[str, str]:
        """Create an entity note (or add aliases to it); returns (action, vault path). An entity a
        clone or a pull brought (not indexed yet) is found by its title or an alias, not made twice."""
        from .write.links import add_entity

        with self.index.writing():
            self.index.catch_up()
            result = add_entity(self, name, aliases, tags=tags)
            self.index.wrote()
        return result

    def recall(self, query: str = "", **options: Any):
        """Recall memories for free text and/or tags. Options are the fields of recall.Query
        (tags, limit, type, source, namespace, lifecycle, status, since, until, kinds, now, explain, as_of,
        semantic);
        since/until/as_of are POSIX seconds or text (`2026-06-30` or ISO 8601; a bare `until` or `as_of`
        date counts through its day). With as_of the answer is the vault as it stood then (recall/asof.py):
        each hit's `as_of` says what dated it, its status then and where its text came from. Returns a ranking.Hits list; with explain=True its `suppressed` lists what decay hid."""
        from .recall.ranking import Query, recall

        return recall(self, Query(text=query, **_dated(options)))

    def context(self, query: str, budget_tokens: int = 800, **recall_options: Any):
        """The memories for a query woven into labelled lines that fit a prompt's token budget
        (a context.Context: `.text` is the block). Options are those of recall()."""
        from .recall.context import weave

        return weave(self, query, budget_tokens, **_dated(recall_options))

    def ask(self, question: str, **options: Any):
        """A direct answer from the value a note holds, or a declined one below the confidence
        threshold (an answer.Answer). Options: min_confidence, and those of recall()."""
        from .recall.answer import ask

        return ask(self, question, **_dated(options))

    def embed(self, progress: Callable[[int, int], None] | None = None):
        """Embed every memory whose text has no current vector, for recall by meaning (the `semantic` extra;
        recall/semantic.py); encrypted notes never are. Returns a semantic.Embedded of the counts."""
        _owner_only(self, "embed")
        from .recall.semantic import embed_all

        return embed_all(self, progress)

    def get(self, ref: str):
        """The memory named by id, vault path or title (a catalog.Memory)."""
        from .recall.catalog import memory_from_row, read_meta

        row = self.resolve(ref)
        if row["type"] == "encrypted" and self.keyring.passphrase() is not None:  # opened in memory
            from .recall.sealed import opened_memory

            return opened_memory(self, row)
        return memory_from_row(row, read_meta(self, row))

    def why(self, ref: str, now: float | None = None):
        """The story of the memory named by id, vault path or title, oldest first: its writing, merges,
        supersedes (with the chain), commits in git (a short diff of the body each), feedback, pins,
        forget/restore, and its strength now and in 30 days (an overview.story.Story). Raises NoteNotFound."""
        from .overview.story import why

        return why(self, ref, now)

    def markdown(self, ref: str) -> str:
        """The whole text of the note named by id, vault path or title, frontmatter included, as it
        is on disk now (an editor's save in progress waited out). Raises NoteNotFound."""
        row = self.resolve(ref)
        try:
            data = self.read_current(self.root / row["path"], row["sha"])
        except FileNotFoundError:  # deleted since the index saw it
            raise NoteNotFound(ref) from None
        return data.decode("utf-8", "replace")

    def list(self, since: str | None = None, tags: list[str] | None = None, limit: int | None = None):
        """Memories newest first, filtered by a start date and tags."""
        from .recall.catalog import list_memories

        return list_memories(self, since, tags, limit=limit)

    def changes(self, since: str | None = None, limit: int = 100):
        """The notes created, changed, moved or removed since cursor `since` (a person's edit found on
        disk, a pull, a vaultmem write), oldest first, as far as this caller may see them; without
        `since`, none and the cursor to follow from. A feed.Changes: pass its `cursor` back as `since`;
        `reset` says the cursor could not be followed on from (re-read, then follow)."""
        from .recall.feed import changes

        return changes(self, since, limit)

    def stats(self) -> dict[str, Any]:
        """Counts and the index's state."""
        from .recall.catalog import stats

        data = stats(self)
        if self.settings.hooks.run and not self.caller.confined:  # the owner's programs, and their failures
            data["hooks"] = {h["name"]: f"{h['state']}, {h['failures']} failed" for h in self.hook_list()}
        return data

    def doctor(self, strict: bool = False):
        """Unparsable notes, duplicates, broken links, conflicts, index drift; with `strict`, secrets
        too (a catalog.DoctorReport)."""
        _owner_only(self, "doctor")
        from .recall.catalog import doctor
        from .lifecycle.encrypt import sealed_warnings
        from .overview.lint import keep
        from .sync.gitsync import sync_warnings

        report = doctor(self, strict)
        report.warnings += sync_warnings(self)
        report.warnings += sealed_warnings(self)
        report.warnings += [f"hook {h['name']} failed {h['failures']} times since it was enabled (last: "
                            f"{h['last_failure']['why']}); the notes were written: `vaultmem hooks list`"
                            for h in self.hook_list() if h["failures"]]
        keep(self, report, strict)  # what `report` shows of lint (overview/lint.py)
        return report

    def report(self, out: str | Path | None = None, *, note: str | None = None, now: float | None = None,
               fresh_lint: bool = False):
        """Write the HTML report (one self-contained file, vaultmem-report.html) into folder `out` (default:
        the index's cache folder): strength over time (and one memory's, `note`: id, path or title), the
        distributions, what decay takes next, the entity graph and the last lint findings (lint run now
        when none were kept, or with fresh_lint). Returns an overview.page.Written (path, bytes)."""
        _owner_only(self, "report")
        from . import __version__
        from .overview.figures import gather
        from .overview.page import write

        figures = gather(self, lambda: self.doctor(strict=True), note, now, fresh_lint)
        return write(figures, Path(out).expanduser() if out is not None else self.index.cache_dir, __version__)

    def dashboard(self, force: bool = False):
        """Write the Obsidian dashboard into the memory root: `Memory dashboard.base` (Bases, Obsidian 1.9+) and
        `Memory dashboard.md` (Dataview). A copy a person edited is kept unless `force`, which backs it up
        first. Returns an overview.dashboard.Dashboard (what was done with each file)."""
        _owner_only(self, "dashboard")
        from .overview.dashboard import write

        return write(self, force)

    def watch(self, **options: Any):
        """Keep the index current while notes change on disk, from a thread of this process; returns
        the started sync.watch.Watcher (stop() it, or use it as a context manager). While it runs,
        other processes' reads skip their rescan. Options: on_update, on_error, quiet, longest.
        Raises WatchLimit when the system allows no more file watches."""
        _owner_only(self, "watch")
        from .sync.watch import Watcher

        return Watcher(self, **options).start()

    def repair(self, dry_run: bool = False):
        """Fold conflict markers, sync tools' copies and duplicate-id copies back into their notes by the
        merge driver's rules, backed up and audited (a repair.RepairReport)."""
        _owner_only(self, "repair")
        from .sync.repair import repair

        return repair(self, dry_run)

    def feedback(self, ref: str, verdict: str, note: str = "", now: float | None = None):
        """Record useful|confirm|wrong|outdated on a memory (an event; wrong/outdated also mark an active
        note needs-verification). Returns a lifecycle.feedback.Marked."""
        from .lifecycle.feedback import feedback

        return feedback(self, ref, verdict, note, now)

    def correct(self, ref: str, text: str, **fields: Any):
        """Write `text` as a new memory superseding the one named (kept as history); a WriteResult."""
        from .lifecycle.feedback import correct

        return correct(self, ref, text, **fields)

    def pin(self, ref: str, now: float | None = None):
        """`pinned: true`: the memory no longer decays; the pin is recorded for adaptive λ."""
        from .lifecycle.feedback import pin

        return pin(self, ref, now)

    def unpin(self, ref: str, now: float | None = None):
        """Remove `pinned`: the memory decays by its lifecycle again."""
        from .lifecycle.feedback import unpin

        return unpin(self, ref, now)

    def lambda_estimate(self) -> dict[str, Any]:
        """The adaptive λ from every device's pin events and the events it came from (stats --lambda)."""
        _owner_only(self, "lambda_estimate")
        from .recall.hindsight import lambda_estimate

        return lambda_estimate(self)

    def forget_where(self, *, ids: Iterable[str] = (), tags: Iterable[str] = (), query: str = "",
                     since: str | None = None, until: str | None = None, source: str | None = None,
                     namespace: str | list[str] | None = "*", reason: str, dry_run: bool = False, hard: bool = False,
                     now: float | None = None):
        """Archive (hard: delete) every memory matching all the selectors given, with a required reason;
        dry_run only lists them. `namespace` as recall takes it ("*" every one the caller may change,
        the default here: a person's command; None the caller's default ones). Returns a lifecycle.forget.Forgotten.
        `forget(ref)` is the one-note form."""
        from .lifecycle.forget import Selection, forget_where

        names = self.namespaces(namespace)
        selection = Selection(tuple(ids), tuple(tags), query, since, until, source,
                              None if names is None else tuple(names))
        return forget_where(self, selection, reason, dry_run=dry_run, hard=hard, now=now)

    def restore(self, ref: str, now: float | None = None):
        """Undo an archive: back to memories/ with the status it had before (audited); a WriteResult."""
        from .lifecycle.status import restore

        return restore(self, ref, now)

    def decay(self, tags: Iterable[str], factor: float, reason: str = "", now: float | None = None):
        """Scale the strength of the memories with all these tags by factor (0 < F <= 1): an audited event
        each, folded into ranking, no note rewritten. Returns a lifecycle.gc.Decayed."""
        from .lifecycle.gc import decay_where

        return decay_where(self, list(tags), factor, reason, now)

    def gc(self, *, dry_run: bool = False, include_user: bool = False, include_permanent: bool = False,
           now: float | None = None):
        """Archive the memories below `gc.threshold` and unused for `gc.unused_days` (never pinned ones;
        user-trust and permanent ones only when asked). Returns a lifecycle.forget.Forgotten."""
        _owner_only(self, "gc")
        from .lifecycle.gc import gc
        from .recall.ranking import effective_strength

        return gc(self, effective_strength(self), dry_run=dry_run, include_user=include_user,
                  include_permanent=include_permanent, now=now)

    def consolidate(self, dry_run: bool = False, min_repeats: int | None = None):
        """Turn repeated events or choices into one consolidated note each, linking its sources
        (a lifecycle.consolidate.Report; dry_run lists the groups and writes nothing)."""
        from .lifecycle.consolidate import consolidate

        return consolidate(self, dry_run, min_repeats)

    def trust_of(self, source: str) -> str:
        """How the vault's policy rates a source: 'user', 'agent' or 'external' (policy.user_sources,
        policy.external_sources in config.yaml)."""
        from .write.policy import Policy

        return Policy.of(self).trust(source)

    def as_surface(self, source: str, namespace: str | None = None, trust: str | None = None) -> Vault:
        """A view of this vault for a surface (MCP, Hermes, HTTP) that writes as `source`: confined to
        `namespace` (else $VAULTMEM_NAMESPACE, else not confined), its writes trusted at most `trust`,
        else as the policy rates `source` itself. What a client says its `source` is stays provenance:
        it can lower a write's trust, never raise it (store/caller.py)."""
        from .store.caller import Caller

        own = namespace if namespace is not None else Caller.from_env().namespace
        return self.as_caller(Caller(namespace=own, trust=trust or self.trust_of(source), name=source))

    def use_working_set(self, size: int | None = None):
        """Keep a working set for this long-lived process (size: `working_set.size`, 2,048): memories it
        writes or uses answer exact lookups first and weigh in recall (recall/workingset.py). Returns it."""
        from .recall.workingset import WorkingSet

        self.working_set = WorkingSet(int(size or self.settings.working_set.size))
        return self.working_set

    def resolve(self, ref: str) -> dict[str, Any]:
        """The index row of a note named by id, vault path or title: from the working set when it holds
        the memory unchanged, else from the index (see Store.resolve)."""
        hot = self.working_set
        row = hot.lookup(ref, str(self.root)) if hot is not None else None
        if row is not None and not self.sees(row["namespace"]):
            row = None  # another caller's view put it there; Store.resolve does not find it either
        if row is None:
            row = super().resolve(ref)
            if hot is not None and row["kind"] == "memory":
                hot.remember_row(row)
        return row

    def tag_counts(self) -> dict[str, int]:
        """Every tag of the vault's memories (normalised) with how many carry it, most used first."""
        from .recall.catalog import tag_counts

        return tag_counts(self)

    def containing(self, text: str, tags: Iterable[str] = (), namespace: str | None = None) -> list[Any]:
        """The active memories (with these tags, in this namespace) whose text holds `text` as a reader
        sees it (wikilinks shown as their text, spacing and case of the surrounding text aside)."""
        from .text.terms import shown_text

        wanted = shown_text(text)
        return [m for m in self.list(tags=list(tags) or None)
                if m.status == "active" and (namespace is None or m.namespace == namespace)
                and wanted in shown_text(m.content)]

    # -- encrypted notes (lifecycle/encrypt.py; README "Encrypted notes") ---------------------------
    def unlock(self, passphrase: str | None) -> None:
        """Give this Vault (and its views) the passphrase of the encrypted notes; None: back to
        $VAULTMEM_PASSPHRASE. Nothing is checked until a note is opened or written with it."""
        self.keyring.unlock(passphrase)

    def encrypt(self, *refs: str):
        """Seal memories (ids, paths or titles) with the passphrase: their text and properties (but those
        lifecycle needs) become ciphertext, each file `Encrypted <id>.md`. Returns a lifecycle.encrypt.Sealing."""
        from .lifecycle.encrypt import encrypt

        return encrypt(self, list(refs))

    def decrypt(self, *refs: str):
        """Make sealed memories plain notes again (named from their titles); all are opened before the first
        is written. Returns a Sealing."""
        from .lifecycle.encrypt import decrypt

        return decrypt(self, list(refs))

    def encrypt_namespace(self, namespace: str):
        """Seal every memory of a namespace and write its new ones sealed (`encryption.namespaces`)."""
        _owner_only(self, "encrypt_namespace")
        from .lifecycle.encrypt import encrypt

        return encrypt(self, [], namespace)

    def decrypt_namespace(self, namespace: str):
        """Make every sealed memory of a namespace plain, and its new ones plain from now on."""
        _owner_only(self, "decrypt_namespace")
        from .lifecycle.encrypt import decrypt

        return decrypt(self, [], namespace)

    def rekey(self, new_passphrase: str):
        """Seal every encrypted note again under a new passphrase (the current one is the keyring's); a rekey
        stopped half-way is taken up again by the same call. Returns a Sealing."""
        _owner_only(self, "rekey")
        from .lifecycle.encrypt import rekey

        return rekey(self, new_passphrase)

    # -- sync: one memory on every machine -------------------------------------------------------
    def sync(self, dry_run: bool = False) -> dict[str, Any]:
        """Commit, pull (merging notes field by field), push and refresh through git (sync.gitsync);
        what was done, as a dict."""
        _owner_only(self, "sync")
        from .sync.gitsync import sync

        return sync(self, dry_run)

    def export_records(self) -> Iterator[dict[str, Any]]:
        """Every note as an export record (schema vaultmem-export/1), for `vaultmem import`."""
        from .sync.exchange import export_records

        return export_records(self)

    def import_source(self, source: str | Path, namespace: str | None = None) -> dict[str, Any]:
        """Bring memories in from a vaultmem export, Hermes' memory files or a Markdown folder; the
        source is only read. The counts, with the source and its kind."""
        from .sync.exchange import import_source

        return import_source(self, Path(source), namespace)

    def install_hook(self, force: bool = False) -> dict[str, Any]:
        """Install the git pre-commit hook that checks staged notes (sync.hook)."""
        _owner_only(self, "install_hook")
        from .sync.hook import install

        return install(self, force)

    def uninstall_hook(self) -> dict[str, Any]:
        """Remove vaultmem's pre-commit hook, putting back a hook it kept."""
        _owner_only(self, "uninstall_hook")
        from .sync.hook import uninstall

        return uninstall(self)

    def check_staged(self):
        """The staged notes checked as the pre-commit hook does (a sync.hook report)."""
        _owner_only(self, "check_staged")
        from .sync.hook import check_staged

        return check_staged(self)

    # -- HTTP tokens (store/tokens.py): who may call `vaultmem serve` ----------------------------
    def add_token(self, name: str, *, scope: str = "read", namespaces: Iterable[str] = (), trust: str = "agent",
                  all_namespaces: bool = False):
        """Make a token for the HTTP server: (the token, shown this once; its store.tokens.Token). Only
        its hash is kept. It reads (scope read) or also writes (read-write) the namespaces named (or all
        of them, the owner's view, with all_namespaces), its writes trusted at most `trust`."""
        _owner_only(self, "add_token")
        return self._token_book().add(name, scope, tuple(namespaces), trust, all_namespaces)

    def tokens(self) -> list[Any]:
        """The live tokens (name, scope, namespaces, trust, created; never a token or its hash)."""
        _owner_only(self, "tokens")
        return self._token_book().tokens()

    def revoke_token(self, name: str):
        """End the token of this name: a server refuses it from its next request. Returns its Token, or
        None when no live token has that name (nothing to revoke)."""
        _owner_only(self, "revoke_token")
        return self._token_book().revoke(name)

    def token_for(self, secret: str):
        """The live Token a client's secret is, or None (compared in constant time)."""
        _owner_only(self, "token_for")
        return self._token_book().find(secret)

    def _token_book(self):
        book = self.__dict__.get("_tokens")
        if book is None:
            from .store.tokens import TokenBook

            book = self.__dict__.setdefault("_tokens", TokenBook(self.state / "devices", self.device_dir, self.device))
        return book

    # -- on-write hooks (store/hooks.py, store/hookqueue.py) ------------------------------------------
    def hook_list(self) -> list[dict[str, Any]]:
        """The hooks config.yaml names, each with its state on this device and its recorded failures."""
        _owner_only(self, "hook_list")
        from .store.hooks import report

        return report(self.root, self.device_dir, self.settings.hooks.run)

    def enable_hook(self, name: str) -> dict[str, Any]:
        """Let this device run a configured hook as it is now (a changed one needs enabling again)."""
        _owner_only(self, "enable_hook")
        from .store.hooks import enable, named

        return {"name": name, **enable(self.root, named(self.settings.hooks.run, name))}

    def disable_hook(self, name: str) -> bool:
        """Stop running a hook on this device; whether it was enabled."""
        _owner_only(self, "disable_hook")
        from .store.hooks import disable

        return disable(self.root, name)

    def test_hook(self, name: str) -> dict[str, Any]:
        """Run a configured hook once now with a sample event (action `test`, no note) and say how it went,
        enabled or not: asking for it by name here is this device's consent to that one run. Nothing is recorded."""
        _owner_only(self, "test_hook")
        from .store.hooks import named, run_hook, sample_event

        spec = named(self.settings.hooks.run, name)
        outcome = run_hook(spec, [sample_event()], self.root, float(self.settings.hooks.timeout))
        return {"name": name, "runs": str(spec.get("command") or spec.get("entry_point")), **outcome.to_dict()}

    def wait_for_hooks(self, timeout: float = 30.0) -> bool:
        """Wait until the hook runs queued so far have ended, at most `timeout` s; whether they all did."""
        _owner_only(self, "wait_for_hooks")
        return self.hooks.drain(timeout)

    def _hot(self, *results: Any) -> Any:
        """Promote what a write wrote into the working set, if any; returns the first result."""
        if self.working_set is not None:
            from .recall.workingset import Entry

            self.working_set.promote(Entry(r.id, r.path, r.title) for r in results)
        return results[0] if results else None


def _dated(options: dict[str, Any]) -> dict[str, Any]:
    """Recall options with since/until/as_of given as text (a date, ISO 8601) in POSIX seconds."""
    from .store.index.records import given_epoch

    for key, end_of_day in (("since", False), ("until", True), ("as_of", True)):
        if isinstance(options.get(key), str):
            options[key] = given_epoch(options[key], end_of_day)
    return options
