"""recall: channels, filters, decay as a prior, access events, and that it never touches a note."""

import datetime as dt
import json
import time

import pytest

from .conftest import snapshot_files, write_note

DAY = 86400.0


def note(id_, body, **meta):
    lines = ["---", f"id: {id_}"]
    for key, value in meta.items():
        lines.append(f"{key}: {json.dumps(value, ensure_ascii=False) if isinstance(value, list) else value}")
    return "\n".join(lines + ["---", body, ""])


def iso(days_ago: float, now: float) -> str:
    return dt.datetime.fromtimestamp(now - days_ago * DAY, dt.timezone.utc).isoformat()


@pytest.fixture
def now():
    return time.time()


def test_chinese_text_and_ids_match_without_a_segmenter(vault):
    vault.remember("客户张三的合同编号是 CT2024-0876", tags=["contract"])
    vault.remember("The CPU alert fires above 90% for 5 minutes")
    vault.remember("错误码 ERR_4031 表示令牌过期")
    assert vault.recall("合同编号")[0].content.startswith("客户[[张三]]")  # the customer's name became a link
    assert vault.recall("CT2024")[0].content.startswith("客户[[张三]]")
    assert vault.recall("ERR_4031")[0].content.startswith("错误码")
    assert vault.recall("令牌")[0].content.startswith("错误码")
    assert vault.recall("ＣＴ２０２４")[0].content.startswith("客户[[张三]]")  # full-width input


def test_tags_intersect_and_are_case_and_width_insensitive(vault):
    vault.remember("a", tags=["Client_Zhangsan", "contract"])
    vault.remember("b", tags=["client_zhangsan"])
    vault.remember("c", tags=["contract"])
    both = vault.recall(tags=["#client_zhangsan", "CONTRACT"])
    assert [h.content for h in both] == ["a"]
    assert sorted(h.content for h in vault.recall(tags=["client_zhangsan"])) == ["a", "b"]


def test_tag_only_recall_orders_by_effective_score(vault, now):
    write_note(vault, "memories/old.md", note("A1", "old but important", tags=["ops"], score=9,
                                              lifecycle="preference", timestamp=iso(60, now)))
    write_note(vault, "memories/new.md", note("A2", "new and minor", tags=["ops"], score=3,
                                              lifecycle="preference", timestamp=iso(0, now)))
    write_note(vault, "memories/fresh.md", note("A3", "new and important", tags=["ops"], score=9,
                                                lifecycle="preference", timestamp=iso(0, now)))
    vault.refresh()
    hits = vault.recall(tags=["ops"], now=now)
    # preference half-life 30 days: 9 -> 9, 3 -> 3, 9 after 60 days -> 2.25
    assert [h.id for h in hits] == ["A3", "A2", "A1"]
    assert [round(h.effective, 2) for h in hits] == [9.0, 3.0, 2.25]


def test_decay_is_a_prior_not_a_wall_on_a_242_day_corpus(vault, now):
    """A strongly relevant memory 242 days old beats recent weak matches, even with a 30 h half-life."""
    write_note(vault, "memories/vpn.md", note("OLD", "The office VPN password rotation happens on the first Monday",
                                              lifecycle="note", score=5, timestamp=iso(242, now)))
    for i in range(30):
        write_note(vault, f"memories/recent {i}.md", note(f"NEW{i}", f"Monday standup notes number {i}",
                                                          lifecycle="note", score=9, timestamp=iso(0.1, now)))
    vault.refresh()
    hits = vault.recall("VPN password rotation Monday", now=now)
    assert hits[0].id == "OLD"
    assert hits[0].decay < 1e-50  # the prior really is at zero …
    assert hits[0].final > 0.5     # … and relevance still carries it


