"""Direct answers: values of current notes answered with a confidence and the note, or declined."""

import json

import pytest
from typer.testing import CliRunner

from vaultmem import VaultmemError
from vaultmem.recall.answer import THRESHOLD
from vaultmem.surfaces.cli import app

from .conftest import write_note

runner = CliRunner()

# (question, the answer, or None where no note holds one), over sample-vault/
ANSWERABLE = [
    ("张三的合同编号是多少", "CT2024-0876"),
    ("老张的合同号", "CT2024-0876"),
    ("What is the contract number of 张三?", "CT2024-0876"),
    ("星河科技的合同编号是多少", "CT2024-0876"),
    ("What is Emily Carter's contract number?", "CT2024-0931"),
    ("Emily Carter 的合同编号是什么", "CT2024-0931"),
    ("What is Zhang San's email?", "zhangsan@xinghe-tech.example.cn"),
    ("老张的邮箱", "zhangsan@xinghe-tech.example.cn"),
    ("张三的电话是多少", "+86 138 0013 8000"),
    ("What is the Atlas staging URL?", "https://atlas-staging.example.com"),
    ("Atlas staging 的网址", "https://atlas-staging.example.com"),
    ("Atlas 一期交付截止日期是哪天", "2026-11-15"),
    ("Atlas 一期什么时候交付", "2026-11-15"),
    ("When is the security review report due?", "2026-10-09"),
    ("When is the Q1 planning doc due?", "2026-11-12"),
    ("支付回调超时的错误码是多少", "ERR_5002"),
    ("What is the user's timezone?", "Asia/Shanghai"),
    ("What is the k8s migration budget?", "¥60,000"),
    ("CT2024-0876 的年费是多少", "¥480,000"),
    ("生产集群 CPU 告警阈值是多少", "CPU>90% 持续5分钟"),
    ("What's the DB pool alert threshold?", "pool>85% for 5m"),
    ("李伟什么时候请假", "2026-11-03"),
    ("When is Li Wei on leave?", "2026-11-03"),
    ("When was INV-2024-002 paid?", "2026-11-04"),
    ("How much was INV-2024-001?", "12000 CNY"),
    ("INV-2024-003 的金额是多少", "120000 CNY"),
    ("Emily 九月发票的发票号是什么", "INV-2024-002"),
    ("What is the invoice number for the Q1 service fee?", "INV-2024-003"),
    ("TLS 证书什么时候过期", "2026-11-20"),
    ("When does the deploy freeze start?", "2026-11-10"),
    ("When does Emily's design contract start?", "2026-11-01"),
    ("客户演示定在哪天", "2026-11-12"),
    ("Emily Carter 的发票号是多少", "INV-2024-002"),
    ("What is Emily's invoice number?", "INV-2024-002"),
    ("INV-2024-001 的金额", "12000 CNY"),
    ("What is the CPU alert threshold for the prod cluster?", "CPU>90% 持续5分钟"),
    ("When should the DB pool metrics be added by?", "2026-10-31"),
    ("老张的电话", "+86 138 0013 8000"),
    ("What's Zhang San's phone number?", "+86 138 0013 8000"),
    ("阿特拉斯项目的交付截止日期", "2026-11-15"),
    ("What is the email address of 张三?", "zhangsan@xinghe-tech.example.cn"),
    ("生产集群 CPU 使用率阈值是多少", "CPU>90% 持续5分钟"),   # "使用" is a question word; "率" alone is nothing
    ("Atlas staging 用的网址是什么", "https://atlas-staging.example.com"),
]
UNANSWERABLE = [
    "what port does staging use",          # no note holds a port
    "What is the staging database port?",
    "张三的生日是哪天",                       # notes about 张三 hold dates, none a birthday
    "张三的微信号是多少",
    "What is Li Wei's phone number?",       # a phone number is held, but for 张三
    "李伟的邮箱是多少",
    "Emily Carter 的邮箱是什么",
    "王芳的电话",
    "What is Emily's hourly rate?",
    "How much did the coffee cost?",
    "What is the production database password?",
    "What is the Xinghe office address?",
    "星河科技的发票号是多少",                  # two invoices to 星河科技: no one answer
    "ERR_4031 是什么错误",                    # asks what a value means, not for a value
    "ACK 管理费是多少",                        # only a candidate note in the inbox says
    "What is Wang Fang's email?",
    "Emily Carter 的电话是多少",
    "What is the Atlas production URL?",    # only the staging one is known
    "When is Li Wei's birthday?",
    "李伟的合同编号",                          # a weekly sync names 李伟, and 张三's contract in another sentence
]


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
    """Every question asked once over one copy of the sample vault."""
    import shutil

    from vaultmem import Vault

    from .conftest import SAMPLE

    target = tmp_path_factory.mktemp("answers") / "sample"
    shutil.copytree(SAMPLE, target, ignore=shutil.ignore_patterns("cache", "devices"))
    v = Vault(target)
    return {q: v.ask(q, record_access=False) for q in [q for q, _ in ANSWERABLE] + UNANSWERABLE}


