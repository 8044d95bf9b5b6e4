"""The LangGraph store and the LangChain retriever (issue 29 item 3): their layer's contracts."""

from __future__ import annotations

from .test_layers import _add_import, _copy, lint


def test_the_core_importing_langgraph_breaks_a_contract(tmp_path):
    root = _copy(tmp_path)
    _add_import(root / "vaultmem" / "recall" / "context.py", "import langgraph")
    done = lint(root)
    assert done.returncode == 1 and "vaultmem.recall.context -> langgraph" in done.stdout, done.stdout
