"""The LangGraph store and the LangChain retriever (issue 29 item 3), against the installed langgraph and
langchain-core: the store behaviours LangGraph's docs describe, each also run on LangGraph's own InMemoryStore
where they can be compared, the notes a person reads, hand edits, namespaces as a boundary, a graph."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from langgraph.store.base import (BaseStore, GetOp, InvalidNamespaceError, Item, ListNamespacesOp, MatchCondition,
                                  PutOp, SearchItem, SearchOp)
from langgraph.store.memory import InMemoryStore

from vaultmem import Caller, NamespaceDenied, Vault
from vaultmem.integrations.langgraph import VaultStore
from vaultmem.notes.note import parse_note

from .test_layers import _add_import, _copy, lint

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def store(vault) -> VaultStore:
    return VaultStore(vault)


def _both(vault) -> list[BaseStore]:
    """A VaultStore and LangGraph's InMemoryStore, to run the same operations on."""
    return [VaultStore(vault), InMemoryStore()]


def _note(vault, item_path: str):
    return parse_note((vault.root / item_path).read_bytes())


def _item_note(store: VaultStore, namespace: tuple[str, ...], key: str) -> Path:
    found = store._current(namespace, key)
    assert found is not None
    return store.vault.root / found.memory.path


def test_it_is_langgraphs_base_store_with_its_own_batch():
    assert issubclass(VaultStore, BaseStore)
    assert VaultStore.batch is not BaseStore.batch and VaultStore.abatch is not BaseStore.abatch


# -- put then get ---------------------------------------------------------------------------------------
VALUES = {
    "text": {"text": "Alice likes pizza with olives", "food": "pizza", "slices": 3, "vegan": False, "sizes": ["s", "m"]},
    "memory": {"memory": "Will likes AI"},
    "no text": {"food_preference": "pizza", "count": 2, "nothing": None},
    "nested": {"content": "A report", "meta": {"pages": [1, {"from": "appendix"}]}, "status": "published",
               "type": "article", "score": 4.99, "tags": ["x"]},  # vaultmem's own names go to the JSON block
    "text ending in a fence": {"text": "Run this:\n\n```json\n{\"a\": 1}\n```"},
}


@pytest.mark.parametrize("name", VALUES)
def test_put_then_get_gives_the_value_back_on_both_stores(vault, name):
    for store in _both(vault):
        store.put(("users", "alice"), "prefs", VALUES[name])
        item = store.get(("users", "alice"), "prefs")
        assert isinstance(item, Item) and (item.namespace, item.key) == (("users", "alice"), "prefs")
        assert item.value == VALUES[name], type(store).__name__
        assert item.created_at.tzinfo and item.updated_at >= item.created_at
        assert store.get(("users", "alice"), "other") is None and store.get(("users",), "prefs") is None


def test_an_item_is_a_note_a_person_reads_in_obsidian(vault, store):
    store.put(("users", "alice"), "prefs", VALUES["nested"] | {"food": "pizza", "slices": 3})
    path = _item_note(store, ("users", "alice"), "prefs")
    note = parse_note(path.read_bytes())
    assert path.parent.name == "memories" and path.stem == "A report"  # titled by its text
    assert note.meta["namespace"] == "users.alice" and note.meta["store_key"] == "prefs"
    assert note.meta["store_text"] == "content" and note.meta["merge"] is False
    assert (note.meta["food"], note.meta["slices"]) == ("pizza", 3)  # the scalars are properties
    assert note.meta["tags"] == ["langgraph", "langgraph/users", "langgraph/users/alice", "langgraph/users/alice/prefs"]
    assert note.body.startswith("A report\n\n```json\n")  # the text, then what no property can hold
    assert '"status": "published"' in note.body and '"pages"' in note.body
    assert note.meta["status"] == "active"  # the value's own "status" took nothing from vaultmem's


