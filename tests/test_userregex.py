r"""A regex from config.yaml (issue 28 item 3): one that could keep re backtracking without bound is refused
when its rule is built, with the rule's name and the reason (never the regex); every other compiles as
re.compile would. The check counts its own steps, so these tests assert counts, never times."""

from __future__ import annotations

import re

import pytest

from vaultmem.errors import ConfigError
from vaultmem.write import userregex
from vaultmem.write.userregex import MAX_LOOKAROUND, MAX_STATES, MAX_WAYS, compile_user_regex

WHERE = "policy.patterns rule 'evil'"

# The template's examples, and secret and id patterns people write
SAFE = [
    r"EMP[0-9]{6}", r"TKT-[0-9]+", r"door code (?P<secret>\d{4})",
    r"\bAKIA[0-9A-Z]{16}\b", r"sk-[A-Za-z0-9]{20,}", r"ghp_[A-Za-z0-9]{36}", r"xox[baprs]-[0-9A-Za-z-]{10,48}",
    r"eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+",
    r"-----BEGIN [A-Z ]+ PRIVATE KEY-----[\s\S]+?-----END [A-Z ]+ PRIVATE KEY-----",
    r"(?i)(?:api[_-]?key|secret[_-]?key|access[_-]?token)\s*[:=]\s*['\"]?(?P<secret>[A-Za-z0-9_\-]{16,})['\"]?",
    r"(?i)password\s*[:=]\s*.*", r"[\w.+-]+@[\w-]+\.[\w.-]+", r"(?i)\b[A-Z0-9._%+-]+@[A-Z0-9.-]+\.[A-Z]{2,}\b",
    r"[a-z0-9-]+(?:\.[a-z0-9-]+)+\.corp", r"\d{4}\s?\d{4}\s?\d{4}\s?\d{4}", r"(?:\d{1,3}\.){3}\d{1,3}",
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", r"工号[0-9]{6}",
    r"客户编号\s*[:：]\s*[A-Z]{2}\d{6,}",
    r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?", r"(?:(?!-->).)*-->",
    r"(?=[A-Za-z0-9]{0,40}\d)[A-Za-z0-9]{20,}", r"(?<![A-Za-z0-9])AKIA[0-9A-Z]{16}(?![A-Za-z0-9])",
]

# (pattern, what the reason says): each keeps re busy for seconds to hours on a text of a few dozen characters
HOSTILE = [
    (r"(a+)+$", "ways"), (r"(a*)*$", "ways"), (r"(\w+\s?)*$", "ways"), (r"(a|aa)*$", "ways"), (r"(a|a?)+$", "ways"),
    (r"^(([a-z])+.)+[A-Z]([a-z])+$", "ways"), (r"(\d+|\d+\.\d+)+x", "ways"), (r"(.*a){12}", "ways"),
    (r"\w+\w+$", "ways"), (r"\s*\s*\s*\s*\s*\s*\s*\s*x", "ways"), (r"password\s*:?\s*x", "ways"),
    ("a?" * 20 + "a" * 20 + "$", "ways"),
    (r"(?:(?i:k)|[\u2120-\u2130])+$", "ways"),  # k ignoring case matches the Kelvin sign too
    ("(?:a?)?" * 14 + "x", "at one character"), ("(?:|){22}x", "at one character"),
    (r"(a)\1", "backreferences"), (r"(?P<x>a)(?(x)b|c)", "conditional groups"),
    (r"(?=\w+x)\w", "lookahead that repeats without bound"),
    (r"\w+(?=\w{0,90}x)", f"within {MAX_LOOKAROUND} characters"),
    (r"a{5000}", f"more than {MAX_STATES} characters"), (r"(?:a|b)*a(?:a|b){20}", "too complex to check"),
    ("(" * 2000 + "a" + ")" * 2000, "nests its groups too deep"),
]


@pytest.mark.parametrize("pattern", SAFE)
def test_safe_patterns_compile_as_re_does(pattern):
    assert compile_user_regex(pattern, WHERE) == re.compile(pattern)


@pytest.mark.parametrize("pattern, reason", HOSTILE)
def test_a_pattern_that_backtracks_without_bound_is_one_sentence_naming_the_rule(pattern, reason):
    with pytest.raises(ConfigError) as raised:
        compile_user_regex(pattern, WHERE)
    message = str(raised.value)
    assert message.startswith(f"{WHERE}: refused: ") and reason in message and "\n" not in message


def test_the_message_never_holds_the_regex():
    with pytest.raises(ConfigError) as raised:
        compile_user_regex(r"hunter2(a+)+$", WHERE)
    assert "hunter2" not in str(raised.value)


def test_an_invalid_regex_says_where_it_breaks():
    with pytest.raises(ConfigError, match=r"^policy.patterns rule 'evil': invalid regex \(missing \), unterminated"):
        compile_user_regex("TKT-(\\d+", WHERE)


def test_a_repeat_whose_first_way_is_a_match_is_harmless_but_not_with_anything_after_it():
    # re.search stops at the first way that reaches the pattern's end: (a+)+ alone never backtracks
    for pattern in (r"(a+)+", r"(a|aa)*", r"\w+\w+", r"(\w+\s?)*"):
        assert compile_user_regex(pattern, WHERE).pattern == pattern
    for pattern in (r"(a+)+$", r"(a+)+\b", r"(a+)+b", r"(a+)+(?=b)"):
        with pytest.raises(ConfigError, match="ways"):
            compile_user_regex(pattern, WHERE)


def test_the_limit_is_the_number_of_ways():
    # (ab|ab) reads "ab" in two ways (the parser keeps "ab" and two empty alternatives): n of them, 2 ** n
    # ways to the x (and the y after it can fail)
    fits = MAX_WAYS.bit_length() - 1
    assert compile_user_regex("(?:ab|ab)" * fits + "xy", WHERE)
    with pytest.raises(ConfigError, match=f"more than {MAX_WAYS} ways"):
        compile_user_regex("(?:ab|ab)" * (fits + 1) + "xy", WHERE)


class CountingBudget(userregex._Budget):
    """The check's own work, counted."""

    spent: list[int] = []

    def spend(self, steps: int) -> None:
        super().spend(steps)
        CountingBudget.spent.append(steps)


@pytest.mark.parametrize("pattern", [r"(a+)+$", r"sk-[A-Za-z0-9]{20,}", r"\s*\s*\s*\s*\s*\s*\s*\s*x"])
def test_the_check_takes_a_few_thousand_steps(monkeypatch, pattern):
    monkeypatch.setattr(userregex, "_Budget", CountingBudget)
    CountingBudget.spent = []
    try:
        compile_user_regex(pattern, WHERE)
    except ConfigError:
        pass
    assert 0 < sum(CountingBudget.spent) < 5_000


def test_a_pattern_too_complex_to_check_stops_at_the_step_limit(monkeypatch):
    monkeypatch.setattr(userregex, "_Budget", CountingBudget)
    CountingBudget.spent = []
    with pytest.raises(ConfigError, match="too complex"):
        compile_user_regex(r"(?:a|b)*a(?:a|b){30}", WHERE)  # a DFA of 2 ** 30 states
    assert sum(CountingBudget.spent) <= userregex.MAX_WORK + max(CountingBudget.spent)


def test_no_character_past_the_last_space_is_whitespace():
    # the check looks for a space between two characters a class names only up to _LAST_SPACE
    assert re.search(r"\s", userregex._characters(userregex._LAST_SPACE + 1, 0x110000)) is None
    assert chr(userregex._LAST_SPACE).isspace()
