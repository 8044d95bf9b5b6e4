"""remember: the write pipeline of SPEC §6, one code path for single writes and batches.

policy (secrets out, blocked tags refused, trust from the source) → extraction (typed values, cues,
names) → importance → links to known entities → dedup (fingerprint, same (type, value), near
duplicate) → conflict (a new value of an entity's attribute supersedes the old note) → persist
(atomic note, episode line, index, audit event).
"""

from __future__ import annotations

import datetime as dt
import gc
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..text import terms as text
from ..text.dedup import restates, words_and_numbers
from .drafts import Draft, Drafter, entity_links, parse_time, union, worker_pool
from .episodes import EpisodeLine
from . import sealed
from ..errors import NamespaceDenied, VaultmemError, WriteConflict
from .entities import EntityNotes
from .items import WriteResult, check_item, given_fields
from .saying import has_tags, holds, note_time, property_links, says
from .seen import KNOWN_COLUMNS, Known, Seen, words_said
from .batch.inflight import InFlight
from .batch.pending import StaleNote
from ..notes.versions import bump_version
from ..store.caller import SHARED
from ..store.index.records import note_score, retitle

if TYPE_CHECKING:
    from ..store.store import Store

PENDING_MAX = 200_000  # new notes kept back before a flush writes them (each ~2 KB with its index record)


REPEAT = "the same words"  # the merge reason of a repeat: it may add tags, never strength
RESETTLE = 5  # times a draft is decided again because a note it was decided on changed meanwhile


