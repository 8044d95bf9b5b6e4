"""Tests for vaultmem.text.terms: normalisation, terms, stemming and fingerprints."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vaultmem.text.terms import (
    STOPWORDS,
    TOKENIZER_VERSION,
    char_ngrams,
    fingerprint,
    normalize,
    normalize_tag,
    query_terms,
    stem,
    terms,
)


def matches(query: str, document: str) -> bool:
    """Return whether any query term is a term of the document, as the index would see it."""
    return bool(set(query_terms(query)) & set(terms(document)))


def test_version_is_a_positive_int():
    assert isinstance(TOKENIZER_VERSION, int) and TOKENIZER_VERSION >= 1


def test_normalize_folds_width_and_case():
    assert normalize("ＣＴ２０２４") == "ct2024"
    assert normalize("Ⅻ Straße") == "xii strasse"
    assert normalize("客户，张三") == "客户,张三"
    # combining marks are put back in canonical order after folding
    assert normalize("İ\u3099") == "i\u3099\u0307"


def test_normalize_full_width_punctuation_equals_plain_nfkc():
    assert normalize("合同（第３版）：已签！\u3000ﬁn") == "合同(第3版):已签! fin"


@pytest.mark.parametrize(
    ("tag", "expected"),
    [("#Client_Zhangsan", "client_zhangsan"), ("client_zhangsan", "client_zhangsan"),
     ("＃项目/Alpha", "项目/alpha"), ("  #Urgent ", "urgent")],
)
def test_normalize_tag(tag, expected):
    assert normalize_tag(tag) == expected


def test_chinese_run_gives_bigrams_then_trigrams():
    assert terms("合同编号") == ["合同", "同编", "编号", "合同编", "同编号"]


def test_short_chinese_runs():
    assert terms("合同") == ["合同"]
    assert terms("张") == ["张"]
    assert terms("的") == []  # a lone function character says nothing
    assert terms("我 的 合同") == ["合同"]


def test_mixed_chinese_and_id():
    assert sorted(terms("张三的CT2024")) == sorted(["张三", "三的", "张三的", "ct2024"])


def test_compound_ids_keep_whole_and_parts():
    assert terms("CT2024-0876") == ["ct2024-0876", "ct2024", "0876"]
    assert terms("ERR_4031") == ["err_4031", "err", "4031"]
    assert terms("INV-2024-001") == ["inv-2024-001", "inv", "2024", "001"]
    assert terms("CT2024") == ["ct2024"]


@pytest.mark.parametrize("query", ["CT2024", "0876", "ct2024-0876", "ＣＴ２０２４－０８７６"])
def test_contract_id_found_by_whole_or_part(query):
    assert matches(query, "客户张三的合同编号 CT2024-0876，下周付款。")


@pytest.mark.parametrize("query", ["ERR_4031", "err_4031", "4031"])
def test_error_code_found(query):
    assert matches(query, "Deploy failed with ERR_4031 twice.")


def test_invoice_number_found_and_not_confused():
    assert matches("INV-2024-001", "Paid INV-2024-001 today")
    assert "inv-2024-002" not in terms("Paid INV-2024-001 today")


def test_full_width_id_equals_ascii_id():
    assert terms("ＣＴ２０２４") == terms("CT2024") == ["ct2024"]


def test_hyphenated_words_count_as_their_parts():
    assert terms("dairy-free") == ["dairi", "free"]
    assert terms("well-known author") == ["well", "known", "author"]
    assert matches("dairy free", "She went dairy-free")


def test_hyphenated_word_with_a_one_letter_part_stays_whole():
    assert terms("x-ray") == ["x-ray", "ray"]


def test_hostname_and_email_split_into_parts():
    found = terms("mail zhangsan@example.com via api.example.com")
    assert {"zhangsan", "example.com", "api.example.com", "api", "com"} <= set(found)


def test_sentence_punctuation_is_not_a_joiner():
    assert terms("Budget approved. Next: deploy") == ["budget", "approv", "next", "deploy"]


def test_stopwords_and_single_letters_dropped_digits_kept():
    assert terms("What is the deadline for it?") == ["deadlin"]
    assert terms("a b 7 x") == ["7"]


def test_apostrophes_do_not_leave_fragments():
    assert terms("Zhang's report isn't done") == ["zhang", "report"]


def test_month_may_is_a_term():
    assert "may" not in STOPWORDS
    assert terms("May 2022") == ["may", "2022"]
    assert matches("in May", "(8 May, 2023) Caroline: hi")


def test_terms_repeat_for_term_frequency():
    assert terms("meeting meetings Meeting") == ["meet", "meet", "meet"]


def test_query_terms_deduplicated_in_order():
    assert query_terms("Meetings about the meeting deadline") == ["meet", "deadlin"]


def test_stopword_only_query_falls_back_to_its_words():
    assert query_terms("what is it") == ["what", "is", "it"]
    assert query_terms("的") == []
    assert query_terms("") == []


def test_other_scripts_are_words():
    assert terms("Café Москва naïve") == ["café", "москва", "naïve"]


@pytest.mark.parametrize(
    "forms",
    [
        ("meeting", "meetings", "meet", "meets", "met"),
        ("deadline", "deadlines"),
        ("party", "parties"),
        ("study", "studies", "studied", "studying"),
        ("run", "runs", "running", "ran"),
        ("plan", "plans", "planned", "planning"),
        ("make", "makes", "making", "made"),
        ("hope", "hopes", "hoped", "hoping"),
        ("create", "creates", "created", "creating"),
        ("box", "boxes"),
        ("class", "classes"),
        ("watch", "watches", "watched", "watching"),
        ("pay", "pays", "paid", "paying"),
        ("movie", "movies"),
        ("case", "cases"),
        ("use", "uses", "used", "using"),
        ("agree", "agreed"),
        ("quick", "quickly"),
        ("complete", "completely", "completed"),
        ("status", "statuses"),
        ("process", "processes", "processed", "processing"),
        ("go", "goes", "going", "went", "gone"),
        ("ski", "skis"),
        ("ferrari", "ferraris"),
        ("taxi", "taxis"),
    ],
)
def test_stem_folds_inflections(forms):
    assert len({stem(form) for form in forms}) == 1


def test_stem_of_go_forms():
    assert stem("going") == stem("goes") == stem("go") == "go"


@pytest.mark.parametrize("word", ["analysis", "basis", "crisis", "class", "bus", "status"])
def test_stem_keeps_singulars_in_s(word):
    assert stem(word) == word


@pytest.mark.parametrize(
    "forms",
    [
        ("help", "helps", "helpful", "helpfully"),
        ("peace", "peaceful"),
        ("care", "careful", "carefully"),
        ("symbol", "symbols", "symbolize", "symbolizes", "symbolized"),
        ("recommend", "recommended", "recommendation", "recommendations"),
        ("collaborate", "collaborated", "collaborating", "collaboration"),
        ("frustrate", "frustrated", "frustrating", "frustration"),
        ("inspire", "inspired", "inspiring", "inspiration"),
        ("realize", "realized", "realizes", "realization"),
        ("organize", "organized", "organization", "organizations"),
        ("participate", "participating", "participation"),
        ("create", "creating", "creation"),
        ("educate", "education"),
        ("discuss", "discussed", "discussion", "discussions"),
        ("collect", "collecting", "collection"),
    ],
)
def test_stem_folds_derived_words(forms):
    assert len({stem(form) for form in forms}) == 1


def test_stem_of_derived_words():
    assert stem("helpful") == stem("help") == "help"
    assert stem("frustration") == stem("frustrating") == "frustr"
    assert stem("recommendations") == stem("recommend") == "recommend"
    assert stem("symbolizes") == stem("symbol") == "symbol"


@pytest.mark.parametrize(
    ("apart", "other"),
    [("hope", "hop"), ("note", "not"), ("speed", "spe"), ("thing", "th"), ("family", "fam"),
     ("apply", "app"), ("analysis", "analysi"), ("bus", "bu"), ("station", "state"),
     ("nation", "nate"), ("organ", "organize"), ("real", "realize"), ("passion", "pass"),
     ("mission", "miss"), ("action", "act"), ("awful", "aw")],
)
def test_stem_keeps_distinct_words_apart(apart, other):
    assert stem(apart) != stem(other)


@pytest.mark.parametrize("word", ["ct2024", "v1", "4031", "café", "москва", "is", "ox", ""])
def test_stem_leaves_non_english_and_short_words(word):
    assert stem(word) == word


@given(st.from_regex(r"[a-z]{3,15}", fullmatch=True))
def test_stem_never_goes_below_three_letters(word):
    result = stem(word)
    assert len(result) >= 3 and result.isalpha()


def test_stopwords_cover_both_languages():
    english = {"i", "me", "my", "we", "they", "what", "about", "also", "just", "than", "there"}
    assert english <= STOPWORDS
    assert {"的", "了", "是", "在", "我", "们"} <= STOPWORDS
    assert all(word == word.casefold() for word in STOPWORDS)


def test_fingerprint_ignores_wikilinks():
    assert fingerprint("客户 [[张三]] 的合同") == fingerprint("客户 张三 的合同")
    assert fingerprint("met [[People/Zhang San|Zhang]] at [[Cafe#Terrace]]") == fingerprint(
        "met Zhang at Cafe"
    )
    assert fingerprint("see ![[diagram.png]]") == fingerprint("see diagram.png")


def test_fingerprint_ignores_markup_spacing_and_case():
    base = fingerprint("Renew the contract CT2024-0876 by Friday")
    assert fingerprint("  renew the **contract**\n\nCT2024-0876  by _Friday_ ") == base
    assert fingerprint("- Renew the contract CT2024-0876 by Friday") == base
    assert fingerprint("## Renew the contract ＣＴ２０２４-0876 by Friday") == base
    assert fingerprint("- [ ] Renew the contract CT2024-0876 by Friday") == base


def test_fingerprint_keeps_content_differences():
    assert fingerprint("客户 张三 的合同") != fingerprint("客户 李四 的合同")
    assert fingerprint("ERR_4031") != fingerprint("ERR4031")
    assert re.fullmatch(r"[0-9a-f]{32}", fingerprint("anything"))


def test_char_ngrams():
    assert char_ngrams("abcd", 2) == ["ab", "bc", "cd"]
    assert char_ngrams("abcd", 3) == ["abc", "bcd"]
    assert char_ngrams("ab", 3) == ["ab"]
    assert char_ngrams("", 2) == []
    assert char_ngrams("ab", 1) == ["a", "b"]
    with pytest.raises(ValueError):
        char_ngrams("ab", 0)


# Any code point, lone surrogates included: a file decoded with surrogateescape still indexes.
any_text = st.text(st.characters(blacklist_categories=()))


@given(any_text)
def test_terms_are_nonempty_and_spaceless(text):
    for term in terms(text):
        assert term and not any(ch.isspace() for ch in term)
    for term in query_terms(text):
        assert term and not any(ch.isspace() for ch in term)
    assert len(fingerprint(text)) == 32


@given(st.text())
def test_normalize_is_idempotent_and_matches_its_definition(text):

    once = normalize(text)
    assert once == unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    assert normalize(once) == once


@given(st.text())
def test_query_terms_are_distinct_terms(text):
    found = query_terms(text)
    assert len(found) == len(set(found))
    if set(terms(text)):
        assert set(found) == set(terms(text))