def test_a_value_without_text_is_found_by_its_words(vault, store):
    store.put(("users", "alice"), "k1", {"food_preference": "sushi", "count": 2})
    note = parse_note(_item_note(store, ("users", "alice"), "k1").read_bytes())
    assert note.meta["food_preference"] == "sushi" and '"food_preference": "sushi"' in note.body
    assert [i.key for i in store.search(("users",), query="sushi")] == ["k1"]


def test_get_is_exact_on_the_key_where_tags_alike_collide(store):
    keys = ["Prefs", "prefs", "a b", "a-b", "a/b", str(uuid.uuid4())]
    for n, key in enumerate(keys):
        store.put(("users", "alice"), key, {"text": f"value number {n}"})
    assert [store.get(("users", "alice"), k).value["text"] for k in keys] == [f"value number {n}" for n in range(6)]
    store.put(("users", "alice", "x"), "prefs", {"text": "deeper"})
    assert store.get(("users", "alice"), "prefs").value["text"] == "value number 1"


# -- update, delete ------------------------------------------------------------------------------------
def test_put_again_supersedes_the_note_and_the_same_value_writes_nothing(vault, store):
    store.put(("users", "alice"), "prefs", {"text": "Alice likes pizza", "food": "pizza"})
    first = store.get(("users", "alice"), "prefs")
    old = _item_note(store, ("users", "alice"), "prefs")
    store.put(("users", "alice"), "prefs", {"text": "Alice likes pasta now", "food": "pasta"})
    item = store.get(("users", "alice"), "prefs")
    assert item.value == {"text": "Alice likes pasta now", "food": "pasta"} and item.created_at == first.created_at
    history = parse_note(old.read_bytes())
    assert history.meta["status"] == "superseded" and history.body.strip() == "Alice likes pizza"  # kept, linked
    files = sorted(p.name for p in (vault.root / "memories").glob("*.md"))
    store.put(("users", "alice"), "prefs", {"food": "pasta", "text": "Alice likes pasta now"})
    assert sorted(p.name for p in (vault.root / "memories").glob("*.md")) == files
    assert [i.key for i in store.search(("users",))] == ["prefs"]  # one live item, not its history


def test_delete_archives_the_note_and_restore_brings_the_item_back(vault):
    note_id = ""
    for store in _both(vault):
        store.put(("users", "alice"), "prefs", {"text": "Alice likes pizza"})
        if isinstance(store, VaultStore):
            note_id = store._current(("users", "alice"), "prefs").memory.id
        store.delete(("users", "alice"), "prefs")
        assert store.get(("users", "alice"), "prefs") is None and store.search(("users",)) == []
        store.delete(("users", "alice"), "never-there")
    archived = vault.get(note_id)
    assert archived.status == "archived" and archived.path.startswith("archive/")
    vault.restore(note_id)
    assert VaultStore(vault).get(("users", "alice"), "prefs").value == {"text": "Alice likes pizza"}


# -- hand edits ------------------------------------------------------------------------------------------
def test_a_hand_edit_shows_in_get_at_once_and_a_put_after_it_keeps_it_as_history(vault, store):
    store.put(("users", "alice"), "prefs", {"text": "Alice likes pizza", "food": "pizza"})
    store.get(("users", "alice"), "prefs")  # the store has read it: the edit comes after
    path = _item_note(store, ("users", "alice"), "prefs")
    text = path.read_text(encoding="utf-8")
    edited = text.replace("food: pizza", "food: pizza margherita\nchecked: true").replace(
        "Alice likes pizza", "Alice likes pizza, but no olives")
    path.write_text(edited, encoding="utf-8")  # in place, as an editor saves: the folder's time stays
    item = store.get(("users", "alice"), "prefs")
    assert item.value == {"text": "Alice likes pizza, but no olives", "food": "pizza margherita", "checked": True}
    store.put(("users", "alice"), "prefs", {"text": "Alice likes pasta"})
    history = parse_note(path.read_bytes())  # the person's edit, kept as the item's history
    assert (history.meta["status"], history.meta["food"], history.meta["checked"]) == ("superseded", "pizza margherita",
                                                                                       True)
    assert history.body.strip() == "Alice likes pizza, but no olives"
    assert store.get(("users", "alice"), "prefs").value == {"text": "Alice likes pasta"}


