"""Recall that holds on corpora of other shapes (issue 14): length normalisation that follows the
vault's lengths, a merge that never piles messages into one note, extracted values that add no
false-match terms. Each test reproduces what the held-out run showed."""

from __future__ import annotations

import pytest

from vaultmem import Vault
from vaultmem.errors import ConfigError
from vaultmem.notes.note import parse_note
from vaultmem.recall import ranking as recall_module
from vaultmem.recall.ranking import B_ALIKE, B_SPREAD, length_b

DAY = "2022-08-26T10:00:00+00:00"
TOPICS = ["locker", "gym", "code", "membership", "schedule"]


def _long_reply(i: int) -> str:
    """An assistant reply of ~2,500 characters that names the words of the user's fact three times or more."""
    filler = [f"Point {k} of answer {i}: it depends on your routine, your budget and the rules where you live."
              for k in range(24)]
    filler[3] = f"Most gyms hand out a locker with a code of your own (answer {i})."
    filler[11] = f"A gym locker code is easy to forget, so keep the code somewhere safe (answer {i})."
    filler[17] = f"If the gym changes the locker code, ask at the desk for the new code (answer {i})."
    return " ".join(filler)


def _with_settings(vault: Vault, yaml_text: str) -> Vault:
    (vault.root / ".vaultmem" / "config.yaml").write_text(yaml_text, encoding="utf-8")
    return Vault(vault.root)


def test_a_short_statement_among_long_replies_that_repeat_its_words_ranks_first(vault):
    asides = ["Thanks, that helps.", "I see what you mean.", "Can you say more about that?", "Good point."]
    items = []
    for i in range(12):  # a user/assistant chat: short turns, long replies
        said = "My gym locker code is 4471." if i == 5 else asides[i % len(asides)] + f" ({i})"
        items += [{"text": said, "source": "user", "timestamp": DAY},
                  {"text": _long_reply(i), "source": "assistant", "timestamp": DAY}]
    results = vault.remember_many(items)
    fact = results[10].id
    assert length_b(vault.index.snapshot()) > (B_ALIKE + B_SPREAD) / 2  # lengths spread: strong normalisation
    hits = vault.recall("what is my gym locker code", limit=3, record_access=False)
    assert hits[0].id == fact
    fixed = _with_settings(vault, "ranking:\n  bm25_b: 0.3\n")  # under the old default a reply beat it
    assert fixed.recall("what is my gym locker code", limit=3, record_access=False)[0].id != fact


def test_memories_alike_in_length_keep_the_light_normalisation(sample):
    assert length_b(sample.index.snapshot()) == pytest.approx(B_ALIKE)


@pytest.mark.parametrize(("value", "fits"), [("auto", True), (0.75, True), (0, True), (1.5, False),
                                             ("sometimes", False)])
def test_bm25_b_is_auto_or_a_share(vault, value, fits):
    if fits:
        assert _with_settings(vault, f"ranking:\n  bm25_b: {value}\n").settings.ranking.bm25_b == value
    else:
        with pytest.raises(ConfigError, match="ranking.bm25_b must be a number from 0 to 1, or auto"):
            _with_settings(vault, f"ranking:\n  bm25_b: {value}\n")


def test_messages_that_only_name_one_url_stay_separate_memories(vault):
    url = "https://wiki.example.org/runbooks/417"
    subjects = ["database failover", "cache warmup", "log rotation", "certificate renewal", "canary rollout",
                "queue draining", "schema migration", "backup restore", "DNS cutover", "feature flags",
                "load shedding", "secret rotation", "index rebuild", "cron cleanup", "billing export"]
    results = vault.remember_many([{"text": f"The {s} steps are in {url}, this week."} for s in subjects])
    assert [r.action for r in results] == ["created"] * len(subjects)
    hits = vault.recall(f"what did I note about the log rotation in {url}", limit=3, record_access=False)
    assert hits[0].content == f"The log rotation steps are in {url}, this week."


