"""The MCP server as a client meets it: in process through the SDK's own client, and once over stdio."""

import json
import os
import subprocess
import sys
import threading
import time

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters

from vaultmem.surfaces import mcp as surface

from .conftest import REPO, write_note

TOOLS = {"remember", "recall", "ask", "context", "show", "why", "feedback", "forget"}
READERS = TOOLS - {"remember", "feedback", "forget"}
HIT_FIELDS = {"id", "title", "content", "source", "date", "score", "tags"}
HAND_ID = "01JDX3K8Q4W2M9ZC6T7B5N0H1A"


def session(server, body, **client_options):
    """Run `await body(client)` against the server in process; returns what it returns."""
    async def main():
        async with Client(server, **client_options) as client:
            return await body(client)

    return anyio.run(main)


def call(server, tool, **arguments):
    """One tool call in a fresh session."""
    return session(server, lambda client: client.call_tool(tool, arguments))


@pytest.fixture
def server(vault):
    return surface.build_server(vault)


def test_every_tool_has_a_typed_input_and_output_schema(server):
    tools = {t.name: t for t in session(server, lambda c: c.list_tools()).tools}
    assert set(tools) == TOOLS
    assert tools["remember"].input_schema["required"] == ["text"]
    assert set(tools["remember"].input_schema["properties"]) == {"text", "tags", "source", "lifecycle", "entity"}
    assert set(tools["recall"].input_schema["properties"]) == {"query", "tags", "limit", "as_of"}
    assert tools["ask"].input_schema["required"] == ["question"]
    assert tools["context"].input_schema["required"] == ["query"]
    assert tools["show"].input_schema["required"] == ["ref"]
    assert tools["feedback"].input_schema["required"] == ["ref", "verdict"]
    assert tools["feedback"].input_schema["properties"]["verdict"]["enum"] == ["useful", "wrong", "outdated", "confirm"]
    assert tools["forget"].input_schema["required"] == ["reason"]
    assert set(tools["forget"].input_schema["properties"]) == {"reason", "ids", "tags", "query", "dry_run"}
    for name, tool in tools.items():
        assert tool.output_schema["type"] == "object", name
        assert tool.description, name
        assert tool.annotations.read_only_hint is (name in READERS), name
    hit = tools["recall"].output_schema["$defs"]["RecalledMemory"]
    assert set(hit["required"]) == HIT_FIELDS


def test_remember_then_recall_returns_compact_structured_hits(server, vault):
    made = call(server, "remember", text="客户张三的合同编号是 CT2024-0876", tags=["contract"], entity="张三")
    assert not made.is_error
    note = made.structured_content
    assert note["action"] == "created" and note["value"] == "CT2024-0876" and "contract" in note["tags"]
    assert (vault.root / note["path"]).is_file()
    assert json.loads(made.content[0].text) == note  # the same result as text, for clients without structure
    assert vault.get("张三").kind == "entity"

    found = call(server, "recall", query="张三 合同", limit=5).structured_content
    assert found["query"] == "张三 合同"
    hit = found["hits"][0]
    assert set(hit) == HIT_FIELDS
    assert hit["id"] == note["id"] and hit["source"] == "mcp" and len(hit["date"]) == 10 and hit["score"] > 0


def test_feedback_is_recorded_and_a_wrong_memory_is_flagged_and_ranked_lower(server, vault):
    made = [call(server, "remember", text=f"The build server {name} runs the nightly jobs").structured_content
            for name in ("alpha", "bravo")]
    wrong = call(server, "feedback", ref=made[0]["id"], verdict="wrong", note="it moved").structured_content
    assert wrong["status"] == "needs-verification" and wrong["changed"] == ["status"]
    assert wrong["event"]["verdict"] == "wrong" and wrong["event"]["note"] == "it moved"
    useful = call(server, "feedback", ref=made[1]["id"], verdict="useful").structured_content
    assert useful["action"] == "recorded" and useful["changed"] == [] and useful["status"] == "active"
    hits = call(server, "recall", query="build server nightly jobs").structured_content["hits"]
    assert [h["id"] for h in hits] == [made[1]["id"], made[0]["id"]]
    refused = call(server, "feedback", ref=made[1]["id"], verdict="great")
    assert refused.is_error and "verdict" in refused.content[0].text