class Writer:
    """The write pipeline over one vault; one instance per call (single write or batch).

    State kept across a batch lets the batch dedup against itself before its notes are indexed.
    """

    def __init__(self, vault: Store, *, durable: bool, explain: bool = False):
        from .extract import Extractor
        from .policy import Policy

        self.vault = vault
        self.settings = vault.settings.write
        self.policy = Policy.of(vault)
        self.extractor = Extractor.of(vault)
        self.durable = durable
        self.want_explain = explain
        self.caller = vault.caller  # fixed for the whole write
        self.default_namespace = str(vault.settings.defaults.namespace)
        self.sealed = frozenset(vault.settings.encryption.namespaces)  # written encrypted (write/sealed.py)
        self._drafter: Drafter | None = None
        self.seen = Seen(vault.index.exists("kind = 'memory'"))  # the notes met so far, indexed or not
        self.flight = InFlight(vault, durable)  # the notes, day lines and audit events on their way to disk
        self.entities = EntityNotes(vault, self.policy, durable, self.flight.audit)

    # -- checks that run before anything is written --------------------------------------------
    def check(self, item: dict[str, Any], where: str) -> tuple[str, dict[str, Any]]:
        """Validate one item before anything is written (write/items.py: check_item), and that its
        caller may write into its namespace (store/caller.py)."""
        body, fields = check_item(self.policy, item, where, self.settings.max_text_chars)
        try:
            self.caller.write_namespace(fields.get("namespace"), self.default_namespace)
        except NamespaceDenied as exc:
            raise NamespaceDenied(f"{where}: {exc}") from None
        if self._sealing(fields):  # no passphrase, or a wrong one: refused before anything is written
            sealed.writing_key(self.vault, f"{where}: a memory in the encrypted namespace {self._namespace(fields)}")
        return body, fields

    def _namespace(self, fields: dict[str, Any]) -> str:
        return str(fields.get("namespace") or self.vault.settings.defaults.namespace)

    def _sealing(self, fields: dict[str, Any]) -> bool:
        return bool(self.sealed) and self._namespace(fields) in self.sealed

    # -- the pipeline ------------------------------------------------------------------------------
    def write(self, body: str, fields: dict[str, Any]) -> WriteResult:
        """Run one checked item through the pipeline; returns what happened."""
        self.ensure_entities([(body, fields)])
        return self.settle(self.drafter().draft(body, fields), fields.get("supersedes"), given_fields(fields))

    def settle(self, draft: Draft, supersedes: Any = None, given: frozenset[str] = frozenset()) -> WriteResult:
        """Decide what a draft becomes (unchanged, merged, created, superseding) and write it.

        A note it would merge into or supersede is read first: if a person saved it since it was
        indexed (or is saving it now), it is indexed again as it is and the draft decided again.
        `given`: the fields the caller set (a supersede carries the old note's others over).
        """
        for _ in range(RESETTLE):
            try:
                return self._settle(draft, supersedes, given)
            except StaleNote as stale:
                self._reindex(stale)
        raise WriteConflict(draft.title, "kept changing while it was being decided on")

    def _reindex(self, stale: StaleNote) -> None:
        """Index a note again from what its file holds now, and forget what this writer knew of it."""
        path = self.vault.root / stale.rel
        if stale.data is None:
            self.vault.index.upsert([], gone=[stale.rel])
        else:
            self.vault.index.upsert([self.vault.record_for(path, stale.data)])
        self.seen.forget(stale.rel)

    def _settle(self, draft: Draft, supersedes: Any, given: frozenset[str]) -> WriteResult:
        if draft.meta["namespace"] in self.sealed:  # encrypted: a note of its own, none of its words indexed
            return sealed.seal_draft(self, draft, supersedes)
        # a note of its own (`merge: false`, a keyed store's item) is neither a retry nor a restatement of another
        settled = self._folded(draft, supersedes) if draft.merges else None
        if settled is not None:
            return settled
        old = self._superseded(draft, supersedes)
        return self._create(draft, old, given, explicit=supersedes not in (None, ""))

    def _folded(self, draft: Draft, supersedes: Any) -> WriteResult | None:
        """What a draft becomes when it says what a note holds already: a retry (unchanged, or its new tags merged
        in) or a restatement merged into that note; None when it is a memory of its own."""
        found = self.seen.by_fp.get(draft.fp) or self._existing_fp(draft.fp, draft.meta["namespace"])
        if found is not None:
            # the same words: a retry, unless they bring a tag the note lacks (merged in, nothing else)
            if isinstance(found, Known):
                self._finish_supersede(found)
                return self._merge(found, draft, REPEAT)
            known = self.seen.known.get(found.path)
            if known is not None and not has_tags(found.tags, draft):
                return self._merge(known, draft, REPEAT)
            return self._unchanged(found, draft)
        # an explicit correction replaces its note, even in nearly the same words (a reworded
        # Hermes memory entry, `--supersedes`): no merge may swallow it
        target, reason = self._merge_target(draft) if supersedes in (None, "") else (None, "")
        if target is not None:
            merged = self._merge(target, draft, reason)
            if merged is not None:
                return merged
            target, reason = self._merge_target(draft, by_value=False)  # it would pile: a restatement?
            if target is not None and (merged := self._merge(target, draft, reason)) is not None:
                return merged
        return None

    def drafter(self) -> Drafter:
        """The pure half of the pipeline, knowing every entity ensured so far."""
        if self._drafter is None:
            matcher = self.entities.matcher() if self.settings.link_entities else None
            self._drafter = Drafter(self.vault.settings, self.policy, self.extractor, matcher, self.vault.device,
                                    self.want_explain, self.caller.trust)
        return self._drafter

    def ensure_entities(self, checked: Iterable[tuple[str, dict[str, Any]]]) -> None:
        """Entity notes for every name the items give or introduce with a cue, before any is drafted (none for
        an encrypted memory: an entity note's title would say who it is about)."""
        self.entities.ensure([item for item in checked if not self._sealing(item[1])])

    # -- dedup -------------------------------------------------------------------------------------
    def _existing_fp(self, fp: str, namespace: str) -> Known | None:
        if not self.seen.has_memories:
            return None
        rows = self.vault.index.select_notes("fp = ? AND +kind = 'memory' AND namespace = ?", (fp, namespace),
                                             columns=KNOWN_COLUMNS)
        for row in rows:
            if self._on_disk(row["path"]) and not self._own(known := self._remember_row(row)):
                return known
        return None

    def _remember_row(self, row: dict[str, Any]) -> Known:
        known = self.seen.known.get(row["path"])
        if known is None:
            known = Known(row["path"], row["id"], row["title"], row["type"], row["value"], row["namespace"],
                           row["status"], float(row["score"] or 0), row["sha"])
            self.seen.known[known.path] = known
        return known

    def _merge_target(self, draft: Draft, by_value: bool = True) -> tuple[Known | None, str]:
        meta = draft.meta
        ns, kind, value = meta["namespace"], meta["type"], meta["value"]
        # a statement of an identity's value joins its note; a message that mentions it is its own memory
        if (by_value and value and kind in self.settings.merge_types
                and len(draft.plain) <= int(self.settings.statement_chars)):
            known, reason = self._value_target(draft)
            if known is not None:
                return known, reason
        threshold = float(self.settings.near_duplicate)
        if threshold >= 1:
            return None, ""
        paths = self.seen.keys.candidates(ns, draft.keys)
        if self.seen.has_memories:
            paths += [p for p in self.vault.index.near_duplicate_paths(draft.keys) if p not in paths]
        best, best_sim = None, threshold
        words, numbers = words_and_numbers(draft.plain)
        for path in paths:
            known, body = self._candidate(path, ns)
            if known is None:
                continue
            plain = self._plain(path, body)
            # what restates rules out first, from words and numbers kept per note: most candidates
            # that share a sketch key are another memory of the same template
            their_words, their_numbers = self._words(path, plain)
            if numbers != their_numbers or not words <= their_words or self._own(known):
                continue
            sim = restates(draft.plain, plain)
            if sim >= best_sim:
                best, best_sim = known, sim
        return (best, f"near duplicate ({best_sim:.2f})") if best else (None, "")

    def _value_target(self, draft: Draft) -> tuple[Known | None, str]:
        """The note a statement of a value joins, and why: one that says it already (a repeat: once
        merge_cap started a newer note of the value, not always the newest), else the newest."""
        meta = draft.meta
        ns, kind, value = meta["namespace"], meta["type"], meta["value"]
        known = self.seen.stating(draft)
        if known is not None:
            return known, REPEAT
        newest_first = self._value_rows(ns, kind, value)[::-1]
        said = words_said(draft.plain)
        row = next((r for r in newest_first if says(r["body"], said) and self._states(r)), None)
        if row is not None:
            return self._remember_row(row), REPEAT
        known = self.seen.by_value.get((ns, kind, value))
        if known is None and (row := next((r for r in newest_first if self._states(r)), None)) is not None:
            known = self._remember_row(row)
        return known, f"same {kind} {value}"

    def _value_rows(self, ns: str, kind: str, value: str) -> list[dict[str, Any]]:
        """The live memory notes of the index with this (type, value), oldest first, with their bodies."""
        if not self.seen.has_memories:
            return []
        return self.vault.index.select_notes(
            "type = ? AND value = ? AND namespace = ? AND +kind = 'memory' AND status IN ('active', 'candidate')",
            (kind, value, ns), order="ts", columns=(*KNOWN_COLUMNS, "body"))

    def _states(self, row: dict[str, Any]) -> bool:
        """Whether an indexed note of a value may take its statements: it began as one (a long message
        naming the value was not merged into and is no target) and its file is there (the index may
        still name a note deleted since, or one a killed batch indexed before creating it)."""
        first = row["body"].split("\n\n", 1)[0]
        return len(text.plain_text(first)) <= int(self.settings.statement_chars) and self._on_disk(row["path"])

    def _on_disk(self, rel: str) -> bool:
        return rel in self.seen.known or (self.vault.root / rel).exists()

    def _candidate(self, path: str, ns: str) -> tuple[Known | None, str]:
        if path in self.seen.bodies:
            known = self.seen.known[path]
        else:
            rows = self.vault.index.select_notes("path = ?", (path,))
            if not rows or not self._on_disk(path):
                return None, ""
            known = self._remember_row(rows[0])
            self.seen.bodies[path] = rows[0]["body"]
        if known.namespace != ns or known.status not in ("active", "candidate"):
            return None, ""
        return known, self.seen.bodies[path]

    def _plain(self, path: str, body: str) -> str:
        found = self.seen.plains.get(path)
        if found is None or found[0] is not body:
            found = self.seen.plains[path] = (body, text.plain_text(body))
        return found[1]

    def _words(self, path: str, plain: str) -> tuple[set[str], list[str]]:
        found = self.seen.words.get(path)
        if found is None or found[0] is not plain:
            found = self.seen.words[path] = (plain, *words_and_numbers(plain))
        return found[1], found[2]

    def _superseded(self, draft: Draft, explicit: Any) -> Known | None:
        """The memory this draft replaces: given by the caller, or the same entity's attribute."""
        if explicit:
            row = self.vault.resolve(str(explicit))
            return self._remember_row(row)
        meta = draft.meta
        if not (draft.merges and meta["value"] and meta["type"] in self.settings.supersede_types and draft.entities):
            return None
        for entity in draft.entities:
            # the batch's own note of the attribute, unless this batch has superseded it since (then,
            # as for a single write, the newest active one on disk)
            known = self._live(self.seen.by_attr.get((meta["namespace"], entity, meta["type"])))
            known = known or self._live(self._row_by_attr(meta, entity))
            if known is not None and known.value != meta["value"] and not self._own(known):
                return known
        return None

    def _own(self, known: Known) -> bool:
        """Whether a note is one of its own (`merge: false`): nothing is folded into it, and only an explicit
        supersede retires it."""
        meta = self._held_meta(known)
        return meta is not None and meta.get("merge") is False

    def _held_meta(self, known: Known) -> dict[str, Any] | None:
        """A note's properties as this write holds them (loaded or waiting), else as its file has them now
        (None: gone or unparsable). Reading them loads nothing for an edit."""
        from ..notes.note import parse_note

        if known.path in self.flight.notes:
            return self.flight.notes.peek(known.path)[0]
        try:
            return parse_note((self.vault.root / known.path).read_bytes(), known.path).meta
        except (OSError, VaultmemError):
            return None

    def _live(self, known: Known | None) -> Known | None:
        """The note as this write knows it now, if it is still active."""
        current = None if known is None else self.seen.known.get(known.path, known)
        return current if current is not None and current.status == "active" else None

    def _row_by_attr(self, meta: dict[str, Any], entity: str) -> Known | None:
        """The newest active memory on disk with this attribute type linking to this entity."""
        if not self.seen.has_memories:
            return None
        key = (meta["namespace"], meta["type"])
        by_entity = self.seen.attrs.get(key)
        if by_entity is None:  # one query per (namespace, type) for a whole batch
            by_entity = self.seen.attrs[key] = {}
            rows = self.vault.index.select_notes(
                "type = ? AND namespace = ? AND +kind = 'memory' AND status = 'active' AND value != ''",
                (meta["type"], meta["namespace"]),
                order="ts", columns=KNOWN_COLUMNS + ("links",))
            for row in rows:
                for link in row["links"]:
                    by_entity[text.normalize(link)] = row
        row = by_entity.get(entity)
        return self._remember_row(row) if row is not None and self._on_disk(row["path"]) else None

    def _finish_supersede(self, known: Known) -> None:
        """A note found again that supersedes one still active: a write killed (or failed) between
        creating it and marking the old one finishes now, on its retry."""
        from ..notes.note import extract_links

        if known.path in self.flight.notes or known.status != "active":
            return
        target = (self._held_meta(known) or {}).get("supersedes")
        titles = extract_links(target) if isinstance(target, str) else []
        if not titles:
            return
        rows = self.vault.index.select_notes("title = ? AND +kind = 'memory' AND status = 'active' AND path != ?",
                                             (titles[0], known.path), columns=KNOWN_COLUMNS)
        for row in rows:
            if self._on_disk(row["path"]):
                old = self._remember_row(row)
                self.flight.notes.load(old.path, old.sha)
                self._retire(old, known.title, known.id)

    # -- outcomes ------------------------------------------------------------------------------------
    def _result(self, action: str, known: Known, draft: Draft, score: float,
                supersedes: str | None = None) -> WriteResult:
        return WriteResult(action, known.id, known.path, known.title, supersedes, known.type, known.value, score,
                           known.status, list(draft.meta["tags"]), list(draft.redacted),
                           draft.explain)

    def _unchanged(self, found: WriteResult | Known, draft: Draft) -> WriteResult:
        if isinstance(found, WriteResult):
            return WriteResult("unchanged", found.id, found.path, found.title, None, found.type, found.value,
                               found.score, found.status, found.tags, list(draft.redacted), found.explain)
        draft.decided("the same memory is already stored")
        return self._result("unchanged", found, draft, found.score)

    def _merge(self, target: Known, draft: Draft, reason: str) -> WriteResult | None:
        """Fold a restatement into the existing note: its new tags always; a new statement of the
        same (type, value) appended below the old; a newer timestamp and a raised score when it
        says something new or restates the note after `reinforce_hours` (once within them).
        None when the statement would grow the note past `merge_cap` characters: a note is one
        memory, not the pile of every message that names an invoice."""
        self.flight.notes.load(target.path, target.sha)
        held_meta, held_body = self.flight.notes.peek(target.path)
        if held_meta.get("merge") is False:
            return None  # a note of its own: nothing is folded into it
        if holds(held_meta, held_body, draft):
            draft.decided(f"{target.path} already holds this statement and these tags")
            return self._result("unchanged", target, draft, note_score(held_meta.get("score")))
        old_plain = text.plain_text(held_body)
        # the same (type, value) with something new to say: keep the statement, below the old
        appends = (reason.startswith("same ") and draft.plain not in old_plain
                   and restates(draft.plain, old_plain) < float(self.settings.near_duplicate))
        if appends and len(old_plain) + len(draft.plain) > int(self.settings.merge_cap):
            return None
        strengthens = appends or (reason != REPEAT and not self._recent(held_meta, draft))
        if not strengthens and has_tags(held_meta.get("tags"), draft):
            draft.decided(f"{target.path} was told this within {self.settings.reinforce_hours} h: "
                          "a restatement strengthens a memory once in that time")
            return self._result("unchanged", target, draft, note_score(held_meta.get("score")))

        def edit(meta: dict[str, Any], body: str) -> tuple[dict[str, Any], str | None]:
            changes: dict[str, Any] = {"tags": union(meta.get("tags") or [], draft.meta["tags"]),
                                       "version": bump_version(meta.get("version"), self.vault.device)}
            if strengthens:
                changes["score"] = round(min(10.0, max(note_score(meta.get("score")), draft.meta["score"]) +
                                             float(self.settings.merge_bonus)), 2)
                when = note_time(meta)
                if when is None or when < draft.meta["timestamp"]:
                    changes["timestamp"] = draft.meta["timestamp"]
            return changes, draft.body if appends else None

        meta, body = self.flight.notes.edit(target.path, edit)
        score = note_score(meta.get("score"))
        self.flight.changes(target.path)
        if appends:
            self.seen.stated(draft, target.path)
        self.seen.bodies[target.path] = body
        draft.decided(f"merged into {target.path}: {reason}")
        self._log(draft, target.title, "merged", target.id)
        return self._result("merged", target, draft, round(score, 2))

    def _recent(self, meta: dict[str, Any], draft: Draft) -> bool:
        """Whether the note was last strengthened less than `reinforce_hours` before this draft."""
        when = note_time(meta)
        return when is not None and \
            draft.meta["timestamp"] - when < dt.timedelta(hours=float(self.settings.reinforce_hours))

    def _create(self, draft: Draft, old: Known | None, given: frozenset[str] = frozenset(),
                explicit: bool = False) -> WriteResult:
        if old is not None:
            self.flight.notes.load(old.path, old.sha)  # before anything is placed: it may have to be decided again
            self._inherit(draft, self.flight.notes.peek(old.path), given, links=explicit)
            self.drafter().supersede(draft, old.title)
        rel = self._place(draft)
        title = draft.record.title
        meta = draft.meta
        known = Known(rel, meta["id"], title, meta["type"], meta["value"], meta["namespace"], meta["status"],
                       meta["score"])
        self.seen.track(known, draft, self.settings)
        if old is not None:
            self._retire(old, title, meta["id"], meta["timestamp"])
        draft.decided(f"new note; supersedes {old.path}" if old else "new note")
        self._log(draft, title, "created", meta["id"])
        result = self._result("created", known, draft, meta["score"], old.id if old else None)
        if draft.merges:  # a note of its own is no note a later memory of the batch repeats
            self.seen.by_fp[draft.fp] = result
        return result

    def _inherit(self, draft: Draft, old: tuple[dict[str, Any], str], given: frozenset[str], links: bool) -> None:
        """A correction keeps what the caller did not restate: the old note's tags (with the new
        text's own), its lifecycle (a preference stays a preference) and, when `links` (an explicit
        supersede: the new text may name nothing), the entities it linked to (those the new text
        does not link go to its `entities` property).

        A correction found by an entity's attribute names that entity itself and links only what it
        names: the old note's other links were other entities', and carrying them over made the new
        note the one a new value of each of their attributes replaces (one client's new contract
        retired another's, and a long batch's corrections each ended linking every client)."""
        old_meta, old_body = old
        meta = dict(draft.meta)
        if "tags" not in given:
            meta["tags"] = union([str(t) for t in old_meta.get("tags") or []], meta["tags"])
        if "lifecycle" not in given and old_meta.get("lifecycle"):
            meta["lifecycle"] = str(old_meta["lifecycle"])
        if links and "entity" not in given and self.settings.link_entities:
            from ..notes.note import extract_links

            held = [*property_links(old_meta.get("entities")), *extract_links(old_body)]
            about = self.drafter().unlinked([*property_links(meta.get("entities")), *held], draft.body)
            meta["entities"] = entity_links(about)
            draft.entities = list(dict.fromkeys([*draft.entities, *map(text.normalize, about)]))
        if meta != draft.meta:
            draft.meta = meta
            self.drafter().render(draft)

    def _place(self, draft: Draft) -> str:
        """Reserve a unique readable name for a new note (batch/names.py) and hand it to the notes
        waiting to be written (the next flush writes it); returns its vault path."""
        rec = draft.record
        rec.path, attempt = self.flight.names.reserve(draft.folder, draft.stem, draft.title)
        if attempt:  # the title is the file name: its words are index terms
            retitle(rec, rec.path.rsplit("/", 1)[-1][:-3])
        self.flight.notes.create(rec.path, draft.data, rec, draft.fields, draft.folder)
        self.flight.changes(rec.path)
        if len(self.flight.notes) >= PENDING_MAX:
            self.flight.notes.flush()
        return rec.path

    def _retire(self, old: Known, new_title: str, new_id: str, when: dt.datetime | None = None) -> None:
        """Mark the superseded note (kept, linked both ways) and forget it as a merge target."""
        self.flight.notes.edit(old.path, lambda meta, body: ({
            "status": "superseded", "superseded_by": f"[[{new_title}]]",
            "version": bump_version(meta.get("version"), self.vault.device)}, None))
        self.flight.changes(old.path)
        self.seen.known[old.path] = replace(old, status="superseded")
        event = {"event": "supersede", "id": old.id, "path": old.path, "by": new_id, "title": new_title}
        if when is not None:  # the time of the write that retired it (a backdated import's own)
            event["ts"] = when.timestamp()
        self.flight.audit.append(event)

    def _log(self, draft: Draft, title: str, action: str, note_id: str) -> None:
        if self.settings.episodes and self._public(draft.meta["namespace"]):
            self.flight.episodes.append(EpisodeLine(draft.meta["timestamp"], title, draft.meta["source"]))
        event = {"event": "remember", "action": action, "id": note_id, "title": title,
                 "ts": draft.meta["timestamp"].timestamp(), "source": draft.meta["source"]}
        if draft.redacted:
            event["redacted"] = sorted(set(draft.redacted))
        self.flight.audit.append(event)

    def _public(self, namespace: str) -> bool:
        """Whether a memory of this namespace gets a line in the day note, which every agent reads: a
        private one does not (its line would show its title, the first words of its text, to all)."""
        return namespace in (SHARED, self.default_namespace, "")

    def log_unchanged(self, result: WriteResult, when: dt.datetime, source: str, namespace: str = "") -> None:
        """A batch re-run still owes the episode line an interrupted run may not have written."""
        if self.settings.episodes and result.action == "unchanged" and self._public(namespace):
            self.flight.episodes.append(EpisodeLine(when, result.title, source))

    def finish(self) -> None:
        """Persist what this writer decided (write/batch/inflight.py: InFlight.finish)."""
        self.flight.finish()

    @property
    def wrote(self) -> list[str]:
        """Vault paths of the notes this writer has written to disk so far."""
        return list(self.flight.notes.written)

    def final(self, result: WriteResult) -> WriteResult:
        """The result with the path its note was finally written under."""
        new = self.flight.notes.renamed.get(result.path)
        return result if new is None else replace(result, path=new, title=new.rpartition("/")[2][:-3])