def test_a_persons_tag_and_lifecycle_survive_a_put(vault, store):
    store.put(("users", "alice"), "prefs", {"text": "Alice likes pizza"})
    path = _item_note(store, ("users", "alice"), "prefs")
    path.write_text(path.read_text(encoding="utf-8").replace("tags: [langgraph", "tags: [reviewed, langgraph")
                    .replace("lifecycle: permanent", "lifecycle: preference"), encoding="utf-8")
    store.put(("users", "alice"), "prefs", {"text": "Alice likes pasta"})
    note = parse_note(_item_note(store, ("users", "alice"), "prefs").read_bytes())
    assert "reviewed" in note.meta["tags"] and note.meta["lifecycle"] == "preference"


# -- search ----------------------------------------------------------------------------------------------
DOCS = [(("docs",), "a", {"text": "Quarterly report on revenue", "type": "report", "status": "published", "score": 4.2}),
        (("docs",), "b", {"text": "Draft of the API guide", "type": "guide", "status": "draft", "score": 5.0}),
        (("docs", "2024"), "c", {"text": "Annual report for the board", "type": "report", "status": "published",
                                 "score": 3.1, "meta": {"pages": 40}}),
        (("docs", "2024"), "d", {"text": "Notes from the offsite", "type": "notes", "status": "draft", "score": 1.0}),
        (("other",), "e", {"text": "A report elsewhere", "type": "report", "status": "published", "score": 9.0})]


def _fill(store: BaseStore) -> BaseStore:
    for namespace, key, value in DOCS:
        store.put(namespace, key, value)
    return store


@pytest.mark.parametrize("where, keys", [
    ({"type": "report"}, {"a", "c"}),
    ({"type": "report", "status": "published"}, {"a", "c"}),
    ({"status": {"$eq": "draft"}}, {"b", "d"}),
    ({"status": {"$ne": "draft"}}, {"a", "c"}),
    ({"score": {"$gt": 4.2}}, {"b"}),
    ({"score": {"$gte": 4.2}}, {"a", "b"}),
    ({"score": {"$lt": 3.1}}, {"d"}),
    ({"score": {"$lte": 3.1, "$gt": 1}}, {"c"}),
    ({"meta": {"pages": 40}}, {"c"}),
    ({"meta": {"pages": {"$gte": 41}}}, set()),
    ({"missing": "x"}, set()),
])
def test_search_with_a_filter_finds_what_langgraphs_own_store_finds(vault, where, keys):
    for store in map(_fill, _both(vault)):
        found = store.search(("docs",), filter=where)
        assert {i.key for i in found} == keys, type(store).__name__
        assert all(isinstance(i, SearchItem) and i.score is None for i in found)


def test_search_pages_with_limit_and_offset(vault, store):
    _fill(store)
    every = [i.key for i in store.search((), limit=10)]
    assert sorted(every) == ["a", "b", "c", "d", "e"]
    pages = [[i.key for i in store.search((), limit=2, offset=n)] for n in (0, 2, 4)]
    assert sum(pages, []) == every
    assert {i.key for i in store.search(("docs", "2024"))} == {"c", "d"}


def test_search_by_query_ranks_by_recall_with_its_score(vault, store):
    _fill(store)
    found = store.search(("docs",), query="annual board report")
    assert found[0].key == "c" and found[0].score > found[-1].score > 0
    assert [i.key for i in store.search(("docs",), query="report", filter={"status": "published"})] in (["a", "c"],
                                                                                                      ["c", "a"])
    with pytest.raises(ValueError, match="unknown filter operator"):
        store.search(("docs",), filter={"score": {"$near": 1}})