def test_forget_archives_by_tag_with_a_reason_and_lists_first_with_dry_run(server, vault):
    made = [call(server, "remember", text=f"Sprint {n} goal: ship the importer", tags=["sprint"]).structured_content
            for n in (1, 2)]
    kept = call(server, "remember", text="The office opens at nine", tags=["office"]).structured_content
    listed = call(server, "forget", tags=["sprint"], reason="sprints are over", dry_run=True).structured_content
    assert listed["action"] == "would-archive" and {n["id"] for n in listed["notes"]} == {m["id"] for m in made}
    done = call(server, "forget", tags=["sprint"], reason="sprints are over").structured_content
    assert done["action"] == "archived" and all(n["to"].startswith("archive/") for n in done["notes"])
    assert [h["id"] for h in call(server, "recall", query="sprint goal importer office").structured_content["hits"]] \
        == [kept["id"]]
    refused = call(server, "forget", reason="no selector")
    assert refused.is_error and "what to forget" in refused.content[0].text
    outside = call(server, "forget", ids=["../../etc/passwd"], reason="x")
    assert outside.is_error and "outside the vault" in outside.content[0].text


@pytest.mark.parametrize("arguments, said", [
    ({"reason": "no selector"}, "say what to forget: give ids, tags or query"),
    ({"reason": "   ", "tags": ["sprint"]}, "a forget needs a reason, kept in the audit log: give reason"),
])
def test_a_forget_that_misses_an_argument_names_the_tools_own_parameters(server, arguments, said):
    """Issue 28 item 6: the errors named the CLI's --tag, --since/--until and --source."""
    forget = next(t for t in session(server, lambda c: c.list_tools()).tools if t.name == "forget")
    refused = call(server, "forget", **arguments)
    assert refused.is_error and refused.content[0].text == f"Error executing tool forget: {said}"
    named = said.partition(": give ")[2].replace(" or ", ", ").split(", ")
    assert set(named) <= set(forget.input_schema["properties"]) and "--" not in said


def test_a_given_source_is_kept_and_the_servers_default_is_configurable(vault):
    server = surface.build_server(vault, default_source="claude-desktop")
    mine = call(server, "remember", text="The staging database listens on port 5433").structured_content
    theirs = call(server, "remember", text="Deploys freeze on Fridays", source="ops-bot").structured_content
    assert vault.get(mine["id"]).source == "claude-desktop"
    assert vault.get(theirs["id"]).source == "ops-bot"


def test_recall_by_tags_and_limit(server):
    for n in range(4):
        call(server, "remember", text=f"Release note {n}: shipped build {n}", tags=["release"])
    call(server, "remember", text="Lunch is at noon", tags=["office"])
    hits = call(server, "recall", tags=["release"], limit=3).structured_content["hits"]
    assert len(hits) == 3 and all("release" in h["tags"] for h in hits)


def test_ask_answers_from_the_note_and_declines_without_error(server):
    made = call(server, "remember", text="客户张三的合同编号是 CT2024-0876").structured_content
    answer = call(server, "ask", question="张三的合同编号是多少").structured_content
    assert answer["answered"] is True and answer["answer"] == "CT2024-0876" and answer["id"] == made["id"]
    assert answer["candidates"][0]["from"] == "value"
    declined = call(server, "ask", question="what is the office wifi password?")
    assert not declined.is_error
    assert declined.structured_content["answered"] is False and declined.structured_content["reason"]