def remember(vault: Store, body: str, *, explain: bool = False, **fields: Any) -> WriteResult:
    """Store one memory through the pipeline (see the module docstring).

    It first catches up with notes the index has not seen (a clone, a pull, a write killed before
    it was indexed: folderstate.py), so a retry or a known fact is never written twice. A failure
    once a note is on disk says which notes were written.
    """
    with vault.index.writing():
        vault.index.catch_up()
        writer = Writer(vault, durable=True, explain=explain)
        body, checked = writer.check({"text": body, **fields}, "memory")
        result = writer.write(body, checked)
        try:
            writer.finish()
        except (OSError, VaultmemError) as exc:
            if not writer.wrote:
                raise
            raise VaultmemError(f"{_reason(exc)}; already written: {', '.join(writer.wrote)} "
                                "(a retry finds it and writes nothing twice)") from exc
        vault.index.wrote()
    return writer.final(result)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}" + (f": {exc.filename}" if exc.filename else "")
    return str(exc)


def remember_many(vault: Store, items: Iterable[dict[str, Any]], progress: Callable[[int], None] | None = None,
                  *, explain: bool = False) -> list[WriteResult]:
    """Store many memories: every item is checked before the first is written, one fsync at the end.

    Crash-safe: every note is written whole (temp file + rename); a re-run finds the notes already
    written (by fingerprint) and creates nothing twice. Writers take turns (the index's lock):
    readers never wait, and two processes remembering the same thing write it once.
    """
    items = list(items)
    collecting = gc.isenabled()
    if collecting and len(items) > 1:
        # a batch allocates millions of objects and keeps most of them to the end, which makes the
        # cycle collector rescan them over and over (~20% of a batch's time): it runs again after
        gc.disable()
    try:
        return _remember_many(vault, items, progress, explain)
    finally:
        if collecting:
            gc.enable()


