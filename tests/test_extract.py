"""Extraction by rule and importance (SPEC §6 steps 2–3): values, cues, names, score."""

import datetime as dt
import pickle
import random

import pytest

from vaultmem.settings import Cues, default_settings, load_settings
from vaultmem.errors import ConfigError, VaultmemError
from vaultmem.write.extract import Extraction, Extractor, Value, _Words, importance

# Friday 27 November 2026, 10:00 in Shanghai
NOW = dt.datetime(2026, 11, 27, 10, 0, tzinfo=dt.timezone(dt.timedelta(hours=8)))


@pytest.fixture(scope="module")
def extractor():
    return Extractor.from_settings(default_settings().extraction)


def found(extractor, text, now=NOW):
    """(type, value) pairs, each checked to span the text it came from."""
    values = extractor.extract(text, now).values
    for v in values:
        assert text[v.start:v.end], v
    return [(v.type, v.value) for v in values]


def with_extraction(**section):
    """The default `extraction` settings with these changed, checked as config.yaml is."""
    return default_settings().with_values("extraction", **section).extraction


# ---------------------------------------------------------------- ids and codes

@pytest.mark.parametrize("text, expected", [
    ("客户张三的合同编号是 CT2024-0876。", [("contract_id", "CT2024-0876")]),
    ("The contract number is PRJ-2024-77", [("contract_id", "PRJ-2024-77")]),
    ("发票号 INV-2024-001 已开", [("invoice_id", "INV-2024-001")]),
    ("invoice AB-1234 was paid", [("invoice_id", "AB-1234")]),
    ("接口报错 ERR_4031", [("error_code", "ERR_4031")]),
    ("错误码：5002", [("error_code", "5002")]),
    ("the error code is 404", [("error_code", "404")]),
    ("the build failed with exception DB-5001", [("error_code", "DB-5001")]),
    ("see PRJ-12 and TKT-4411", [("id", "PRJ-12"), ("id", "TKT-4411")]),
])
def test_ids_take_their_type_from_their_shape_or_the_words_near_them(extractor, text, expected):
    assert found(extractor, text) == expected


@pytest.mark.parametrize("text", [
    "mp3 and MP3 files, GPT-4, H1N1, UTF-8",  # too short to be ids
    "xPRJ-12 and PRJ-12a",                    # glued to other letters
    "prj-12 in lower case",
    "I waited 404 seconds",                   # a number without an error-code cue
])
def test_near_misses_are_not_ids(extractor, text):
    assert found(extractor, text) == []


# ---------------------------------------------------------------- dates and deadlines

@pytest.mark.parametrize("text, iso", [
    ("发布于 2024-08-15", "2024-08-15"),
    ("发布于 2024/8/15", "2024-08-15"),
    ("2024年8月15日发布", "2024-08-15"),
    ("8月15日发布", "2026-08-15"),
    ("1月3日发布", "2027-01-03"),           # no year: the one nearest to now
    ("released on 15 August 2024", "2024-08-15"),
    ("released Aug 15, 2024.", "2024-08-15"),
    ("released on 3rd March 2025", "2025-03-03"),
    ("logged at 2024-08-15T10:00:00Z", "2024-08-15"),
])
def test_absolute_dates_become_iso(extractor, text, iso):
    assert found(extractor, text) == [("date", iso)]


@pytest.mark.parametrize("text", ["2024-02-30 never was", "2024年13月1日", "version 1.2.3", "May I come in?",
                                  "in 12.8.15 we"])
def test_impossible_or_partial_dates_are_dropped(extractor, text):
    assert [t for t, _ in found(extractor, text)] == []


@pytest.mark.parametrize("text, iso", [
    ("今天开会", "2026-11-27"), ("明天开会", "2026-11-28"), ("后天开会", "2026-11-29"),
    ("昨天开会", "2026-11-26"), ("下周五开会", "2026-12-04"), ("本周三开会", "2026-11-25"),
    ("上周一开会", "2026-11-16"), ("下周日开会", "2026-12-06"), ("3天后开会", "2026-11-30"),
    ("十五天后开会", "2026-12-12"), ("两周后开会", "2026-12-11"),
    ("meet today", "2026-11-27"), ("meet tomorrow", "2026-11-28"), ("met yesterday", "2026-11-26"),
    ("meet next Friday", "2026-12-04"),   # Friday of the next calendar week (now is a Friday)
    ("meet this Friday", "2026-11-27"),   # Friday of this week: today
    ("met last Monday", "2026-11-16"), ("meet in 3 days", "2026-11-30"), ("meet in a week", "2026-12-04"),
])
def test_relative_dates_resolve_against_now(extractor, text, iso):
    assert found(extractor, text) == [("date", iso)]