def test_recency_words_weigh_strength_more(vault, now):
    write_note(vault, "memories/a.md", note("OLDER", "deploy of atlas release", score=5, lifecycle="event",
                                            timestamp=iso(30, now)))
    write_note(vault, "memories/b.md", note("NEWER", "deploy of atlas release candidate", score=5,
                                            lifecycle="event", timestamp=iso(1, now)))
    vault.refresh()
    plain = {h.id: h for h in vault.recall("atlas release deploy", now=now)}
    recent = {h.id: h for h in vault.recall("latest atlas release deploy", now=now)}
    gap_plain = plain["NEWER"].final - plain["OLDER"].final
    gap_recent = recent["NEWER"].final - recent["OLDER"].final
    assert gap_recent > gap_plain
    assert vault.recall("最近 atlas deploy", now=now)[0].id == "NEWER"


def test_filters(vault, now):
    write_note(vault, "memories/1.md", note("F1", "release plan alpha", type="decision", source="user",
                                            namespace="shared", lifecycle="fact", timestamp=iso(10, now)))
    write_note(vault, "memories/2.md", note("F2", "release plan beta", type="task", source="hermes",
                                            namespace="hermes", lifecycle="task", timestamp=iso(1, now)))
    vault.refresh()
    ids = lambda **kw: sorted(h.id for h in vault.recall("release plan", now=now, **kw))  # noqa: E731
    assert ids() == ["F1"]  # by default the shared space and the caller's own, not the hermes agent's
    assert ids(namespace="*") == ["F1", "F2"]
    assert ids(type="decision", namespace="*") == ["F1"]
    assert ids(source="hermes", namespace="*") == ["F2"]
    assert ids(namespace="hermes") == ["F2"]
    assert ids(namespace=["hermes", "shared"]) == ["F1", "F2"]  # an agent reads its own and the shared space
    assert ids(namespace=["coder", "shared"]) == ["F1"]
    assert ids(namespace=["nobody"]) == []
    assert ids(lifecycle="fact") == ["F1"]
    assert ids(since=now - 5 * DAY, namespace="*") == ["F2"]
    assert ids(until=now - 5 * DAY) == ["F1"]
    day = lambda days: dt.datetime.fromtimestamp(now - days * DAY).date().isoformat()  # noqa: E731
    assert ids(since=day(5), namespace="*") == ["F2"]  # a date as text, as the CLI's --since passes it
    assert ids(until=day(10), namespace="*") == ["F1"]  # a bare `until` date counts through its last instant
    assert ids(type="nonexistent") == []


def test_superseded_archived_and_candidates_are_hidden_by_default(vault):
    write_note(vault, "memories/old.md", note("S1", "contract number CT2024-0771", status="superseded"))
    write_note(vault, "memories/new.md", note("S2", "contract number CT2024-0876"))
    write_note(vault, "inbox/cand.md", note("S3", "contract number from a web page"))
    write_note(vault, "archive/gone.md", note("S4", "contract number archived"))
    vault.refresh()
    assert [h.id for h in vault.recall("contract number")] == ["S2"]
    shown = {h.id for h in vault.recall("contract number", include=["superseded", "candidate", "archived"])}
    assert shown == {"S1", "S2", "S3", "S4"}
    assert [h.id for h in vault.recall("contract number", status=["candidate"])] == ["S3"]


def test_graph_channel_finds_memories_linked_to_a_named_entity(vault):
    write_note(vault, "entities/张三.md", "---\ntype: entity\naliases: [老张, Zhang San]\n---\n客户。\n")
    write_note(vault, "memories/m1.md", note("G1", "[[张三]] prefers calls after 3pm"))
    write_note(vault, "memories/m2.md", note("G2", "Calls with vendors are on Fridays"))
    vault.refresh()
    hits = vault.recall("when does Zhang San want calls")
    assert hits[0].id == "G1"
    assert hits[0].channels["graph"] == 1.0
    assert vault.recall("老张")[0].id == "G1"  # the alias appears nowhere in the memory's text


def test_explain_has_every_channel_decay_and_final(vault):
    vault.remember("Grafana dashboard lives at grafana.internal/d/atlas", tags=["ops"])
    [hit] = vault.recall("grafana dashboard")
    assert set(hit.channels) == {"lexical", "tags", "graph", "source", "episode", "contiguity", "question",
                                 "strength"}
    assert 0 < hit.decay <= 1 and hit.final > 0 and hit.effective > 0
    d = hit.to_dict()
    for key in ("id", "path", "title", "content", "tags", "source", "lifecycle", "timestamp", "score",
                "effective", "final"):
        assert key in d


