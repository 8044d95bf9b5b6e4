"""The LangGraph server's store routes of `vaultmem serve` (issue 29 item 3), called by the real
`langgraph-sdk` store client over a real uvicorn on a free loopback port: each call, the auth of a
token (x-api-key, as the SDK sends it), and the note a person reads on disk."""

from __future__ import annotations

import ast
import datetime as dt
from contextlib import contextmanager

import httpx
import pytest
from langgraph_sdk import get_sync_client

from vaultmem import Vault
from vaultmem.surfaces.http.app import build_app
from vaultmem.surfaces.http.run import in_thread

from .conftest import REPO
from .test_http import _child

FOOD = ["alice", "food"]  # the vault namespace alice.food


@contextmanager
def store_client(vault: Vault, key: str | None):
    """langgraph-sdk's store client of the API over `vault`, sending `key` (None: none at all)."""
    with in_thread(build_app(vault)) as url:
        client = get_sync_client(url=url, api_key=key)
        try:
            yield client.store
        finally:
            client.http.client.close()


@pytest.fixture
def alice(vault) -> str:
    """A read-write token of the vault namespace alice.food (the LangGraph namespace ("alice", "food"))."""
    return vault.add_token("alice", scope="read-write", namespaces=["alice.food"])[0]


def _status(call) -> tuple[int, str]:
    """The status and error code the SDK raised for a refused call."""
    with pytest.raises(httpx.HTTPStatusError) as refused:
        call()
    return refused.value.response.status_code, refused.value.response.json()["code"]


def test_put_then_get_gives_the_item_back_and_a_note_a_person_reads(vault, alice):
    value = {"text": "Alice likes spicy ramen", "rating": 5, "place": "Ichiran"}
    with store_client(vault, alice) as store:
        assert store.put_item(FOOD, "ramen", value) is None
        item = store.get_item(FOOD, "ramen")
        assert (item["namespace"], item["key"], item["value"]) == (FOOD, "ramen", value)
        assert dt.datetime.fromisoformat(item["created_at"]).tzinfo is not None  # ISO, as the LangGraph server sends
        assert store.get_item(FOOD, "udon") is None  # null, as the LangGraph server answers
        hit = vault.recall("spicy ramen", namespace="alice.food")[0]
        note = (vault.root / hit.path).read_text(encoding="utf-8")
        assert "Alice likes spicy ramen" in note and "Ichiran" in note
        (vault.root / hit.path).write_text(note.replace("spicy ramen", "mild ramen"), encoding="utf-8")
        assert store.get_item(FOOD, "ramen")["value"]["text"] == "Alice likes mild ramen"  # a person's edit, at once


def test_search_items_ranks_by_query_and_keeps_by_filter(vault, alice):
    with store_client(vault, alice) as store:
        store.put_item(FOOD, "ramen", {"text": "Alice likes spicy ramen", "rating": 5})
        store.put_item(FOOD, "sushi", {"text": "Alice finds sushi too cold", "rating": 2})
        store.put_item(FOOD, "curry", {"text": "Alice likes green curry", "rating": 4})
        ranked = store.search_items(["alice"], query="spicy ramen")["items"]
        assert ranked[0]["key"] == "ramen" and isinstance(ranked[0]["score"], float)
        liked = store.search_items(FOOD, filter={"rating": {"$gte": 4}})["items"]
        assert {i["key"] for i in liked} == {"ramen", "curry"} and {i["score"] for i in liked} == {None}
        assert [i["key"] for i in store.search_items(FOOD, filter={"rating": 2})["items"]] == ["sushi"]
        assert len(store.search_items(FOOD, limit=2)["items"]) == 2
        assert len(store.search_items(FOOD, limit=2, offset=2)["items"]) == 1


def test_list_namespaces_with_prefix_suffix_and_max_depth(vault):
    owner = vault.add_token("owner", scope="read-write", all_namespaces=True)[0]
    with store_client(vault, owner) as store:
        for namespace in (["alice", "food"], ["alice", "films"], ["bob", "food"]):
            store.put_item(namespace, "k", {"text": f"an item of {'.'.join(namespace)}"})
        assert store.list_namespaces()["namespaces"] == [["alice", "films"], ["alice", "food"], ["bob", "food"]]
        assert store.list_namespaces(prefix=["alice"])["namespaces"] == [["alice", "films"], ["alice", "food"]]
        assert store.list_namespaces(suffix=["food"])["namespaces"] == [["alice", "food"], ["bob", "food"]]
        assert store.list_namespaces(max_depth=1)["namespaces"] == [["alice"], ["bob"]]
        assert store.list_namespaces(limit=1, offset=1)["namespaces"] == [["alice", "food"]]


def test_delete_item_archives_the_note_and_restore_brings_it_back(vault, alice):
    with store_client(vault, alice) as store:
        store.put_item(FOOD, "ramen", {"text": "Alice likes spicy ramen"})
        made = vault.recall("spicy ramen", namespace="alice.food")[0]
        assert store.delete_item(FOOD, "ramen") is None
        assert store.get_item(FOOD, "ramen") is None and store.search_items(FOOD)["items"] == []
        archived = vault.recall("spicy ramen", namespace="alice.food", include=["archived"])[0]
        assert archived.id == made.id and archived.status == "archived" and (vault.root / archived.path).exists()
        vault.restore(made.id)
        assert store.get_item(FOOD, "ramen")["value"] == {"text": "Alice likes spicy ramen"}