def test_relative_dates_use_the_time_zone_of_now(extractor):
    utc_evening = dt.datetime(2026, 11, 27, 20, 0, tzinfo=dt.timezone.utc)  # already the 28th in Shanghai
    assert found(extractor, "明天", utc_evening) == [("date", "2026-11-28")]
    assert found(extractor, "明天", utc_evening.astimezone(dt.timezone(dt.timedelta(hours=8)))) == [
        ("date", "2026-11-29")]


@pytest.mark.parametrize("text", ["之后天气转晴", "以前天天跑步", "holidays are fun", "Sunday", "in many days"])
def test_relative_date_near_misses(extractor, text):
    assert found(extractor, text) == []


@pytest.mark.parametrize("text, kind", [
    ("截止日期是2024年8月15日", "deadline"),
    ("请在12月5日前提交", "deadline"),
    ("下周五之前交报告", "deadline"),
    ("the report is due Aug 20, 2024", "deadline"),
    ("Deadline: 2024-08-20", "deadline"),
    ("send it by next Friday", "deadline"),
    ("written by John on 2024-08-20", "date"),
    ("we met on 2024-08-20 before lunch", "date"),
    ("2024年8月20日前往上海", "date"),
])
def test_a_date_with_a_due_cue_is_a_deadline(extractor, text, kind):
    assert [t for t, _ in found(extractor, text)] == [kind]


# ---------------------------------------------------------------- urls, e-mails, amounts, phones, thresholds

def test_urls_and_emails_are_kept_as_written_without_trailing_punctuation(extractor):
    text = "文档见https://example.com/a?b=1，或 www.Example.org/x. Mail Ops.Team@Example.com."
    assert found(extractor, text) == [("url", "https://example.com/a?b=1"), ("url", "www.Example.org/x"),
                                      ("email", "Ops.Team@Example.com")]


def test_an_id_inside_a_url_belongs_to_the_url(extractor):
    assert found(extractor, "see https://tracker.example.com/TKT-4411") == [
        ("url", "https://tracker.example.com/TKT-4411")]


@pytest.mark.parametrize("text, amount", [
    ("预算¥5000", "5000 CNY"), ("预算5,000元", "5000 CNY"), ("预算5万元", "50000 CNY"),
    ("融资1.5亿元", "150000000 CNY"), ("人民币3000元", "3000 CNY"), ("RMB 800", "800 CNY"),
    ("price $1,200", "1200 USD"), ("price 1200 USD", "1200 USD"), ("price USD 1200", "1200 USD"),
    ("price $1,200.50", "1200.50 USD"), ("price $1.2k", "1200 USD"), ("cost €30", "30 EUR"),
    ("cost 20 dollars", "20 USD"), ("花了300美元", "300 USD"),
])
def test_amounts_carry_their_currency(extractor, text, amount):
    assert found(extractor, text) == [("amount", amount)]


@pytest.mark.parametrize("text", ["5万人参加", "about 1200 people", "A$5 maybe", "5000 users"])
def test_numbers_without_a_currency_are_not_amounts(extractor, text):
    assert found(extractor, text) == []


@pytest.mark.parametrize("text, phone", [
    ("手机13800138000", "13800138000"), ("电话 138-0013-8000", "13800138000"),
    ("call 138 0013 8000", "13800138000"), ("+86 139 1234 5678", "13912345678"),
    ("+8613912345678", "13912345678"), ("London +44 20 7946 0958", "+442079460958"),
])
def test_phone_numbers(extractor, text, phone):
    assert found(extractor, text) == [("phone", phone)]


@pytest.mark.parametrize("text", [
    "卡号 6222 0212 3456 7890", "身份证 110101199003071234", "订单 138001380001234", "编号12800138000",
    "+1 2",
])
def test_card_and_id_numbers_are_not_phones(extractor, text):
    assert [t for t, _ in found(extractor, text)] == []


@pytest.mark.parametrize("text, threshold", [
    ("告警：CPU>90% 持续5分钟", "cpu>90% for 5m"),
    ("内存使用率超过80%时扩容", "内存使用率>80%"),
    ("alert when latency > 500ms for 5 minutes", "latency>500ms for 5m"),
    ("page me if disk above 85%", "disk>85%"),
    ("CPU usage at least 95% over 2 hours", "cpu usage>=95% for 2h"),
    ("磁盘低于10%", "磁盘<10%"),
])
def test_thresholds(extractor, text, threshold):
    assert found(extractor, text) == [("threshold", threshold)]


@pytest.mark.parametrize("text", ["the price is above 85%", "over 90% of users", "downloads > 500"])
def test_a_threshold_needs_a_known_metric(extractor, text):
    assert "threshold" not in [t for t, _ in found(extractor, text)]


