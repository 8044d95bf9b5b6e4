"""Namespaces are a boundary on every path (issue 28 item 1): an agent confined to `alice` never reads
nor changes Bob's private notes, through any public Vault method, MCP tool or resource, or Hermes tool.

The walks list what they cover by introspection (the Vault's public names, the server's tools and
resource templates, the provider's tool schemas) and fail when one is not in their table: a new
operation must say how it keeps the boundary before it can land.
"""

from __future__ import annotations

import inspect

import json
from pathlib import Path

import anyio
import pytest
from mcp import Client, MCPError

from vaultmem import Caller, NamespaceDenied, NoteNotFound, OwnerOnly, Vault
from vaultmem.hermes import VaultmemProvider
from vaultmem.surfaces import mcp as surface
from vaultmem.vault import OWNER_ONLY

SECRET = "QUOKKA-7731"  # only Bob's notes hold it
BOB_TAG = "bobsecret"


class Bobs:
    """Bob's private notes in a vault, and what must stay as it is."""

    def __init__(self, vault: Vault):
        self.root = vault.root
        active = vault.remember(f"Bob's locker combination is {SECRET}", namespace="bob", tags=[BOB_TAG],
                                lifecycle="fact")
        staged = vault.remember(f"Bob keeps a spare key under {SECRET} too", namespace="bob", tags=[BOB_TAG],
                                candidate=True)
        self.ids = [active.id, staged.id]
        self.titles = [active.title, staged.title]
        self.paths = [active.path, staged.path]
        self.refs = [*self.ids, *self.paths, *self.titles]
        vault.remember("The release train leaves on Thursdays", namespace="shared", tags=["release"])
        vault.remember("Alice reviews the release notes", namespace="alice", tags=["release"])
        self.before = self._state()

    def _state(self) -> dict[str, bytes]:
        files = {p: (self.root / p).read_bytes() for p in self.paths}
        logs = self.root / ".vaultmem" / "devices"
        mentions = [line for log in sorted(logs.rglob("*.jsonl")) for line in log.read_text().splitlines()
                    if any(i in line for i in self.ids)]
        return {**files, "log lines naming Bob's notes": "\n".join(mentions).encode()}

    def unchanged(self, what: str) -> None:
        assert self._state() == self.before, f"{what} changed Bob's private notes or logged an event on them"

    def unseen(self, what: str, value: object, given: str = "") -> None:
        """Nothing of Bob's notes in what a call returned (or raised), but the ref the caller gave."""
        shown = _shown(value)
        leaked = [m for m in [SECRET, BOB_TAG, *self.ids, *self.titles, *self.paths] if m in shown and m != given
                  and m not in given]
        assert not leaked, f"{what} showed {leaked}: {shown[:300]}"


