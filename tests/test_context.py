"""Context weaving: labelled lines, duplicates removed, repeats compressed, hidden notes left out,
most important first, never over the token budget."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from vaultmem import VaultmemError
from vaultmem.surfaces.cli import app
from vaultmem.recall.context import estimate_tokens

from .conftest import write_note

runner = CliRunner()


@pytest.mark.parametrize(("text", "tokens"), [
    ("", 0),
    ("   \n\t", 0),
    ("客户张三的合同编号是 CT2024-0876", 21),          # 10 Han + CT 1.3 + 8 digits + "-" 1 = 20.3
    ("The CPU alert fires", 6),                      # 4 words x 1.3 = 5.2
    ("internationalization", 5),                     # 20 letters / 4
    ("Atlas 一期交付截止日期 2026年11月15日。", 22),      # 1.3 + 8 Han + 8 digits + 3 Han + 1 full stop
    # from 1.3 + finance 7/4 + bot 1.3, 13 digits, 8 marks, 3 Han, ¥ 1 = 29.35
    ("- [from finance-bot, 2026-10-14] 已付款 ¥12,000", 30),
    ("ERR_4031 表示签名过期", 13),                       # ERR 1.3 + "_" 1 + 4 digits + 6 Han = 12.3
])
def test_token_estimate_follows_its_documented_rule(text, tokens):
    assert estimate_tokens(text) == tokens


def test_token_estimate_errs_high_against_common_rules_of_thumb():
    english = "Weekly sync: the renewal with Xinghe is signed. Li Wei flagged database connection spikes."
    chinese = "事故进行中用户只要结论和下一步，不要解释原因。每 15 分钟汇报一次状态，直到恢复。"
    assert estimate_tokens(english) >= len(english) / 4       # ~4 characters a token for English
    assert estimate_tokens(chinese) >= len(chinese.replace(" ", "")) * 0.9  # ~1 token a Han character


@given(st.text(max_size=60), st.text(max_size=60))
def test_lines_joined_never_cost_more_than_their_sum(a, b):
    assert estimate_tokens(a + "\n" + b) <= estimate_tokens(a) + estimate_tokens(b)


def test_each_line_is_labelled_with_its_source_and_date(sample):
    found = sample.context("张三的合同编号", record_access=False)
    lines = found.text.split("\n")
    assert len(lines) == len(found.items) > 3
    assert all(line.startswith("- [from ") for line in lines)
    contract = next(i for i in found.items if i.id == "01M4VZM6H0TGH81P9ENBTTGEQN")
    assert contract.line == ("- [from finance-bot, 2026-10-14] 客户 老张 续签后新的合同编号是 CT2024-0876"
                             "（正式服务合同，2026年10月至2027年9月），取代试点期的 CT2024-0771。")
    assert (contract.source, contract.date, contract.count) == ("finance-bot", "2026-10-14", 1)


def test_superseded_and_candidate_notes_are_left_out_whatever_recall_includes(sample):
    include = ["superseded", "candidate"]
    recalled = {h.status for h in sample.recall("张三 合同编号 星河科技 采购", include=include, limit=40)}
    assert {"superseded", "candidate"} <= recalled  # what the context must leave out was there to take
    found = sample.context("张三 合同编号 星河科技 采购", 3000, include=include, record_access=False)
    ids = {i for item in found.items for i in item.ids}
    assert "01M33E8DJ0AR9ZHFZJE1XNWRW2" not in ids      # CT2024-0771, superseded
    assert "01M619H540NKDCJHAC58EP729C" not in ids      # the inbox's guess about 星河科技
    assert not any(item.path.startswith("inbox/") for item in found.items)


def test_repeated_events_of_one_kind_become_one_line_first_last_and_count(sample):
    found = sample.context("weekly sync", record_access=False)
    runs = [item for item in found.items if item.count > 1]
    assert len(runs) == 1
    run = runs[0]
    assert (run.count, run.first, run.last, run.source) == (6, "2026-09-24", "2026-11-05", "hermes")
    assert run.line.startswith("- [from hermes, 2026-09-24 … 2026-11-05] Weekly sync: 李伟 finished the new billing")
    assert run.line.endswith("周会：验收清单 12 项已完成 9 项；SSO 联调周五开始；客户演示定在 11月12日。 (6 times)")
    assert not any("Weekly sync" in item.title for item in found.items if item.count == 1)


def test_two_events_of_a_kind_stay_two_lines(vault):
    vault.remember("Deployed build 101 to staging", type="event", lifecycle="event")
    vault.remember("Deployed build 102 to staging", type="event", lifecycle="event")
    found = vault.context("deployed build staging", record_access=False)
    assert [item.count for item in found.items] == [1, 1]


def test_duplicates_are_removed(vault):
    body = "客户 [[张三]] 的合同编号是 CT2024-0876。"
    for name, id_ in (("a", "DUP1"), ("b", "DUP2")):
        write_note(vault, f"memories/{name}.md", f"---\nid: {id_}\nscore: 5\n---\n{body}\n")
    write_note(vault, "memories/c.md", "---\nid: DUP3\nscore: 5\n---\n客户 张三 的合同编号是  CT2024-0876。\n")
    write_note(vault, "memories/d.md", "---\nid: OTHER\nscore: 5\n---\n客户张三的合同编号是 CT2024-0771。\n")
    vault.refresh()
    assert len(vault.recall("张三 合同编号")) == 4
    found = vault.context("张三 合同编号", record_access=False)
    assert len(found.items) == 2  # the three restatements are one line; another number is another memory
    assert "OTHER" in [item.id for item in found.items]


def test_most_important_first(sample):
    found = sample.context("Atlas 星河科技 deadline", record_access=False)
    scores = [item.score for item in found.items]
    assert scores == sorted(scores, reverse=True) and len(scores) > 5


@pytest.mark.parametrize("query", ["张三的合同编号", "weekly sync", "Atlas 星河科技 李伟 deploy billing", "PostgreSQL"])
@pytest.mark.parametrize("budget", [1, 5, 16, 17, 40, 100, 300, 800])
def test_never_over_the_budget(sample, query, budget):
    found = sample.context(query, budget, record_access=False)
    assert found.tokens == estimate_tokens(found.text) <= budget
    assert found.budget == budget
    everything = sample.context(query, 100_000, record_access=False)
    shown = sum(item.count for item in found.items)
    assert shown + found.dropped == sum(item.count for item in everything.items)


def test_a_line_that_does_not_fit_is_shortened_when_there_is_room(sample):
    found = sample.context("Postmortem 连接池耗尽", 40, record_access=False)
    assert len(found.items) == 1 and found.items[0].text.endswith("…") and found.tokens <= 40
    assert sample.context("Postmortem 连接池耗尽", 5, record_access=False).text == ""


def test_a_budget_below_one_is_an_error(sample):
    with pytest.raises(VaultmemError):
        sample.context("张三", 0)


def test_to_dict_is_json_ready(sample):
    data = sample.context("张三", 200, record_access=False).to_dict()
    assert set(data) == {"query", "text", "tokens", "budget", "dropped", "items"}
    assert {"id", "title", "path", "source", "date", "text", "score", "count", "first", "last", "ids", "line"} \
        == set(data["items"][0])
    json.dumps(data, ensure_ascii=False)


def test_access_is_recorded_for_the_memories_shown_only(sample):
    found = sample.context("weekly sync", 60)
    events = (sample.device_dir / "events").read_text(encoding="utf-8") if (sample.device_dir / "events").is_file() \
        else "".join(p.read_text(encoding="utf-8") for p in sample.device_dir.glob("events*"))
    recorded = {json.loads(line)["id"] for line in events.splitlines() if line.strip()}
    assert recorded == {i for item in found.items for i in item.ids}


def test_cli_context_prints_the_block_and_json(sample):
    root = str(sample.root)
    done = runner.invoke(app, ["context", "张三的合同编号", "--budget", "120", "--vault", root])
    assert done.exit_code == 0 and done.stdout.startswith("- [from ")
    as_json = runner.invoke(app, ["context", "weekly sync", "--budget", "300", "--json", "--vault", root])
    data = json.loads(as_json.stdout)
    assert as_json.exit_code == 0 and data["tokens"] <= 300 and data["items"][0]["count"] == 6
    assert runner.invoke(app, ["context", "x", "--budget", "0", "--vault", root]).exit_code == 2


def test_cli_context_help_shows_an_example():
    result = runner.invoke(app, ["context", "--help"])
    assert result.exit_code == 0 and 'vaultmem context "张三的合同" --budget 400' in result.output
