"""The HTTP server (issue 29 items 1 and 2), over a real uvicorn on a free loopback port and a real
httpx client: every route by introspection, the auth matrix, the limits, errors as JSON, and a
person's edit reaching recall and the change feed while it serves."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from urllib.parse import quote

import httpx
import pytest
from fastapi.routing import APIRoute
from typer.testing import CliRunner

from vaultmem import Vault, VaultmemError
from vaultmem.surfaces.cli import app as cli
from vaultmem.surfaces.http import loopback, serve
from vaultmem.surfaces.http.app import API, build_app
from vaultmem.surfaces.http.guard import RateLimit
from vaultmem.surfaces.http.run import in_thread

from .conftest import REPO
from .test_boundaries import BOB_TAG, SECRET, Bobs

EDIT_WAIT_S = 10.0  # how long a test waits for the watcher to see a save (it takes well under a second)


@contextmanager
def running(vault: Vault, **options):
    """The API over `vault` on a free loopback port, and a client of it."""
    with in_thread(build_app(vault, **options)) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def note_url(ref: str, tail: str = "") -> str:
    return f"{API}/memories/{quote(ref, safe='/')}{tail}"


def until(check, what: str):
    """check() again until it is true (the watcher works in the background)."""
    deadline = time.monotonic() + EDIT_WAIT_S
    while not (found := check()):
        assert time.monotonic() < deadline, f"{what} within {EDIT_WAIT_S} s"
        time.sleep(0.05)
    return found


# -- every route: listed from the app, each called for real ----------------------------------------
def _routes(app) -> set[tuple[str, str]]:
    return {(method, route.path) for route in app.routes if getattr(route, "methods", None)
            for method in route.methods if method not in ("HEAD", "OPTIONS")}


NOTE = API + "/memories/{ref:path}"
LUNCH = {"namespace": ["agent-a"], "key": "lunch"}  # a LangGraph store item
# (method, path) -> (whether it writes, the call made with the note `ref` of a memory)
ROUTES = {
    ("GET", "/openapi.json"): (False, lambda c, ref: c.get("/openapi.json")),
    ("GET", f"{API}/health"): (False, lambda c, ref: c.get(f"{API}/health")),
    ("GET", f"{API}/status"): (False, lambda c, ref: c.get(f"{API}/status")),
    ("POST", f"{API}/memories"): (True, lambda c, ref: c.post(f"{API}/memories", json={"text": "Lunch is at noon"})),
    ("POST", f"{API}/memories/batch"): (True, lambda c, ref: c.post(f"{API}/memories/batch", json={
        "items": [{"text": "The lab opens at eight"}, {"text": "The lab closes at six", "tags": ["lab"]}]})),
    ("GET", f"{API}/recall"): (False, lambda c, ref: c.get(f"{API}/recall", params={"query": "deploy window"})),
    ("GET", f"{API}/context"): (False, lambda c, ref: c.get(f"{API}/context", params={"query": "deploy"})),
    ("GET", f"{API}/ask"): (False, lambda c, ref: c.get(f"{API}/ask", params={"question": "when is the deploy window"})),
    ("GET", f"{API}/changes"): (False, lambda c, ref: c.get(f"{API}/changes")),
    ("POST", f"{API}/forget"): (True, lambda c, ref: c.post(f"{API}/forget", json={"reason": "x", "query": "nothing like it",
                                                                                  "dry_run": True})),
    ("GET", NOTE): (False, lambda c, ref: c.get(note_url(ref))),
    ("GET", NOTE + "/why"): (False, lambda c, ref: c.get(note_url(ref, "/why"))),
    ("POST", NOTE + "/feedback"): (True, lambda c, ref: c.post(note_url(ref, "/feedback"), json={"verdict": "useful"})),
    ("POST", NOTE + "/pin"): (True, lambda c, ref: c.post(note_url(ref, "/pin"))),
    ("DELETE", NOTE + "/pin"): (True, lambda c, ref: c.delete(note_url(ref, "/pin"))),
    ("POST", NOTE + "/forget"): (True, lambda c, ref: c.post(note_url(ref, "/forget"), json={"reason": "done"})),
    ("POST", NOTE + "/restore"): (True, lambda c, ref: c.post(note_url(ref, "/restore"))),
    # the LangGraph server's store routes (test_http_store.py calls them with langgraph-sdk), in agent-a: the
    # namespace of the matrix's tokens
    ("PUT", "/store/items"): (True, lambda c, ref: c.put("/store/items", json={**LUNCH, "value": {"text": "Lunch at noon"}})),
    ("GET", "/store/items"): (False, lambda c, ref: c.get("/store/items", params={"namespace": "agent-a", "key": "lunch"})),
    ("POST", "/store/items/search"): (False, lambda c, ref: c.post("/store/items/search", json={
        "namespace_prefix": ["agent-a"], "query": "lunch"})),
    ("POST", "/store/namespaces"): (False, lambda c, ref: c.post("/store/namespaces", json={"prefix": ["agent-a"]})),
    ("DELETE", "/store/items"): (True, lambda c, ref: c.request("DELETE", "/store/items", json=LUNCH)),
}
OPEN = {("GET", "/openapi.json"), ("GET", f"{API}/health")}  # answered without a token


def test_every_route_is_in_the_table_and_answers(vault):
    made = vault.remember("The deploy window is Tuesday 22:00", tags=["ops"])
    app = build_app(vault)
    assert _routes(app) == set(ROUTES), f"say how these are tested and guarded: {_routes(app) ^ set(ROUTES)}"
    with in_thread(app) as url, httpx.Client(base_url=url) as client:
        for (method, path), (_, call) in ROUTES.items():  # in table order: forget before restore
            answer = call(client, made.id)
            assert answer.status_code in (200, 204), (method, path, answer.text)  # 204: a store put or delete
            assert answer.status_code == 204 or answer.headers["content-type"].startswith("application/json")


def test_answers_carry_the_python_apis_field_names(vault):
    made = vault.remember("The deploy window is Tuesday 22:00", tags=["ops"], lifecycle="fact")
    with running(vault) as client:
        hit = client.get(f"{API}/recall", params={"query": "deploy window", "explain": True}).json()["hits"][0]
        assert set(hit) == set(vault.recall("deploy window")[0].to_dict())
        assert client.get(note_url(made.id)).json() == json.loads(json.dumps(vault.get(made.id).to_dict()))
        written = client.post(f"{API}/memories", json={"text": "Standups are at 10:00", "explain": True}).json()
        assert {"action", "id", "path", "explain"} <= set(written) and written["explain"]["decision"]
        asked = client.get(f"{API}/ask", params={"question": "when is the deploy window"}).json()
        assert set(asked) == set(vault.ask("when is the deploy window").to_dict())


def test_recall_takes_every_filter_of_the_cli(vault):
    vault.remember("Deploy notes for the ops team", tags=["ops"], source="ops-bot", lifecycle="fact")
    vault.remember("Deploy notes for the web team", tags=["web"], source="web-bot")
    old = vault.remember("Deploy notes from last year", tags=["ops"], timestamp="2025-01-05T10:00:00+00:00")
    vault.forget(old.id, "old")
    with running(vault) as client:
        def titles(**params):
            answer = client.get(f"{API}/recall", params={"query": "deploy notes", **params})
            assert answer.status_code == 200, answer.text
            return {h["title"] for h in answer.json()["hits"]}

        assert titles(tags=["ops"]) == {"Deploy notes for the ops team"}
        assert titles(source="web-bot") == {"Deploy notes for the web team"}
        assert titles(lifecycle="fact") == {"Deploy notes for the ops team"}
        assert titles(include=["archived"], until="2025-02-01") == {"Deploy notes from last year"}
        assert titles(status=["archived"]) == {"Deploy notes from last year"}
        assert "Deploy notes from last year" not in titles(since="2026-01-01")
        assert len(titles(limit=1)) == 1
        assert client.get(f"{API}/recall", params={"query": "deploy", "explain": True}).json()["hits"][0]["channels"]


def test_the_openapi_document_is_generated_from_the_models(vault):
    with running(vault) as client:
        doc = client.get("/openapi.json").json()
    assert {path for path in doc["paths"]} >= {f"{API}/recall", f"{API}/memories", f"{API}/changes"}
    recall = doc["paths"][f"{API}/recall"]["get"]
    assert {p["name"] for p in recall["parameters"]} >= {"query", "tags", "limit", "since", "namespace", "explain"}
    assert {"HTTPBearer", "APIKeyHeader"} <= set(doc["components"]["securitySchemes"])
    assert "MemoryItem" in doc["components"]["schemas"] and "Problem" in doc["components"]["schemas"]


# -- auth ----------------------------------------------------------------------------------------
def test_without_a_token_the_loopback_is_the_local_caller_until_the_vault_has_one(vault):
    with running(vault) as client:
        assert client.post(f"{API}/memories", json={"text": "Lunch is at noon"}).status_code == 200
        assert client.get(f"{API}/status").json()["caller"] == {"name": "http", "scope": "read-write",
                                                                 "namespaces": ["*"], "trust": "agent"}
        secret, _ = vault.add_token("agent", namespaces=["agent-a"])
        refused = client.get(f"{API}/recall", params={"query": "lunch"})
        assert refused.status_code == 401 and refused.json()["code"] == "unauthorized"
        assert client.get(f"{API}/recall", params={"query": "lunch"}, headers=bearer(secret)).status_code == 200


def _matrix_vault(vault: Vault) -> tuple[dict[str, str], str]:
    """Tokens of every kind in a vault with a memory; (tokens by kind, the memory's id)."""
    made = vault.remember("The deploy window is Tuesday 22:00", tags=["ops"])
    tokens = {kind: vault.add_token(kind, scope=scope, namespaces=["agent-a"])[0]
              for kind, scope in (("reader", "read"), ("writer", "read-write"), ("revoked", "read-write"))}
    vault.revoke_token("revoked")
    return tokens, made.id


@pytest.mark.parametrize("who", ["none", "wrong", "revoked", "reader"])
def test_the_auth_matrix_over_every_route(vault, who):
    tokens, ref = _matrix_vault(vault)
    headers = {"none": {}, "wrong": bearer("vm_" + "x" * 43), "revoked": bearer(tokens["revoked"]),
               "reader": {"x-api-key": tokens["reader"]}}[who]
    with running(vault) as client:
        client.headers.update(headers)
        for (method, path), (writes, call) in ROUTES.items():
            answer = call(client, ref)
            if (method, path) in OPEN or (who == "reader" and not writes):
                assert answer.status_code == 200, (who, path, answer.text)
                continue
            expected = (403, "read_only") if who == "reader" else (401, "unauthorized")
            assert (answer.status_code, answer.json()["code"]) == expected, (who, method, path, answer.text)
            assert set(answer.json()) == {"code", "message"}  # nothing of the vault in it
            assert "deploy" not in answer.text.lower() and ref not in answer.text
    assert len(vault.recall("lunch")) == 0  # no write went through


def test_a_token_works_as_bearer_and_as_x_api_key_and_a_revoke_counts_at_once(vault):
    secret, _ = vault.add_token("ci", scope="read-write", namespaces=["ci"])
    with running(vault) as client:
        for headers in (bearer(secret), {"x-api-key": secret}):
            assert client.get(f"{API}/status", headers=headers).json()["caller"]["name"] == "ci"
        Vault(vault.root).revoke_token("ci")  # another process, while the server runs
        assert client.get(f"{API}/status", headers=bearer(secret)).status_code == 401


def test_the_audit_log_names_the_token_never_the_token_itself(vault):
    secret, _ = vault.add_token("phone", scope="read-write", namespaces=["agent-a"])
    with running(vault) as client:
        made = client.post(f"{API}/memories", json={"text": "The door code is in the safe"},
                           headers=bearer(secret)).json()
    logs = "".join(p.read_text() for p in (vault.root / ".vaultmem").rglob("*.jsonl"))
    assert secret not in logs
    events = [json.loads(line) for p in (vault.root / ".vaultmem").rglob("audit*.jsonl") for line in p.read_text().splitlines()]
    mine = [e for e in events if e.get("id") == made["id"]]
    assert mine and all(e["caller"] == "phone" and e["caller_namespaces"] == ["agent-a"] for e in mine)


def test_a_tokens_trust_caps_what_its_client_says_it_is(vault):
    agent, _ = vault.add_token("agent", scope="read-write", namespaces=["a"])
    user, _ = vault.add_token("person", scope="read-write", namespaces=["a"], trust="user")
    with running(vault) as client:
        said_user = client.post(f"{API}/memories", json={"text": "Standups move to 10:00", "source": "user"},
                                headers=bearer(agent)).json()
        trusted = client.post(f"{API}/memories", json={"text": "Standups are in room 4", "source": "user"},
                              headers=bearer(user)).json()
        web = client.post(f"{API}/memories", json={"text": "A blog says the API is deprecated", "source": "web"},
                          headers=bearer(user)).json()
    assert vault.get(said_user["id"]).meta["trust"] == "agent"
    assert vault.get(trusted["id"]).meta["trust"] == "user"
    assert (vault.get(web["id"]).meta["trust"], web["status"]) == ("external", "candidate")


def test_a_namespace_token_never_sees_another_namespaces_notes(vault):
    bobs = Bobs(vault)
    alice, _ = vault.add_token("alice", scope="read-write", namespaces=["alice"])
    start = vault.changes().cursor.rpartition(".")[0] + ".0"
    with running(vault) as client:
        client.headers.update(bearer(alice))
        reads = {"recall": client.get(f"{API}/recall", params={"query": f"locker combination {SECRET}", "namespace": "*",
                                                                "include": ["candidate", "archived", "superseded"]}),
                 "recall by tag": client.get(f"{API}/recall", params={"tags": [BOB_TAG]}),
                 "context": client.get(f"{API}/context", params={"query": "Bob locker combination"}),
                 "ask": client.get(f"{API}/ask", params={"question": "What is Bob's locker combination?"}),
                 "changes": client.get(f"{API}/changes", params={"since": start, "limit": 1000}),
                 "status": client.get(f"{API}/status")}
        for what, answer in reads.items():
            assert answer.status_code == 200, (what, answer.text)
            given = {"recall": f"locker combination {SECRET}", "recall by tag": BOB_TAG}.get(what, "")  # echoed back
            bobs.unseen(f"HTTP {what}", answer.text, given)
        assert any(c["namespace"] == "alice" for c in reads["changes"].json()["changes"])  # the feed did answer
        for ref in bobs.refs:
            shown = client.get(note_url(ref))
            assert (shown.status_code, shown.json()["code"]) == (404, "not_found")
            bobs.unseen(f"HTTP show {ref}", shown.text, ref)
        denied = client.get(f"{API}/recall", params={"query": "locker", "namespace": "bob"})
        assert (denied.status_code, denied.json()["code"]) == (403, "namespace_denied")
        bobs.unseen("HTTP recall namespace=bob", denied.text)
    bobs.unchanged("the HTTP reads")


def test_every_route_keeps_the_namespace_boundary(vault):
    """The boundary walk of test_boundaries.py over HTTP: every route as alice's token over Bob's notes."""
    bobs = Bobs(vault)
    alice, _ = vault.add_token("alice", scope="read-write", namespaces=["alice"])
    app = build_app(vault)
    with in_thread(app) as url, httpx.Client(base_url=url, headers=bearer(alice)) as client:
        for (method, path), (_, call) in ROUTES.items():
            refs = bobs.refs if "{ref:path}" in path else [f"{SECRET}-unused"]
            for ref in refs:
                answer = call(client, ref)
                bobs.unseen(f"HTTP {method} {path} ({ref})", answer.text, ref)
                if "{ref:path}" in path:
                    assert answer.status_code == 404, (method, path, ref, answer.text)
        selected = client.post(f"{API}/forget", json={"reason": "gone", "tags": [BOB_TAG]})
        bobs.unseen("HTTP forget by tag", selected.text, BOB_TAG)
        batch = client.post(f"{API}/memories/batch", json={"items": [{"text": "ok"}, {"text": "no", "namespace": "bob"}]})
        assert (batch.status_code, batch.json()["code"]) == (403, "namespace_denied")
    bobs.unchanged("the HTTP walk")


def test_beyond_the_loopback_it_refuses_to_start_without_a_token(vault):
    assert loopback("127.0.0.1") and loopback("::1") and loopback("localhost") and loopback("127.8.0.1")
    assert not loopback("0.0.0.0") and not loopback("192.168.1.5") and not loopback("example.com")
    with pytest.raises(VaultmemError, match="needs a token"):
        serve(vault.root, host="0.0.0.0", port=0)


def test_served_beyond_the_loopback_a_request_needs_a_token_even_after_the_last_is_revoked(vault):
    secret, _ = vault.add_token("only", namespaces=["a"])
    with running(vault, loopback=False) as client:
        assert client.get(f"{API}/status", headers=bearer(secret)).status_code == 200
        vault.revoke_token("only")
        assert client.get(f"{API}/status").status_code == 401


# -- limits --------------------------------------------------------------------------------------
def test_an_oversized_body_is_a_413_whether_it_says_its_length_or_not(vault):
    vault.configure("http", max_body_bytes=2000, max_batch=3)
    with running(vault) as client:
        big = json.dumps({"text": "x" * 5000})
        for answer in (client.post(f"{API}/memories", content=big, headers={"content-type": "application/json"}),
                       client.post(f"{API}/memories", content=iter([big[:1500].encode(), big[1500:].encode()]),
                                   headers={"content-type": "application/json"})):
            assert (answer.status_code, answer.json()["code"]) == (413, "too_large"), answer.text
            assert "http.max_body_bytes" in answer.json()["message"]
        many = client.post(f"{API}/memories/batch", json={"items": [{"text": f"note {i}"} for i in range(4)]})
        assert (many.status_code, many.json()["code"]) == (413, "too_large")
        assert client.get(f"{API}/health").status_code == 200  # the server goes on
    assert vault.recall("note") == []


def test_a_token_past_its_rate_gets_429_with_retry_after(vault):
    vault.configure("http", rate_per_minute=6)  # a burst of one
    secret, _ = vault.add_token("busy", namespaces=["a"])
    with running(vault) as client:
        assert client.get(f"{API}/status", headers=bearer(secret)).status_code == 200
        limited = client.get(f"{API}/status", headers=bearer(secret))
        assert (limited.status_code, limited.json()["code"]) == (429, "rate_limited")
        assert int(limited.headers["retry-after"]) >= 1


def test_the_rate_limit_refills_with_time():
    now = [0.0]
    rate = RateLimit(60, clock=lambda: now[0])  # one a second, bursts of six
    assert [rate.wait("t") for _ in range(6)] == [0.0] * 6
    assert rate.wait("t") == pytest.approx(1.0) and rate.wait("other") == 0.0
    now[0] += 1.0
    assert rate.wait("t") == 0.0 and rate.wait("t") > 0
    assert RateLimit(0).wait("t") == 0.0


def test_cors_is_off_unless_configured(vault):
    preflight = {"Origin": "http://localhost:3000", "Access-Control-Request-Method": "GET"}
    with running(vault) as client:
        assert "access-control-allow-origin" not in client.options(f"{API}/recall", headers=preflight).headers
    vault.configure("http", cors_origins=["http://localhost:3000"])
    with running(vault) as client:
        allowed = client.options(f"{API}/recall", headers=preflight)
        assert allowed.headers["access-control-allow-origin"] == "http://localhost:3000"
        other = client.options(f"{API}/recall", headers={**preflight, "Origin": "http://evil.example"})
        assert "access-control-allow-origin" not in other.headers


# -- errors --------------------------------------------------------------------------------------
@pytest.mark.parametrize("body, field", [
    ('{"text": "unclosed', "body"), ("", "body"), ('{"text": 5}', "text"), ('{"text": "ok", "score": "high"}', "score"),
    ('{"text": "ok", "colour": "red"}', "colour"), ('{"text": "ok", "tags": [1, {}]}', "tags"), ("[1, 2]", "body")])
def test_malformed_json_and_wrong_types_are_422_naming_the_field(vault, body, field):
    with running(vault) as client:
        answer = client.post(f"{API}/memories", content=body, headers={"content-type": "application/json"})
    assert answer.status_code == 422, answer.text
    assert answer.json()["code"] == "invalid_request" and answer.json()["field"].split(".")[0] == field


@pytest.mark.parametrize("params, field", [({"limit": "abc"}, "limit"), ({"limit": 0}, "limit"), ({"colour": "x"}, "colour"),
                                           ({"include": "forgotten"}, "include")])
def test_bad_query_parameters_are_422_naming_the_parameter(vault, params, field):
    with running(vault) as client:
        answer = client.get(f"{API}/recall", params={"query": "x", **params})
    assert (answer.status_code, answer.json()["field"].split(".")[0]) == (422, field), answer.text


def test_a_bad_batch_item_is_named_by_its_place(vault):
    with running(vault) as client:
        answer = client.post(f"{API}/memories/batch", json={"items": [{"text": "ok"}, {"text": 5}]})
    assert (answer.status_code, answer.json()["field"]) == (422, "items.1.text")
    assert vault.recall("ok") == []


def test_library_errors_carry_a_stable_code_and_the_clis_message(vault):
    secret, _ = vault.add_token("w", scope="read-write", namespaces=["a"])
    with running(vault) as client:
        client.headers.update(bearer(secret))
        missing = client.get(note_url("no such note"))
        assert missing.json() == {"code": "not_found", "message": "no note matches 'no such note'"}
        refused = client.post(f"{API}/memories", json={"text": "my password", "tags": ["password"]})
        assert refused.status_code == 422 and refused.json()["code"] == "policy_violation"
        nothing = client.post(f"{API}/forget", json={"reason": "x"})
        assert nothing.status_code == 422 and "ids, tags, query" in nothing.json()["message"]
        cursor = client.get(f"{API}/changes", params={"since": "nonsense"})
        assert (cursor.status_code, cursor.json()["code"]) == (422, "invalid_value")
        no_route = client.get(f"{API}/nothing-here")
        assert (no_route.status_code, no_route.json()["code"]) == (404, "no_route")


def test_an_unexpected_error_is_one_line_never_a_traceback(vault, monkeypatch):
    with running(vault) as client:
        monkeypatch.setattr(Vault, "stats", lambda self: 1 / 0)
        answer = client.get(f"{API}/status")
    assert answer.status_code == 500
    assert answer.json() == {"code": "internal", "message": "unexpected error; the server's log has the details"}


# -- hand edits while it serves --------------------------------------------------------------------
def test_a_persons_edit_reaches_recall_and_the_change_feed_while_it_serves(vault):
    made = vault.remember("The VPN gateway is vpn.example.com")
    with running(vault) as client:
        cursor = client.get(f"{API}/changes").json()["cursor"]
        path = vault.root / made.path
        path.write_text(path.read_text(encoding="utf-8").replace("vpn.example.com", "gateway-7.example.org"),
                        encoding="utf-8")

        def found():
            hits = client.get(f"{API}/recall", params={"query": "gateway-7"}).json()["hits"]
            return [h for h in hits if h["id"] == made.id]

        assert "gateway-7.example.org" in until(found, "the edit recalled")[0]["content"]
        changes = client.get(f"{API}/changes", params={"since": cursor}).json()
        assert [(c["action"], c["origin"], c["id"]) for c in changes["changes"]] == [("changed", "disk", made.id)]
        (vault.root / "memories" / "Typed by hand.md").write_text("---\ntype: fact\n---\nThe printer is on floor 3\n",
                                                                 encoding="utf-8")
        later = until(lambda: client.get(f"{API}/changes", params={"since": changes["cursor"]}).json()["changes"],
                      "the new note in the feed")
        assert [(c["action"], c["path"]) for c in later] == [("created", "memories/Typed by hand.md")]


# -- the command line ------------------------------------------------------------------------------
def test_token_commands_print_the_token_once_and_never_again(vault):
    runner = CliRunner()
    made = runner.invoke(cli, ["token", "add", "phone", "--namespace", "agent-a", "--scope", "read-write",
                               "--vault", str(vault.root)])
    assert made.exit_code == 0, made.output
    secret = made.stdout.strip()
    assert secret.startswith("vm_") and vault.token_for(secret).name == "phone"
    listed = runner.invoke(cli, ["token", "list", "--json", "--vault", str(vault.root)])
    assert json.loads(listed.stdout)[0]["namespaces"] == ["agent-a"] and secret not in listed.output
    vague = runner.invoke(cli, ["token", "add", "vague", "--vault", str(vault.root)])
    assert vague.exit_code == 1 and "--namespace or --all-namespaces" in vague.output
    gone = runner.invoke(cli, ["token", "revoke", "phone", "--json", "--vault", str(vault.root)])
    assert json.loads(gone.stdout) == {"revoked": True, "name": "phone"} and vault.token_for(secret) is None


def _child(code: str, tmp_path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "VAULTMEM_HOME": str(tmp_path / "home")}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60,
                          stdin=subprocess.DEVNULL)