def _shown(value: object) -> str:
    if isinstance(value, BaseException):
        return f"{type(value).__name__}: {value}"
    if hasattr(value, "to_dict"):
        value = value.to_dict()
    if hasattr(value, "__iter__") and not isinstance(value, (str, bytes, dict)):
        value = [v.to_dict() if hasattr(v, "to_dict") else v for v in value]
    try:
        return json.dumps(value, default=repr, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


@pytest.fixture
def bobs(vault) -> Bobs:
    return Bobs(vault)


def _import_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "to-import"
    folder.mkdir()
    (folder / "MEMORY.md").write_text("Bob's plan is private\n§\nAnother line\n", encoding="utf-8")
    return folder


def _export_file(vault: Vault, tmp_path: Path) -> Path:
    path = tmp_path / "export.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in Vault(vault.root).export_records()), encoding="utf-8")
    return path


# name -> calls as alice; each returns what the caller sees. A call expected to raise names the error.
# `ref` calls run once for each of Bob's ids, paths and titles.
REF_CALLS = {
    "get": lambda a, ref: a.get(ref),
    "markdown": lambda a, ref: a.markdown(ref),
    "why": lambda a, ref: a.why(ref),
    "resolve": lambda a, ref: a.resolve(ref),
    "feedback": lambda a, ref: a.feedback(ref, "wrong"),
    "correct": lambda a, ref: a.correct(ref, "Bob's locker combination changed"),
    "pin": lambda a, ref: a.pin(ref),
    "unpin": lambda a, ref: a.unpin(ref),
    "forget": lambda a, ref: a.forget(ref, "gone"),
    "restore": lambda a, ref: a.restore(ref),
    "confirm": lambda a, ref: a.confirm(ref),
    "encrypt": lambda a, ref: a.encrypt(ref),  # by ref: only a note the caller may change (namespace ones: OWNER_ONLY)
    "decrypt": lambda a, ref: a.decrypt(ref),
}
DENIED = object()  # marks a call that must raise NamespaceDenied
CALLS = {
    "remember": [lambda a, c: a.remember("Alice keeps her own locker combination elsewhere"),
                 (DENIED, lambda a, c: a.remember("Into Bob's space", namespace="bob")),
                 (NoteNotFound, lambda a, c: a.remember("Locker combination is 1234", supersedes=c.ids[0]))],
    "remember_many": [(DENIED, lambda a, c: a.remember_many([{"text": "ok"}, {"text": "no", "namespace": "bob"}]))],
    "recall": [lambda a, c: a.recall(f"locker combination {SECRET}"), (None, lambda a, c: a.recall("", tags=[BOB_TAG]), BOB_TAG),
               lambda a, c: a.recall(f"locker {SECRET}", namespace="*", include=["superseded", "archived", "candidate"]),
               lambda a, c: a.recall("Bob spare key", status=["candidate"], namespace="*"),
               lambda a, c: a.recall(f"{SECRET}", kinds=("memory", "entity", "episode"), namespace="*"),
               (DENIED, lambda a, c: a.recall("locker", namespace="bob")),
               (DENIED, lambda a, c: a.recall("locker", namespace=["shared", "bob"]))],
    "context": [lambda a, c: a.context("Bob locker combination"),
                (DENIED, lambda a, c: a.context("locker", namespace="bob"))],
    "ask": [lambda a, c: a.ask("What is Bob's locker combination?"),
            lambda a, c: a.ask("What is Bob's locker combination?", namespace="*")],
    "list": [lambda a, c: a.list(), (None, lambda a, c: a.list(tags=[BOB_TAG]), BOB_TAG)],
    "changes": [lambda a, c: a.changes(a.changes().cursor.rpartition(".")[0] + ".0", limit=1000)],
    "stats": [lambda a, c: {k: v for k, v in a.stats().items() if k != "index"}],
    "tag_counts": [lambda a, c: a.tag_counts()],
    "containing": [lambda a, c: a.containing(SECRET), lambda a, c: a.containing(SECRET, namespace="bob")],
    "export_records": [lambda a, c: list(a.export_records())],
    "forget_where": [(None, lambda a, c: a.forget_where(tags=[BOB_TAG], reason="gone"), BOB_TAG),
                     (None, lambda a, c: a.forget_where(query=SECRET, reason="gone", namespace="*"), SECRET),
                     (None, lambda a, c: a.forget_where(query=SECRET, reason="gone", namespace=None, hard=True), SECRET),
                     (DENIED, lambda a, c: a.forget_where(query=SECRET, reason="gone", namespace="bob"))]
    + [(NoteNotFound, lambda a, c, i=i: a.forget_where(ids=[c.ids[i]], reason="gone")) for i in (0, 1)],
    "decay": [(None, lambda a, c: a.decay([BOB_TAG], 0.5, "weaker"), BOB_TAG)],
    "consolidate": [lambda a, c: a.consolidate(min_repeats=2)],
    "import_source": [(DENIED, lambda a, c: a.import_source(c.folder, namespace="bob")),
                      (OwnerOnly, lambda a, c: a.import_source(c.export))],
    "memorable": [lambda a, c: a.memorable(f"remember: Bob's locker is {SECRET}")],
    "add_entity": [lambda a, c: a.add_entity("Bob")],
    "use_working_set": [lambda a, c: (a.use_working_set(), None)[1]],
    "refresh": [lambda a, c: a.refresh().__dict__ if hasattr(a.refresh(), "__dict__") else None],
    "freshen": [lambda a, c: None if a.freshen() is None else "ran"],
    "trust_of": [lambda a, c: a.trust_of("user")],
    "unlock": [lambda a, c: a.unlock(None)],  # this process's passphrase: it opens no note by itself
}
# Below the boundary: they take vault paths or ids a layer above has resolved for its caller, or say
# who the caller is; no surface hands a client any of them (docs/architecture.md: boundaries).
PLUMBING = {"as_caller", "as_surface", "audit", "caller", "check_folder", "close", "configure", "create_note",
            "create_numbered", "edit_note", "folder_of", "index", "init", "kind_of", "namespaces", "read_current",
            "record_access", "record_for", "relpath", "reused", "safe_path", "sees", "visible", "working_set",
            "write_text"}


def _public_names() -> set[str]:
    return {n for n in dir(Vault) if not n.startswith("_")}


def test_every_public_vault_name_is_walked_refused_or_plumbing():
    names = _public_names()
    covered = set(REF_CALLS) | set(CALLS) | set(OWNER_ONLY) | PLUMBING
    assert not names - covered, f"say how these keep the namespace boundary (tests/test_boundaries.py): {names - covered}"
    assert not covered - names, f"no longer public: {covered - names}"


def _run(what: str, call, bobs: Bobs, given: str = "", expect=None):
    try:
        value = call()
    except (NamespaceDenied, NoteNotFound, OwnerOnly) as exc:
        if expect is None:
            raise AssertionError(f"{what} raised {exc!r}") from None
        assert isinstance(exc, expect), f"{what} raised {exc!r}, not {expect.__name__}"
        bobs.unseen(what, exc, given + (exc.ref if isinstance(exc, NoteNotFound) else ""))  # the ref it was given
        return
    assert expect is None, f"{what} returned {value!r} where {expect.__name__} was expected"
    bobs.unseen(what, value, given)


@pytest.mark.parametrize("confine", ["argument", "environment", "view"])
def test_an_agent_confined_to_alice_never_reads_or_changes_bobs_notes(vault, bobs, confine, tmp_path, monkeypatch):
    bobs.folder, bobs.export = _import_folder(tmp_path), _export_file(vault, tmp_path)
    if confine == "argument":
        alice = Vault(vault.root, namespace="alice")
    elif confine == "environment":
        monkeypatch.setenv("VAULTMEM_NAMESPACE", "alice")
        alice = Vault(vault.root)
    else:  # a long-lived process's view: the owner's Vault (and its working set) shared with alice's
        vault.use_working_set()
        vault.get(bobs.ids[0])  # in the shared working set now
        alice = vault.as_caller(Caller(namespace="alice"))
    walked = 0
    for name, call in REF_CALLS.items():
        for ref in bobs.refs:
            _run(f"{name}({ref!r})", lambda: call(alice, ref), bobs, ref, NoteNotFound)
            walked += 1
    for name, calls in CALLS.items():
        for entry in calls:
            expect, call, given = (entry + ("",))[:3] if isinstance(entry, tuple) else (None, entry, "")
            expect = NamespaceDenied if expect is DENIED else expect
            _run(name, lambda: call(alice, bobs), bobs, given, expect=expect)
            walked += 1
    for name in OWNER_ONLY:
        operation = getattr(alice, name)
        needed = [p for p in inspect.signature(operation).parameters.values()
                  if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        with pytest.raises(OwnerOnly, match="owner"):  # refused before it reads what it was given
            operation(*["x"] * len(needed))
        walked += 1
    bobs.unchanged("the walk")
    assert walked >= len(REF_CALLS) * 6 + len(CALLS) + len(OWNER_ONLY)
    # and the walk did act: alice's own and shared notes are there for her
    assert {h.namespace for h in alice.recall("release")} == {"shared", "alice"}


def test_the_same_text_from_alice_is_a_note_of_her_own_never_merged_into_bobs(vault, bobs):
    made = Vault(vault.root, namespace="alice").remember(f"Bob's locker combination is {SECRET}")
    assert made.action == "created" and made.id not in bobs.ids
    bobs.unchanged("remember")


def test_the_owner_still_reads_and_changes_every_namespace(vault, bobs):
    assert {h.id for h in vault.recall(f"locker {SECRET}", namespace="*")} >= {bobs.ids[0]}
    assert vault.get(bobs.ids[0]).namespace == "bob"
    assert vault.doctor() is not None
    vault.feedback(bobs.ids[0], "useful")
    assert any(bobs.ids[0] in line for log in (vault.root / ".vaultmem" / "devices").rglob("*.jsonl")
               for line in log.read_text().splitlines())


def test_a_private_memory_gets_no_line_in_the_day_note_every_agent_reads(vault):
    made = vault.remember(f"Bob's locker combination is {SECRET}", namespace="bob")
    shared = vault.remember("The release train leaves on Thursdays")
    days = "".join(p.read_text() for p in (vault.root / "episodes").glob("*.md"))
    assert shared.title in days and made.title not in days and SECRET not in days


# -- MCP --------------------------------------------------------------------------------------------
def _session(server, body):
    async def main():
        async with Client(server) as client:
            return await body(client)
    return anyio.run(main)


MCP_CALLS = {
    "remember": [{"text": "Alice keeps her own locker combination elsewhere"}],
    "recall": [{"query": f"locker {SECRET}"}, {"tags": [BOB_TAG]}],
    "ask": [{"question": "What is Bob's locker combination?"}],
    "context": [{"query": "Bob locker combination"}],
    "show": "ref",
    "why": "ref",
    "feedback": "ref",
    "forget": [{"reason": "gone", "tags": [BOB_TAG]}, {"reason": "gone", "query": SECRET}, "ref"],
}


def test_every_mcp_tool_and_resource_keeps_the_boundary(vault, bobs):
    server = surface.build_server(vault, namespace="alice")
    tools = {t.name for t in _session(server, lambda c: c.list_tools()).tools}
    assert tools == set(MCP_CALLS), f"say how these keep the namespace boundary: {tools ^ set(MCP_CALLS)}"
    templates = {t.uri_template for t in _session(server, lambda c: c.list_resource_templates()).resource_templates}
    resources = {r.uri for r in _session(server, lambda c: c.list_resources()).resources}
    assert templates == {surface.NOTE_URI} and not resources

    def shown(result) -> str:
        return json.dumps(result.structured_content, ensure_ascii=False) + "".join(
            getattr(part, "text", "") for part in result.content)

    for tool, calls in MCP_CALLS.items():
        for args in ([calls] if calls == "ref" else calls):
            for arguments in ([{"ref": r} | ({"verdict": "wrong"} if tool == "feedback" else {}) for r in bobs.refs]
                              if args == "ref" and tool != "forget" else
                              [{"ids": [i], "reason": "gone"} for i in bobs.ids] if args == "ref" else [args]):
                result = _session(server, lambda c: c.call_tool(tool, arguments))
                given = json.dumps(arguments, ensure_ascii=False)  # what the client sent may come back
                bobs.unseen(f"MCP {tool}({arguments})", shown(result), given)
                if args == "ref":
                    assert result.is_error, f"MCP {tool} found Bob's note by {arguments}"
    for note_id in bobs.ids:
        async def read(client, uri=surface.NOTE_URI.replace("{id}", note_id)):
            with pytest.raises(MCPError) as raised:
                await client.read_resource(uri)
            return raised.value

        bobs.unseen("vault://note", _session(server, read), note_id)
    bobs.unchanged("the MCP walk")


def test_the_mcp_server_takes_its_namespace_from_the_environment(vault, bobs, monkeypatch):
    monkeypatch.setenv("VAULTMEM_NAMESPACE", "alice")
    server = surface.build_server(vault)
    result = _session(server, lambda c: c.call_tool("show", {"ref": bobs.ids[0]}))
    assert result.is_error
    bobs.unchanged("show")


# -- Hermes -----------------------------------------------------------------------------------------
HERMES_CALLS = {
    "vault_remember": [{"content": "Alice keeps her own locker combination elsewhere"}],
    "vault_recall": [{"query": f"locker {SECRET}"}, {"tags": [BOB_TAG]}],
    "vault_ask": [{"question": "What is Bob's locker combination?"}],
    "vault_why": "ref",
    "vault_feedback": "ref",
    "vault_forget": [{"reason": "gone", "tags": [BOB_TAG]}, {"reason": "gone", "query": SECRET}, "ids"],
}


def _alice_in_hermes(tmp_path: Path, monkeypatch) -> tuple[VaultmemProvider, Path]:
    """A started Hermes provider whose agent is `alice`, and its Hermes home."""
    home = tmp_path / "hermes-home"
    home.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(home))
    provider = VaultmemProvider()
    provider.initialize("s1", hermes_home=str(home), platform="cli", agent_context="primary", agent_identity="alice")
    return provider, home


def test_every_hermes_tool_keeps_the_boundary(tmp_path, monkeypatch):
    provider, home = _alice_in_hermes(tmp_path, monkeypatch)
    bobs = Bobs(Vault(home / "vaultmem"))
    names = {s["name"] for s in provider.get_tool_schemas()}
    assert names == set(HERMES_CALLS), f"say how these keep the namespace boundary: {names ^ set(HERMES_CALLS)}"
    for tool, calls in HERMES_CALLS.items():
        for args in ([calls] if calls == "ref" else calls):
            argument_sets = ([{"id": r, "verdict": "wrong"} for r in bobs.refs] if args == "ref" else
                             [{"ids": [i], "reason": "gone"} for i in bobs.ids] if args == "ids" else [args])
            for arguments in argument_sets:
                answer = json.loads(provider.handle_tool_call(tool, arguments))
                given = json.dumps(arguments, ensure_ascii=False)  # what the agent sent may come back
                bobs.unseen(f"Hermes {tool}({arguments})", answer, given)
                if args in ("ref", "ids"):
                    assert "error" in answer, f"Hermes {tool} found Bob's note by {arguments}"
    bobs.unseen("Hermes prefetch", provider.prefetch("Bob locker combination"))
    provider.shutdown()
    bobs.unchanged("the Hermes walk")


# -- trust: the surface's, never the client's (issue 28 item 2) ---------------------------------------
def _remembered(server, **arguments) -> dict:
    result = _session(server, lambda c: c.call_tool("remember", arguments))
    assert not result.is_error, result.content
    return result.structured_content


def test_an_mcp_client_saying_source_user_gets_the_servers_trust_not_user(vault):
    made = _remembered(surface.build_server(vault), text="The deploy key rotates monthly", source="user")
    note = vault.get(made["id"])
    assert (note.meta["trust"], note.source, note.status) == ("agent", "user", "active")  # provenance kept
    assert note.path.startswith("memories/")


def test_a_client_may_lower_its_trust_but_not_raise_it(vault):
    made = _remembered(surface.build_server(vault), text="A blog says the API is deprecated", source="web")
    note = vault.get(made["id"])
    assert (note.meta["trust"], note.status) == ("external", "candidate") and note.path.startswith("inbox/")


def test_the_person_who_starts_the_server_raises_its_trust(vault):
    made = _remembered(surface.build_server(vault, trust="user"), text="Standups move to 10:00", source="user")
    assert vault.get(made["id"]).meta["trust"] == "user"
    vault.configure("policy", user_sources=["mcp"])  # or by the vault's policy of the server's source
    made = _remembered(surface.build_server(vault), text="Standups are in room 4")
    assert vault.get(made["id"]).meta["trust"] == "user"


def test_hermes_writes_at_the_trust_the_policy_gives_hermes(tmp_path, monkeypatch):
    provider, home = _alice_in_hermes(tmp_path, monkeypatch)
    made = json.loads(provider.handle_tool_call("vault_remember", {"content": "Standups move to 10:00"}))
    provider.shutdown()
    assert Vault(home / "vaultmem").get(made["id"]).meta["trust"] == "agent"


def test_a_python_caller_caps_trust_with_its_view(vault):
    agent = vault.as_caller(Caller(trust="external"))
    made = agent.remember("The office closes at six", source="user")
    assert (vault.get(made.id).meta["trust"], made.status) == ("external", "candidate")
    assert vault.remember("The office opens at nine", source="user").status == "active"  # the owner's own


def test_a_caller_of_several_namespaces_reads_each_and_no_other(vault, bobs):
    vault.remember("Carol's desk is by the window", namespace="carol")
    both = vault.as_caller(Caller(namespace=("alice", "carol")))
    assert {h.namespace for h in both.recall("desk window release", namespace="*")} >= {"carol"}
    assert {h.namespace for h in both.recall("release")} == {"shared", "alice"}
    with pytest.raises(NamespaceDenied, match="alice, carol"):
        both.recall("x", namespace="bob")
    with pytest.raises(NoteNotFound):
        both.get(bobs.ids[0])


def test_the_audit_log_names_the_surface_never_more(vault):
    server = surface.build_server(vault, namespace="alice")
    made = _remembered(server, text="The standup moved to 10:00")
    events = [json.loads(line) for log in (vault.root / ".vaultmem" / "devices").rglob("audit*.jsonl")
              for line in log.read_text().splitlines()]
    mine = [e for e in events if e.get("id") == made["id"]]
    assert mine and all(e["caller"] == "mcp" and e["caller_namespaces"] == ["alice"] for e in mine)