def test_statements_of_one_invoice_merge_until_the_note_reaches_the_cap(vault):
    cap = vault.settings.write.merge_cap
    results = [vault.remember(f"Invoice INV-2024-0042: reminder number {i} went to the customer's office",
                              timestamp=f"2026-11-{i + 1:02d}T09:00:00+00:00") for i in range(20)]
    assert results[1].action == "merged" and results[1].id == results[0].id
    notes = {r.path for r in results}
    assert len(notes) >= 2
    for note in notes:
        assert len(parse_note((vault.root / note).read_bytes()).body) <= cap + 100


def test_a_long_message_naming_an_invoice_is_its_own_memory_but_a_statement_of_it_merges(vault):
    first = vault.remember("Invoice INV-2024-001 sent to the customer")
    long_message = ("We talked through the quarter for a long while. " * 8) + "INV-2024-001 came up once."
    assert len(long_message) > vault.settings.write.statement_chars
    assert vault.remember(long_message).id != first.id
    paid = vault.remember("Payment received for INV-2024-001")
    assert (paid.action, paid.id) == ("merged", first.id)


def test_a_resolved_relative_date_does_not_match_other_numbers(vault):
    see_you = vault.remember("See you tomorrow, Mel!", timestamp=DAY)
    assert see_you.value == "2022-08-27"
    vault.remember("The charity race was on 27 March, 2022 and we ran it together", timestamp=DAY)
    hits = vault.recall("What happened on 27 March, 2022?", record_access=False)
    assert see_you.id not in [h.id for h in hits]
    assert see_you.id in [h.id for h in vault.recall("2022-08-27", record_access=False)]


def _chat(vault: Vault, user_turns: list[str]) -> list:
    """A user/assistant chat: each user turn answered by a long reply."""
    items = []
    for i, said in enumerate(user_turns):
        items += [{"text": said, "source": "user", "timestamp": DAY},
                  {"text": _long_reply(i), "source": "assistant", "timestamp": DAY}]
    return vault.remember_many(items)


FLYING = "I'm flying to Osaka with my 4-year-old daughter in May. Any tips for the flight?"
FRIEND = "My friend is flying to Osaka with her daughter in May."


def test_beside_an_assistant_a_fact_told_in_a_question_is_not_pushed_down(vault, monkeypatch):
    results = _chat(vault, ["Thanks, that helps.", FLYING, "I see what you mean.", FRIEND, "Good point."])
    flying, friend = results[2].id, results[6].id
    question = "How old is my daughter who is flying to Osaka in May?"
    hits = {h.id: h for h in vault.recall(question, limit=3, record_access=False)}
    assert next(iter(hits)) == flying and hits[flying].channels["question"] == 1.0
    vault = _with_settings(vault, "ranking:\n  bm25_b: 0.9\n")  # b fixed: only the question weight moves
    spread = {h.id: h.final for h in vault.recall(question, limit=3, record_access=False)}
    monkeypatch.setattr(recall_module, "length_spread", lambda snap: 0.0)  # as between two people
    alike = {h.id: h.final for h in vault.recall(question, limit=3, record_access=False)}
    weight = vault.settings.ranking.weights["question"]
    assert spread[flying] - alike[flying] == pytest.approx(-weight, abs=1e-4)
    assert spread[friend] == pytest.approx(alike[friend], abs=1e-4)


def test_between_two_people_alike_in_length_a_bare_question_still_ranks_below_the_answer(vault):
    asked = vault.remember("When does the ferry to Brac leave?", source="Mel", timestamp=DAY)
    told = vault.remember("The ferry to Brac leaves at 7:40.", source="Jon", timestamp=DAY)
    vault.remember_many([{"text": f"We talked about lunch plans number {i} today.", "timestamp": DAY}
                         for i in range(6)])
    assert length_b(vault.index.snapshot()) == pytest.approx(B_ALIKE)
    hits = vault.recall("when does the ferry to Brac leave", limit=2, record_access=False)
    assert [h.id for h in hits] == [told.id, asked.id]