def test_context_is_labelled_and_within_budget(server):
    for text in ("张三 prefers e-mail over phone calls", "张三's contract CT2024-0876 renews in March",
                 "张三 asked for the invoice in English"):
        call(server, "remember", text=text, source="finance-bot")
    woven = call(server, "context", query="张三", budget=30).structured_content
    assert 0 < woven["tokens"] <= 30 and woven["budget"] == 30
    assert woven["text"].startswith("- [from finance-bot, ")
    assert woven["items"][0]["line"] in woven["text"]
    assert woven["dropped"] >= 1  # three memories do not fit in 30 tokens


def test_show_finds_a_note_by_id_title_and_path(server):
    made = call(server, "remember", text="The staging database listens on port 5433").structured_content
    for ref in (made["id"], made["title"], made["path"]):
        shown = call(server, "show", ref=ref)
        assert not shown.is_error, ref
        assert shown.structured_content["id"] == made["id"]
        assert "5433" in shown.structured_content["content"]
        assert shown.structured_content["meta"]["id"] == made["id"]


def test_a_note_is_a_resource_holding_its_markdown(server, vault):
    made = call(server, "remember", text="Deploys freeze on Fridays").structured_content

    async def read(client):
        templates = (await client.list_resource_templates()).resource_templates
        return templates, await client.read_resource(f"vault://note/{made['id']}")

    templates, result = session(server, read)
    assert [t.uri_template for t in templates] == ["vault://note/{id}"]
    content = result.contents[0]
    assert content.mime_type == "text/markdown"
    assert content.text == (vault.root / made["path"]).read_text(encoding="utf-8")
    assert content.text.startswith("---\nid: " + made["id"])


def test_an_unknown_note_resource_is_a_clear_protocol_error(server):
    async def body(client):
        with pytest.raises(MCPError) as caught:
            await client.read_resource("vault://note/NOSUCHID")
        return caught.value

    assert str(session(server, body)) == "no note matches 'NOSUCHID'"


@pytest.mark.parametrize("tool, arguments, message", [
    ("show", {"ref": "no such note"}, "no note matches 'no such note'"),
    ("remember", {"text": "the deploy key", "tags": ["password"]}, "password"),
    ("ask", {"question": "   "}, "the question is empty"),
    ("show", {"ref": "../outside.md"}, "outside the vault"),
])
def test_library_errors_are_tool_errors_with_one_sentence(server, tool, arguments, message):
    result = call(server, tool, **arguments)
    assert result.is_error
    text = result.content[0].text
    assert message in text and "\n" not in text and "Traceback" not in text
    assert result.structured_content is None


def test_arguments_outside_their_schema_are_tool_errors(server):
    result = call(server, "recall", query="x", limit=0)
    assert result.is_error and "limit" in result.content[0].text


def test_notes_written_by_hand_are_seen_by_a_running_server(vault, monkeypatch):
    """A read starts a rescan in the background and answers from the index meanwhile: the note
    written by hand turns up within a few reads, never through an error."""
    monkeypatch.setattr(surface, "REFRESH_INTERVAL_S", 0.0)

    async def body(client):
        first = await client.call_tool("recall", {"query": "quokka"})
        write_note(vault, "memories/Quokka.md", f"---\nid: {HAND_ID}\n---\nA quokka visited the office.\n")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            later = await client.call_tool("recall", {"query": "quokka"})
            if later.structured_content["hits"]:
                break
            await anyio.sleep(0.05)
        return first, later

    first, later = session(surface.build_server(vault), body)
    assert first.structured_content["hits"] == []
    assert [h["id"] for h in later.structured_content["hits"]] == [HAND_ID]