def _remember_many(vault: Store, items: list[dict[str, Any]], progress: Callable[[int], None] | None,
                   explain: bool) -> list[WriteResult]:
    with vault.index.writing():
        vault.refresh()  # notes of an interrupted earlier run must count as already written
        writer = Writer(vault, durable=len(items) <= 1, explain=explain)
        checked = [writer.check(item, f"item {n}") for n, item in enumerate(items, 1)]
        writer.ensure_entities(checked)
        results = []
        drafter = writer.drafter()
        with worker_pool(drafter, len(checked)) as writer.flight.pool:
            drafts = drafter.draft_all(checked, writer.flight.pool)
            for n, ((_, fields), draft) in enumerate(zip(checked, drafts), 1):
                result = writer.settle(draft, fields.get("supersedes"), given_fields(fields))
                if result.action == "unchanged":
                    writer.log_unchanged(result, parse_time(fields.get("timestamp")), str(fields.get("source") or
                                         vault.settings.defaults.source), str(fields.get("namespace") or ""))
                results.append(result)
                if progress:
                    progress(n)
            writer.finish()
        vault.index.wrote(verify=True)  # the next single remember need not rescan what this batch wrote
    return [writer.final(r) for r in results]


__all__ = ["WriteResult", "Writer", "remember", "remember_many"]