def test_without_the_extra_serve_says_what_to_install(vault, tmp_path):
    done = _child("import sys; sys.modules['fastapi'] = None; sys.argv = ['vaultmem', 'serve', '--vault', "
                  f"{str(vault.root)!r}]; from vaultmem.__main__ import main; main()", tmp_path)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "Error: the HTTP server needs the 'http' extra: pip install 'vaultmem-md[http]'\n"


def test_importing_vaultmem_and_the_server_package_imports_no_web_framework(tmp_path):
    done = _child("import sys, vaultmem, vaultmem.surfaces.http, vaultmem.surfaces.cli; "
                  "print(sorted(m for m in sys.modules if m.split('.')[0] in ('fastapi', 'starlette', 'uvicorn', "
                  "'pydantic')))", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("workers", ["1", "2"])
def test_vaultmem_serve_answers_and_stops(vault, tmp_path, workers):
    code = ("import sys; sys.argv = ['vaultmem', 'serve', '--port', '0', '--stop-after', '30', '--workers', "
            f"{workers!r}, '--vault', {str(vault.root)!r}]; from vaultmem.__main__ import main; main()")
    env = {**os.environ, "PYTHONPATH": str(REPO), "VAULTMEM_HOME": str(tmp_path / "home")}
    server = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = server.stderr.readline()
        assert line.startswith("Serving http://127.0.0.1:"), line
        url = line.split()[1].removesuffix("/api/v1")
        assert httpx.get(f"{url}{API}/health", timeout=30).json()["status"] == "ok"  # workers: once one is up
    finally:
        server.send_signal(signal.SIGINT)  # Ctrl-C
        assert server.wait(30) in (0, -signal.SIGINT, 130)  # uvicorn ends by raising the signal it caught
        assert "Traceback" not in server.stderr.read()