def test_a_typo_is_tolerated_by_fuzzy_rescoring(vault):
    vault.remember("Grafana dashboard for the payment service")
    vault.remember("Dashboard of the marketing site")
    hits = vault.recall("grafana dashbord")  # "dashbord" is in no note
    assert hits[0].content.startswith("Grafana")
    assert hits[0].channels["fuzzy"] > 0.8
    hits = vault.recall("dashbord payment")
    assert "fuzzy" in hits[0].channels and hits[0].content.startswith("Grafana")


def test_contiguity_brings_back_the_neighbours_of_a_recalled_event(vault):
    turns = ["We landed in Lisbon at noon", "The hotel was next to the tram line",
             "Dinner was grilled sardines", "Flew home on Sunday"]
    vault.remember_many([{"text": t, "episode": "trip", "timestamp": f"2026-05-0{i + 1}T10:00:00+00:00"}
                         for i, t in enumerate(turns)])
    vault.remember_many([{"text": f"Unrelated note {i} about tram schedules", "episode": "other"} for i in range(3)])
    hits = {h.content: h for h in vault.recall("Lisbon landing", limit=10)}
    assert hits["We landed in Lisbon at noon"].channels["lexical"] == 1.0
    assert hits["The hotel was next to the tram line"].channels["contiguity"] == 1.0   # next in the episode
    assert hits["Dinner was grilled sardines"].channels["contiguity"] == 0.5          # two away
    assert "Flew home on Sunday" not in hits                                          # three away
    assert all(h.channels["contiguity"] == 0 for c, h in hits.items() if c.startswith("Unrelated"))


def test_a_named_source_lifts_what_it_wrote(vault):
    vault.remember("I adopted a puppy last week", source="Caroline")
    vault.remember("I adopted a new workflow last week", source="Melanie")
    hits = vault.recall("What did Caroline adopt?")
    assert hits[0].content == "I adopted a puppy last week" and hits[0].channels["source"] == 1.0
    assert hits[1].channels["source"] == 0.0
    assert all(h.channels["source"] == 0 for h in vault.recall("what was adopted"))


def test_memories_of_a_relevant_episode_rise_together(vault):
    vault.remember_many([{"text": t, "episode": "s1"} for t in
                         ("We talked about the marathon", "Training plan for the marathon", "The marathon is in May")])
    vault.remember_many([{"text": "A plan for the garden", "episode": "s2"},
                         {"text": "Bought tomato seeds", "episode": "s2"}])
    hits = {h.content: h for h in vault.recall("marathon training plan")}
    assert hits["Training plan for the marathon"].channels["episode"] == 1.0
    assert 0 < hits["A plan for the garden"].channels["episode"] < 1.0


def test_an_episode_counts_as_one_text(vault):
    vault.remember_many([{"text": "Landed in Lisbon at noon", "episode": "trip"},
                         {"text": "The hotel has a view of the river", "episode": "trip"}])
    vault.remember_many([{"text": "Hotel prices went up", "episode": "news"},
                         {"text": "A new hotel opened downtown", "episode": "news"}])
    hits = {h.content: h for h in vault.recall("Lisbon hotel")}
    assert hits["The hotel has a view of the river"].channels["episode"] == 1.0  # its episode names both words
    assert hits["Hotel prices went up"].channels["episode"] < 0.5
    assert next(iter(hits)) == "Landed in Lisbon at noon"


def test_feedback_lifts_candidates_that_share_the_best_memory_s_words(vault):
    vault.remember("The vet said the puppy needs a rabies shot")
    vault.remember("Vet visit moved to Monday for the rabies shot")
    vault.remember("Vet bills are due")
    vault.remember("Rabies shots for the cat")
    vault.configure("ranking", feedback_docs=1)  # the best memory alone votes
    ranked = [h.content for h in vault.recall("puppy vet")]
    assert ranked == ["The vet said the puppy needs a rabies shot", "Vet visit moved to Monday for the rabies shot",
                      "Vet bills are due"]  # "rabies shot" came from the best memory; the cat note has no query word
    vault.configure("ranking", feedback_weight=0.0)
    assert [h.content for h in vault.recall("puppy vet")][1] == "Vet bills are due"  # the shorter one, without