def test_a_search_with_a_filter_looks_past_the_first_window(vault, store):
    for n in range(70):
        store.put(("bulk",), f"k{n}", {"text": f"bulk item {n}", "n": n})
    store.put(("rare",), "needle", {"text": "the one rare item", "n": -1})
    assert [i.key for i in store.search((), filter={"n": -1})] == ["needle"]
    assert len(store.search(("bulk",), filter={"n": {"$gte": 10}}, limit=100)) == 60


# -- list_namespaces -------------------------------------------------------------------------------------
LISTED = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"), ("a", "c", "f")]


@pytest.mark.parametrize("options", [
    {}, {"prefix": ("a", "b"), "max_depth": 3}, {"suffix": ("f",)}, {"prefix": ("a", "*", "f")},
    {"prefix": ("a",), "suffix": ("d", "*")}, {"max_depth": 2}, {"limit": 2, "offset": 1}, {"prefix": ("x",)},
])
def test_list_namespaces_answers_as_langgraphs_own_store(vault, options):
    listed = []
    for store in _both(vault):
        for n, namespace in enumerate(LISTED):
            store.put(namespace, f"k{n}", {"text": f"item {n}"})
        listed.append(store.list_namespaces(**options))
    assert listed[0] == listed[1]
    if options == {"prefix": ("a", "b"), "max_depth": 3}:  # the example of BaseStore.list_namespaces
        assert listed[0] == [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")]


def test_a_deleted_items_namespace_is_no_longer_listed(store):
    store.put(("a", "b"), "k", {"text": "one"})
    store.delete(("a", "b"), "k")
    assert store.list_namespaces() == []


def test_a_persons_own_notes_tagged_langgraph_are_no_items(vault, store):
    vault.remember("LangGraph compiles a StateGraph before it runs", tags=["langgraph"])
    vault.remember("A note on LangGraph's stores", tags=["langgraph/docs"], namespace="research")
    store.put(("docs",), "k", {"text": "a store item about LangGraph"})
    assert store.list_namespaces() == [("docs",)]
    assert [i.key for i in store.search((), query="LangGraph")] == ["k"]


# -- batches -----------------------------------------------------------------------------------------------
def test_abatch_runs_every_kind_of_operation_in_order(store):
    ops = [PutOp(("users", "alice"), "prefs", {"text": "Alice likes pizza"}), GetOp(("users", "alice"), "prefs"),
           SearchOp(("users",), query="pizza"), ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("users",)),)),
           PutOp(("users", "alice"), "prefs", None), GetOp(("users", "alice"), "prefs")]
    put, got, searched, listed, deleted, gone = asyncio.run(store.abatch(ops))
    assert put is None and got.value == {"text": "Alice likes pizza"} and [i.key for i in searched] == ["prefs"]
    assert listed == [("users", "alice")] and deleted is None and gone is None
    assert asyncio.run(store.aget(("users", "alice"), "prefs")) is None


def test_bad_namespaces_are_refused_as_langgraph_refuses_them(store):
    for bad in [("a.b",), ("",)]:
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "k", {"text": "x"})
        with pytest.raises(InvalidNamespaceError):
            store.batch([PutOp(bad, "k", {"text": "x"})])  # straight to batch: the store checks them itself
    for bad in [(), ("langgraph", "x"), ("*",)]:
        with pytest.raises(InvalidNamespaceError):
            store.batch([PutOp(bad, "k", {"text": "x"})])


