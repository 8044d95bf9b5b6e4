"""A default recall reads `shared` and the caller's own namespace, never another agent's private
notes (issue 13 item 7); context and ask follow the same rule, since they recall through it."""

from __future__ import annotations

import pytest


@pytest.fixture
def spaces(vault):
    vault.remember("The release train leaves on Thursdays", namespace="shared")
    vault.remember("The release train for finance leaves on Fridays", namespace="finance-bot")
    vault.remember("The release train for support leaves on Mondays", namespace="support-bot")
    return vault


def _spaces(hits) -> set[str]:
    return {h.namespace for h in hits}


def test_a_default_recall_reads_shared_and_not_other_agents_private_notes(spaces):
    assert _spaces(spaces.recall("release train")) == {"shared"}


def test_a_caller_names_itself_by_the_environment_or_the_namespace_option(spaces, monkeypatch):
    monkeypatch.setenv("VAULTMEM_NAMESPACE", "finance-bot")
    assert _spaces(spaces.recall("release train")) == {"shared", "finance-bot"}
    monkeypatch.delenv("VAULTMEM_NAMESPACE")
    assert _spaces(spaces.recall("release train", namespace=["support-bot", "shared"])) == {"shared", "support-bot"}
    assert _spaces(spaces.recall("release train", namespace="support-bot")) == {"support-bot"}


def test_star_reads_every_namespace(spaces):
    assert _spaces(spaces.recall("release train", namespace="*")) == {"shared", "finance-bot", "support-bot"}


def test_the_vaults_default_namespace_is_the_callers_own(spaces):
    spaces.configure("defaults", namespace="support-bot")
    assert _spaces(spaces.recall("release train")) == {"shared", "support-bot"}


def test_context_and_ask_follow_the_same_rule(spaces, monkeypatch):
    woven = spaces.context("release train")
    assert "Thursdays" in woven.text and "Fridays" not in woven.text and "Mondays" not in woven.text
    monkeypatch.setenv("VAULTMEM_NAMESPACE", "finance-bot")
    assert "Fridays" in spaces.context("release train").text
    monkeypatch.delenv("VAULTMEM_NAMESPACE")
    answer = spaces.ask("When does the release train for support leave?")
    assert "Mondays" not in str(answer.to_dict())