def test_a_store_request_needs_a_token_and_a_read_token_only_reads(vault, alice):
    reader = vault.add_token("reader", scope="read", namespaces=["alice.food"])[0]
    with store_client(vault, alice) as store:
        store.put_item(FOOD, "ramen", {"text": "Alice likes spicy ramen"})
    with store_client(vault, None) as store:
        assert _status(lambda: store.get_item(FOOD, "ramen")) == (401, "unauthorized")
        assert _status(lambda: store.search_items(["alice"])) == (401, "unauthorized")
    with store_client(vault, reader) as store:
        assert store.get_item(FOOD, "ramen")["value"] == {"text": "Alice likes spicy ramen"}
        assert _status(lambda: store.put_item(FOOD, "ramen", {"text": "overwritten"})) == (403, "read_only")
        assert _status(lambda: store.delete_item(FOOD, "ramen")) == (403, "read_only")
    assert vault.get(vault.recall("ramen", namespace="alice.food")[0].id).content.strip() == "Alice likes spicy ramen"


def test_a_namespace_token_never_reaches_another_namespaces_items(vault, alice):
    bob = vault.add_token("bob", scope="read-write", namespaces=["bob"])[0]
    with store_client(vault, bob) as store:
        store.put_item(["bob"], "locker", {"text": "Bob's locker combination is QUOKKA-7731"})
    with store_client(vault, alice) as store:
        assert _status(lambda: store.get_item(["bob"], "locker")) == (403, "namespace_denied")
        assert _status(lambda: store.put_item(["bob"], "locker", {"text": "mine now"})) == (403, "namespace_denied")
        assert _status(lambda: store.delete_item(["bob"], "locker")) == (403, "namespace_denied")
        assert _status(lambda: store.put_item(["alice"], "k", {"text": "x"})) == (403, "namespace_denied")  # not alice.food
        seen = [store.search_items([]), store.search_items([], query="Bob locker QUOKKA"), store.search_items(["bob"]),
                store.list_namespaces()]
        assert "QUOKKA" not in repr(seen) and "bob" not in repr(seen)
    assert vault.recall("locker combination", namespace="bob")[0].title.startswith("Bob's locker")  # untouched


@pytest.mark.parametrize("body, code", [({"namespace": ["alice.food"], "key": "k", "value": {}}, "invalid_namespace"),
                                        ({"namespace": [], "key": "k", "value": {}}, "invalid_namespace"),
                                        ({"namespace": ["langgraph"], "key": "k", "value": {}}, "invalid_namespace"),
                                        ({"namespace": FOOD, "key": "k"}, "invalid_request")])
def test_a_bad_namespace_or_body_is_a_422(vault, body, code):
    with in_thread(build_app(vault)) as url:
        answer = httpx.put(f"{url}/store/items", json=body)
    assert (answer.status_code, answer.json()["code"]) == (422, code), answer.text


def test_an_unknown_filter_operator_is_a_422_naming_it(vault, alice):
    with store_client(vault, alice) as store:
        store.put_item(FOOD, "ramen", {"text": "Alice likes spicy ramen", "rating": 5})  # a filter meets a value
        with pytest.raises(httpx.HTTPStatusError) as refused:
            store.search_items(FOOD, filter={"rating": {"$like": 4}})
    assert refused.value.response.status_code == 422 and "'$like'" in refused.value.response.json()["message"]


def test_without_the_langgraph_extra_the_store_routes_say_what_to_install(vault, tmp_path):
    done = _child("import sys\nfor name in ('langgraph', 'langgraph.store', 'langgraph.store.base'):\n"
                  "    sys.modules[name] = None\n"
                  "import httpx\nfrom vaultmem import Vault\nfrom vaultmem.surfaces.http.app import build_app\n"
                  "from vaultmem.surfaces.http.run import in_thread\n"
                  f"with in_thread(build_app(Vault({str(vault.root)!r}))) as url:\n"
                  "    print(httpx.get(f'{url}/api/v1/health').status_code)\n"
                  "    answer = httpx.post(f'{url}/store/items/search', json={'namespace_prefix': ['a']})\n"
                  "    print(answer.status_code, answer.json())\n", tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["200", "501 {'code': 'missing_extra', 'message': \"the LangGraph store (/store/… "
                                               "routes) needs the 'langgraph' extra: pip install "
                                               "'vaultmem-md[langgraph]'\"}"]



def test_the_readmes_store_client_block_runs_and_answers_what_it_says(vault, alice):
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme[readme.index("**A LangGraph deployment's store.**"):].split("```python\n", 1)[1].split("```", 1)[0]
    scope: dict = {}
    with in_thread(build_app(vault)) as url:
        for line in block.replace("http://127.0.0.1:8765", url).replace('"vm_…"', repr(alice)).splitlines():
            statement, _, said = line.partition("#")
            if said.strip().startswith(("{", "[")):  # the answer the README shows
                assert eval(statement, scope) == ast.literal_eval(said.strip()), line
            elif statement.strip():
                exec(statement, scope)
    assert vault.recall("spicy ramen", namespace="alice.food", include=["archived"])[0].status == "archived"