# -- namespaces are a boundary ------------------------------------------------------------------------------
def test_a_store_for_one_namespace_never_returns_anothers_items(vault):
    owner = VaultStore(vault)
    owner.put(("bob",), "locker", {"text": "Bob's locker combination is QUOKKA-7731", "code": "QUOKKA-7731"})
    owner.put(("shared",), "release", {"text": "The release train leaves on Thursdays"})
    alice = VaultStore(vault.as_caller(Caller(namespace="alice")))
    alice.put(("alice",), "desk", {"text": "Alice's desk is by the window"})
    with pytest.raises(NamespaceDenied):
        alice.get(("bob",), "locker")
    with pytest.raises(NamespaceDenied):
        alice.put(("bob",), "locker", {"text": "overwritten"})
    with pytest.raises(NamespaceDenied):
        alice.delete(("bob",), "locker")
    seen = [alice.search(()), alice.search((), query="Bob locker combination QUOKKA"), alice.search(("bob",)),
            alice.search((), filter={"code": "QUOKKA-7731"}), alice.list_namespaces()]
    assert "QUOKKA" not in repr(seen) and "bob" not in repr(seen)
    assert {i.key for i in alice.search(())} == {"desk", "release"}
    assert owner.get(("bob",), "locker").value["text"].startswith("Bob's locker")  # untouched


def test_a_namespace_prefix_stops_at_a_label(store):
    store.put(("users", "alice"), "k", {"text": "Alice's"})
    store.put(("users", "alice2"), "k", {"text": "Alice2's"})
    assert [i.value["text"] for i in store.search(("users", "alice"))] == ["Alice's"]