def test_forty_answerable_questions_in_chinese_and_english_are_answered_correctly(answers):
    wrong = {q: (a.answer, a.confidence) for q, expected in ANSWERABLE
             if not ((a := answers[q]).answered and a.answer == expected)}
    assert len(ANSWERABLE) >= 40
    assert wrong == {}


def test_questions_no_current_note_answers_are_declined(answers):
    answered = {q: (answers[q].answer, answers[q].confidence) for q in UNANSWERABLE if answers[q].answered}
    assert answered == {}
    for q in UNANSWERABLE:
        a = answers[q]
        assert a.answer == "" and a.id == "" and a.confidence < THRESHOLD and a.reason


def test_an_answer_names_its_note_source_and_date_and_is_confident(answers):
    a = answers["张三的合同编号是多少"]
    assert (a.id, a.title, a.source, a.date, a.type) == (
        "01M4VZM6H0TGH81P9ENBTTGEQN", "客户张三合同编号 CT2024-0876", "finance-bot", "2026-10-14", "contract_id")
    assert a.path == "memories/客户张三合同编号 CT2024-0876.md"
    assert a.confidence >= 0.9 and "value field" in a.reason
    assert a.candidates[0]["id"] == a.id
    json.dumps(a.to_dict(), ensure_ascii=False)


def test_the_superseded_value_is_never_the_answer_even_when_recall_includes_it(sample):
    for question in ("张三的合同编号是多少", "What is the contract number of 张三?"):
        a = sample.ask(question, include=["superseded"], record_access=False)
        assert a.answer == "CT2024-0876"
        assert "CT2024-0771" not in [c["value"] for c in a.candidates]


def test_a_superseded_value_in_the_text_of_a_current_note_is_no_candidate(vault):
    write_note(vault, "memories/old.md", "---\nid: OLD1\ntype: contract_id\nvalue: CT2024-0771\nstatus: superseded\n"
               "tags: [contract]\n---\n客户张三的合同编号是 CT2024-0771。\n")
    write_note(vault, "memories/talk.md", "---\nid: TALK1\ntype: note\n---\n张三说合同编号还是 CT2024-0771。\n")
    vault.refresh()
    a = vault.ask("张三的合同编号是多少", record_access=False)
    assert not a.answered and a.candidates == []
    write_note(vault, "memories/new.md", "---\nid: NEW1\ntype: contract_id\nvalue: CT2024-0876\nstatus: active\n"
               "---\n客户张三续签后的合同编号是 CT2024-0876。\n")
    vault.refresh()
    a = vault.ask("张三的合同编号是多少", record_access=False)
    assert (a.answered, a.answer, a.id) == (True, "CT2024-0876", "NEW1")


def test_two_notes_that_disagree_are_no_confident_answer(vault):
    vault.remember("The staging server port is 8443", value="8443", type="port")
    vault.remember("The staging proxy port is 9443", value="9443", type="port")
    a = vault.ask("What port does staging use?", record_access=False)
    assert not a.answered and {c["value"] for c in a.candidates} == {"8443", "9443"}
    single = vault.ask("What port does the staging proxy use?", record_access=False)
    assert (single.answered, single.answer) == (True, "9443")


def test_a_topic_without_a_value_type_is_no_question(sample):
    assert not sample.ask("user timezone", record_access=False).answered
    assert sample.ask("user timezone?", record_access=False).answer == "Asia/Shanghai"
    assert sample.ask("deploy freeze date", record_access=False).answer == "2026-11-10"  # "date" asks


def test_the_threshold_can_be_raised_and_is_checked(sample):
    assert sample.ask("What is the user's timezone?", record_access=False).answered
    assert not sample.ask("What is the user's timezone?", min_confidence=0.99, record_access=False).answered
    with pytest.raises(VaultmemError):
        sample.ask("张三的合同编号是多少", min_confidence=1.5)
    with pytest.raises(VaultmemError):
        sample.ask("  ")


def test_cli_ask_answers_and_declines_with_exit_0(sample):
    root = str(sample.root)
    done = runner.invoke(app, ["ask", "张三的合同编号是多少", "--vault", root])
    assert done.exit_code == 0 and done.output.startswith("CT2024-0876  (confidence 1.00, 客户张三合同编号")
    declined = runner.invoke(app, ["ask", "张三的生日是哪天", "--vault", root])
    assert declined.exit_code == 0 and declined.output.startswith("no confident answer")
    as_json = runner.invoke(app, ["ask", "星河科技的发票号是多少", "--json", "--vault", root])
    data = json.loads(as_json.output)
    assert as_json.exit_code == 0 and data["answered"] is False
    assert {c["value"] for c in data["candidates"][:2]} == {"INV-2024-001", "INV-2024-003"}


def test_cli_ask_help_shows_an_example():
    result = runner.invoke(app, ["ask", "--help"])
    assert result.exit_code == 0 and 'vaultmem ask "张三的合同编号是多少"' in result.output