def test_each_span_is_claimed_once_by_the_most_specific_rule(extractor):
    text = "合同 CT2024-0876 金额 ¥13800138000 于 2024-08-15 签，电话 13800138000"
    assert found(extractor, text) == [("contract_id", "CT2024-0876"), ("amount", "13800138000 CNY"),
                                      ("date", "2024-08-15"), ("phone", "13800138000")]
    values = extractor.extract(text, NOW).values
    assert all(a.end <= b.start for a, b in zip(values, values[1:]))


# ---------------------------------------------------------------- cues and names

@pytest.mark.parametrize("text, cues", [
    ("记住：周会改到周三", ["remember"]),
    ("别忘了带电脑", ["remember"]),
    ("Remember this: the VPN is flaky", ["remember"]),
    ("don’t forget the keys", ["remember"]),
    ("Always remember to lock the door", ["remember"]),
    ("note for later: renew the domain", ["later"]),
    ("备忘：续费域名", ["later"]),
    ("以后都用中文回答", ["always"]),
    ("From now on, reply in English. Never again use tabs.", ["always"]),
    ("记住，从现在起每次都先跑测试；回头再说", ["remember", "always", "later"]),
    ("the hallways were quiet, nevertheless", []),
])
def test_cue_kinds_in_order_of_appearance(extractor, text, cues):
    assert extractor.extract(text, NOW).cues == cues


@pytest.mark.parametrize("text, names", [
    ("客户张三的合同到期了", ["张三"]),
    ("客户王小明签约", ["王小明"]),
    ("客户张三明天来", ["张三"]),
    ("请联系张三先生和李四女士", ["张三", "李四"]),
    ("刘德华总今天来访", ["刘德华"]),
    ("联系人：赵六", ["赵六"]),
    ("I met customer Li Wei today", ["Li Wei"]),
    ("our client John Smith called", ["John Smith"]),
    ("Dr. Li Wei and Mrs Brown and Mr. Smith", ["Li Wei", "Brown", "Smith"]),
])
def test_names_after_explicit_cues(extractor, text, names):
    assert extractor.extract(text, NOW).names == names


@pytest.mark.parametrize("text", [
    "客户经理说客户服务很好",        # a role, not a name
    "请王先生回电",                  # a bare surname is not a name
    "张三总是迟到，大家总结了一下",    # 总 as "always" / "sum up"
    "Caroline went to the LGBTQ support group with Melanie on Sunday.",
    "The Customer Service Team and our client Acme replied.",
])
def test_no_names_without_a_clear_cue(extractor, text):
    assert extractor.extract(text, NOW).names == []


@pytest.mark.parametrize("seed", range(20))
def test_the_gate_scan_finds_exactly_the_words_a_text_holds(seed):
    rnd = random.Random(seed)  # few letters: words overlap, nest and start inside one another
    words = {"".join(rnd.choices("ab’c", k=rnd.randint(0 if seed % 2 else 1, 5))) for _ in range(rnd.randint(1, 12))}
    scan = _Words(words)
    for _ in range(200):
        text = "".join(rnd.choices("ab’cx", k=rnd.randint(0, 20)))
        assert scan.found(text) == {w for w in words if w in text}, (words, text)


def test_an_extractor_pickles_for_worker_processes():
    x = Extractor.from_settings(with_extraction(rules=[{"type": "ticket_id", "regex": r"TKT-\d+", "context": ["工单"]}]))
    text = "记住：工单 TKT-4411 与合同 CT2024-0876 下周五到期，联系人：赵六"
    assert pickle.loads(pickle.dumps(x)).extract(text, NOW) == x.extract(text, NOW)


def test_tags_are_the_distinct_value_types_in_order(extractor):
    e = extractor.extract("合同 CT2024-0876，明天付 ¥500，后天再付 ¥300", NOW)
    assert e.tags == ["contract_id", "date", "amount"]
    assert Extraction([], [], []).tags == []


# ---------------------------------------------------------------- user rules and cues from the config

def test_user_rules_win_over_built_ins_and_may_need_context():
    config = with_extraction(rules=[{"type": "ticket_id", "regex": r"TKT-\d+", "context": ["工单", "Ticket"]},
                                    {"type": "sku", "regex": r"SKU(?P<v>\d{4})"}])
    x = Extractor.from_settings(config)
    assert found(x, "工单 TKT-4411 已关闭") == [("ticket_id", "TKT-4411")]
    assert found(x, "see TKT-4411") == [("id", "TKT-4411")]  # no context word: the built-in rule
    assert found(x, "ticket TKT-9 reopened") == [("ticket_id", "TKT-9")]
    assert x.extract("SKU1234", NOW).values == [Value("sku", "1234", 3, 7)]


def test_an_empty_context_word_is_near_every_match():
    x = Extractor.from_settings(with_extraction(rules=[{"type": "sku", "regex": r"SKU\d+", "context": [""]}]))
    assert found(x, "SKU12") == [("sku", "SKU12")]