# -- a graph -------------------------------------------------------------------------------------------------
def _readme_block(after: str) -> tuple[str, str]:
    """The README's python block after a heading, and the output block that follows it."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```(\w*)\n(.*?)^```", text[text.index(after):], re.MULTILINE | re.DOTALL)
    (lang, code), (_, output) = blocks[0], blocks[1]
    assert lang == "python"
    return code, output


def test_the_readmes_langgraph_graph_runs_and_prints_what_the_readme_shows(tmp_path):
    code, output = _readme_block("## Use it from LangGraph")
    env = {**os.environ, "VAULTMEM_HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == output


def test_a_graph_writes_in_one_node_and_reads_in_the_next(vault):
    from dataclasses import dataclass
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph
    from langgraph.runtime import Runtime

    @dataclass
    class Context:
        user_id: str

    class State(TypedDict):
        said: str
        known: list[str]

    def write(state: State, runtime: Runtime[Context]) -> dict:
        runtime.store.put((runtime.context.user_id, "memories"), "food", {"text": state["said"]})
        return {}

    def read(state: State, runtime: Runtime[Context]) -> dict:
        return {"known": [i.value["text"] for i in runtime.store.search((runtime.context.user_id,), query="food")]}

    graph = (StateGraph(State, context_schema=Context).add_node(write).add_node(read).add_edge(START, "write")
             .add_edge("write", "read").add_edge("read", END).compile(store=VaultStore(vault)))
    out = graph.invoke({"said": "I like pizza with olives", "known": []}, context=Context(user_id="alice"))
    assert out["known"] == ["I like pizza with olives"]
    assert asyncio.run(graph.ainvoke({"said": "I like sushi", "known": []}, context=Context(user_id="bob")))["known"] \
        == ["I like sushi"]
    assert VaultStore(vault).list_namespaces() == [("alice", "memories"), ("bob", "memories")]


# -- the retriever --------------------------------------------------------------------------------------------
def test_the_retriever_returns_documents_with_the_notes_metadata(vault):
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    from vaultmem.integrations.langchain import VaultRetriever

    made = vault.remember("Deploy window is Tuesday 22:00", tags=["ops"], source="ops-bot")
    vault.remember("The staging host is st-04", tags=["ops"])
    vault.remember("Lunch is at noon", tags=["life"])
    retriever = VaultRetriever(vault=vault, k=2, recall={"tags": ["ops"]})
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke("when is the deploy window")
    assert all(isinstance(d, Document) for d in docs) and len(docs) == 2
    first = docs[0]
    assert first.page_content == "Deploy window is Tuesday 22:00"
    assert {k: first.metadata[k] for k in ("id", "title", "path", "tags", "source")} == {
        "id": made.id, "title": made.title, "path": made.path, "tags": ["ops"], "source": "ops-bot"}
    assert first.metadata["date"].startswith("20") and first.metadata["score"] > docs[1].metadata["score"]
    assert [d.page_content for d in asyncio.run(retriever.ainvoke("staging host"))][0] == "The staging host is st-04"


def test_a_retriever_over_a_callers_view_reads_only_its_namespaces(vault):
    from vaultmem.integrations.langchain import VaultRetriever

    vault.remember("Bob's locker combination is QUOKKA-7731", namespace="bob")
    alice = VaultRetriever(vault=vault.as_caller(Caller(namespace="alice")), recall={"namespace": "*"})
    assert alice.invoke("locker combination QUOKKA") == []


def test_the_store_benchmark_runs(tmp_path):
    import json

    out = tmp_path / "figures.json"
    done = subprocess.run([sys.executable, str(REPO / "bench" / "langgraph_store.py"), "--smoke", "--json", str(out)],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "VAULTMEM_HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(out.read_text(encoding="utf-8"))
    assert set(figures["vaultmem"]) == set(figures["inmemory"]) and figures["vaultmem"]["get_ms"] > 0


# -- packaging ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("module", ["vaultmem.integrations.langgraph", "vaultmem.integrations.langchain"])
def test_without_the_extra_the_import_names_it_in_one_line(module):
    hide = "import sys\nfor name in ('langgraph', 'langgraph.store', 'langgraph.store.base', 'langchain_core'):\n" \
           "    sys.modules[name] = None\n"
    done = subprocess.run([sys.executable, "-c", f"{hide}import vaultmem\ntry:\n    import {module}\n"
                           "except vaultmem.MissingExtra as exc:\n    print(exc)\n"], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout == f"{module} needs the 'langgraph' extra: pip install 'vaultmem-md[langgraph]'\n", done.stderr


def test_the_core_importing_langgraph_breaks_a_contract(tmp_path):
    root = _copy(tmp_path)
    _add_import(root / "vaultmem" / "recall" / "context.py", "import langgraph")
    done = lint(root)
    assert done.returncode == 1 and "vaultmem.recall.context -> langgraph" in done.stdout, done.stdout


def test_puts_of_one_key_from_many_threads_leave_one_current_note(vault):
    from concurrent.futures import ThreadPoolExecutor

    views = [VaultStore(vault.as_caller(Caller(namespace="users.alice"))) for _ in range(4)]  # a server's, per token
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda n: views[n % 4].put(("users", "alice"), "prefs", {"text": f"version {n}"}), range(12)))
    live = [n for n in map(parse_note, (p.read_bytes() for p in (vault.root / "memories").glob("*.md")))
            if n.meta.get("store_key") == "prefs" and n.meta["status"] == "active"]
    assert len(live) == 1 and VaultStore(vault).get(("users", "alice"), "prefs").value == {"text": live[0].body.strip()}


def test_two_current_notes_of_one_key_answer_as_one_item_the_newer(vault, store):
    store.put(("users", "alice"), "prefs", {"text": "Alice likes pizza"})
    path = _item_note(store, ("users", "alice"), "prefs")
    # what a second process putting the key at the same moment leaves: another current note of it, newer
    from vaultmem.integrations.storeitems import item_tags, note_of

    body, properties, _ = note_of("prefs", {"text": "Alice likes pasta"})
    vault.remember(body, namespace="users.alice", tags=item_tags(("users", "alice"), "prefs"), merge=False,
                   properties=properties, source="langgraph", timestamp="2099-01-01T00:00:00+00:00")
    assert parse_note(path.read_bytes()).meta["status"] == "active"
    assert store.get(("users", "alice"), "prefs").value == {"text": "Alice likes pasta"}
    assert [i.value for i in store.search(("users",))] == [{"text": "Alice likes pasta"}]
    assert [i.value for i in store.search(("users",), query="Alice likes")] == [{"text": "Alice likes pasta"}]