def test_an_answer_ranks_above_the_question_it_answers(vault):
    vault.remember_many([{"text": "Where did you park the car yesterday?", "episode": "chat"},
                         {"text": "I parked the car on level 3", "episode": "chat"}])
    vault.remember("上周的会议纪要在哪里？")
    hits = vault.recall("where is the car parked")
    assert hits[0].content == "I parked the car on level 3" and hits[0].channels["question"] == 0.0
    assert hits[1].channels["question"] == 1.0
    assert vault.recall("会议纪要")[0].channels["question"] == 1.0  # a full-width question mark too


def test_recall_never_modifies_a_note(sample):
    sample.refresh()
    before = snapshot_files(sample.root)
    for query in ("合同编号", "CPU", "Zhang San", "deadline", ""):
        sample.recall(query)
    sample.recall(tags=["contract"])
    assert snapshot_files(sample.root) == before


def test_each_recall_appends_access_events_and_reinforces(vault, now):
    write_note(vault, "memories/a.md", note("R1", "backup runs nightly at 02:00", score=5, lifecycle="note",
                                            timestamp=iso(5, now)))
    vault.refresh()
    first = vault.recall("backup nightly", now=now)[0]
    logs = list((vault.root / ".vaultmem/devices/testbox-0001").glob("events-*.jsonl"))
    assert len(logs) == 1
    event = json.loads(logs[0].read_text().splitlines()[0])
    assert event["event"] == "access" and event["id"] == "R1"
    vault.refresh()  # folds the log
    second = vault.recall("backup nightly", now=now + 60)[0]
    assert second.decay > 0.9 > first.decay  # reading reset the clock
    assert second.effective > first.effective


def test_a_hand_edit_is_seen_after_refresh(vault):
    result = vault.remember("The wifi password hint is the cat's name")
    path = vault.root / result.path
    path.write_text(path.read_text(encoding="utf-8").replace("cat's name", "dog's name"), encoding="utf-8")
    vault.refresh()
    assert "dog" in vault.recall("wifi hint")[0].content
    assert all("cat's" not in h.content for h in vault.recall("cat"))  # the old text is gone


def test_empty_query_returns_strongest_first(vault, now):
    write_note(vault, "memories/w.md", note("W", "weak", score=1, timestamp=iso(0, now)))
    write_note(vault, "memories/s.md", note("S", "strong", score=9, timestamp=iso(0, now)))
    vault.refresh()
    assert [h.id for h in vault.recall(now=now)] == ["S", "W"]


def test_recall_never_returns_a_memory_whose_file_is_gone(vault):
    """An agent opens the paths recall gives: a note deleted by hand since the last refresh, or
    one a killed batch indexed before it wrote it, must not come back before a refresh drops it."""
    from vaultmem.store.index.records import build_record

    kept = vault.remember("Deploy window is Friday 22:00 for the payments service")
    gone = vault.remember("Deploy window is Thursday 18:00 for the search service")
    (vault.root / gone.path).unlink()  # deleted in Obsidian; no refresh yet
    data = note("01JNEVERWRITTEN", "Deploy window is Monday 09:00 for the billing service").encode()
    vault.index.upsert([build_record(data, "memories/never written.md", "memory", "memories", (0, len(data)),
                                     vault.settings.defaults, max_chars=None)])  # a killed batch's early row
    assert [h.id for h in vault.recall("deploy window service")] == [kept.id]
    vault.refresh()  # (recall itself caught up: the deletion changed the folder's time)
    assert not vault.index.select_notes("path IN (?, ?)", (gone.path, "memories/never written.md"))
    assert [h.id for h in vault.recall("deploy window service")] == [kept.id]