def test_a_starting_server_rescans_once_it_serves(vault):
    """A note edited in place while no server ran keeps its folder's time, so a read's own check cannot
    see it: the rescan the server starts as it begins to serve (after its imports) indexes it."""
    write_note(vault, "memories/Visit.md", f"---\nid: {HAND_ID}\n---\nA wombat visited the office.\n")
    vault.refresh()
    write_note(vault, "memories/Visit.md", f"---\nid: {HAND_ID}\n---\nA quokka visited the office.\n")

    async def body(client):
        await client.list_tools()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(t.name == "vaultmem-refresh" for t in threading.enumerate()):
            await anyio.sleep(0.02)

    session(surface.build_server(vault, warm=True), body)
    assert [h.id for h in vault.recall("quokka", record_access=False)] == [HAND_ID]


def test_building_the_server_loads_no_numpy(vault, tmp_path):
    """What initialize and tools/list need is the SDK and the tools' schemas: numpy waits for the first recall."""
    done = _child(f"import sys, vaultmem.surfaces.mcp as s; s.build_server(s.open_vault({str(vault.root)!r})); "
                  "print('numpy' in sys.modules)", tmp_path)
    assert (done.returncode, done.stdout.strip()) == (0, "False"), done.stderr


def test_concurrent_calls_share_one_vault_and_lose_nothing(server):
    texts = [f"Meeting {n} with customer number {1000 + n} about the renewal" for n in range(12)]

    async def body(client):
        results = {}

        async def remember(text):
            results[text] = await client.call_tool("remember", {"text": text, "tags": ["meeting"]})

        async def recall():
            await client.call_tool("recall", {"query": "renewal", "tags": ["meeting"]})

        async with anyio.create_task_group() as tg:
            for text in texts:
                tg.start_soon(remember, text)
                tg.start_soon(recall)
        found = await client.call_tool("recall", {"tags": ["meeting"], "limit": 50})
        return results, found

    results, found = session(server, body)
    assert not any(r.is_error for r in results.values())
    assert {h["content"] for h in found.structured_content["hits"]} == set(texts)


def test_the_initialize_handshake_names_the_server_and_its_instructions(server):
    async def body(client):
        return client.server_info, client.instructions, await client.call_tool("recall", {"query": "x"})

    info, instructions, result = session(server, body, mode="legacy")
    assert info.name == "vaultmem" and "remember" in instructions
    assert result.structured_content == {"query": "x", "hits": []}


def test_over_stdio_with_a_bare_environment_remember_then_recall(vault, tmp_path):
    """The server as an MCP client starts it: a child process given only --vault and a bare environment."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "vaultmem.surfaces.mcp", "--vault", str(vault.root)],
                                   env={"HOME": str(tmp_path / "home")}, cwd=str(REPO))

    async def main():
        async with Client(params, mode="legacy") as client:
            made = await client.call_tool("remember", {"text": "客户张三的合同编号是 CT2024-0876"})
            found = await client.call_tool("recall", {"query": "CT2024-0876"})
            return made, found

    made, found = anyio.run(main)
    assert not made.is_error and not found.is_error
    note_id = made.structured_content["id"]
    assert [h["id"] for h in found.structured_content["hits"]] == [note_id]
    assert vault.get(note_id).source == "mcp"


def _child(code: str, tmp_path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "VAULTMEM_HOME": str(tmp_path / "home")}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60,
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("entry", ["from vaultmem.surfaces.mcp import main; main(['--vault', VAULT])",
                                   "sys.argv = ['vaultmem', 'mcp', '--vault', VAULT]; "
                                   "from vaultmem.__main__ import main; main()"])
def test_without_the_extra_both_commands_say_what_to_install(vault, tmp_path, entry):
    code = f"import sys; sys.modules['mcp'] = None; VAULT = {str(vault.root)!r}; {entry}"
    done = _child(code, tmp_path)
    assert done.returncode == 1
    assert done.stderr == "Error: the MCP server needs the 'mcp' extra: pip install 'vaultmem-md[mcp]'\n"
    assert done.stdout == ""


def test_importing_vaultmem_and_the_surface_does_not_import_the_sdk(tmp_path):
    done = _child("import sys, vaultmem, vaultmem.surfaces.mcp; "
                  "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'pydantic'))))", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