def test_user_cues_add_to_the_built_ins():
    x = Extractor.from_settings(with_extraction(cues={"remember": ["划重点"], "later": ["parking lot"],
                                                    "always": []}))
    assert x.extract("划重点：下周考试", NOW).cues == ["remember"]
    assert x.extract("Parking lot: rename the repo", NOW).cues == ["later"]
    assert x.extract("记住这个", NOW).cues == ["remember"]


@pytest.mark.parametrize("rules, message", [
    ([{"type": "bad", "regex": "TKT-(\\d+"}], r"extraction.rules\[0\] \(bad\): invalid regex"),
    ([{"type": "run", "regex": "(a+)+$"}], r"extraction.rules\[0\] \(run\): refused: the regex can match one text"),
    ([{"regex": "x"}], r"extraction.rules\[0\]: needs a type and a regex"),
    ([{"type": "t", "regex": "x", "context": "ticket"}], "context must be a list"),
    ([{"type": "t", "regex": "x", "flags": "i"}], "must be a mapping with type, regex"),
    ("TKT-\\d+", "must be a list"),
])
def test_a_bad_user_rule_is_a_config_error_naming_it(rules, message):
    with pytest.raises(ConfigError, match=message):
        Extractor.from_settings(with_extraction(rules=rules))


def test_bad_cues_are_config_errors():
    with pytest.raises(ConfigError, match="cues.remember must be a list"):
        Extractor.from_settings(with_extraction(cues={"remember": "记住"}))
    with pytest.raises(ConfigError, match="unknown kind"):
        Extractor(cues={"urgent": ["asap"]})


def test_the_extraction_section_loads_from_config_yaml(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("extraction:\n  rules:\n    - {type: ticket_id, regex: 'TKT-\\d+'}\n"
                    "  importance:\n    first: 3\n", encoding="utf-8")
    extraction = load_settings(path).extraction
    assert extraction.cues == Cues(remember=(), later=(), always=())
    assert found(Extractor.from_settings(extraction), "TKT-7") == [("ticket_id", "TKT-7")]
    assert importance(Extraction([], [], []), position="first", points=extraction.importance)[0] == 4.0
    path.write_text("extraction:\n  importance:\n    urgent: 9\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown setting 'urgent'"):
        load_settings(path)


# ---------------------------------------------------------------- importance

def ext(values=0, cues=(), names=()):
    return Extraction([Value("id", f"X{i}", 0, 1) for i in range(values)], list(cues), list(names))


@pytest.mark.parametrize("extraction, position, score, parts", [
    (ext(), None, 1.0, [("content: plain", 1.0)]),
    (ext(names=["张三"]), "last", 3.0, [("content: names", 2.0), ("position: last", 1.0)]),
    (ext(values=2, names=["张三"]), None, 4.0, [("content: numbers/dates/urls", 4.0)]),
    (ext(cues=["later"]), "first", 6.0, [("cue: later", 3.0), ("content: plain", 1.0), ("position: first", 2.0)]),
    (ext(cues=["later", "always"]), None, 6.0, [("cue: always", 5.0), ("content: plain", 1.0)]),
    (ext(values=1, cues=["remember"]), "last", 10.0,
     [("cue: remember", 5.0), ("content: numbers/dates/urls", 4.0), ("position: last", 1.0)]),
    (ext(values=1, cues=["remember"]), "first", 10.0,
     [("cue: remember", 5.0), ("content: numbers/dates/urls", 4.0), ("position: first", 2.0),
      ("clamped to 0..10", -1.0)]),
])
def test_importance_adds_cue_content_and_position_points(extraction, position, score, parts):
    assert importance(extraction, position=position) == (score, parts)


def test_importance_points_come_from_the_config_and_clamp_at_zero():
    points = with_extraction(importance={"content_plain": -4, "first": 0.5}).importance
    assert importance(ext(), position="first", points=points) == (
        0.0, [("content: plain", -4.0), ("position: first", 0.5), ("clamped to 0..10", 3.5)])


def test_importance_follows_an_edited_config():
    points = with_extraction().importance
    assert importance(ext(), position="first", points=points)[0] == 3.0
    points = points._replace(first=5)
    assert importance(ext(), position="first", points=points)[0] == 6.0


def test_importance_rejects_an_unknown_position():
    with pytest.raises(VaultmemError, match="position"):
        importance(ext(), position="middle")


def test_importance_of_a_real_extraction(extractor):
    e = extractor.extract("记住：客户张三的合同 CT2024-0876 下周五到期", NOW)
    assert importance(e, position="last") == (
        10.0, [("cue: remember", 5.0), ("content: numbers/dates/urls", 4.0), ("position: last", 1.0)])
