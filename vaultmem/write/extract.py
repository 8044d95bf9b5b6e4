"""Extraction by rule and importance (SPEC §6 steps 2–3): typed values, cue phrases and names, no model.

One table (`BUILTIN_RULES`) lists every value rule: its type, regex, optional context words and the
name of its normaliser. Rules are tried in order and a span belongs to the first rule that claims
it, so specific rules come before general ones (a contract id is never also a phone number) and
user rules from the vault's config come before all of them.

Choices, documented once here:
- Ids keep their case as written (the built-in patterns only match upper-case codes).
- Dates are ISO "2024-08-15". A date without a year ("8月15日", "Aug 15") takes the year that puts
  it nearest to `now`. Relative dates use calendar weeks starting on Monday: "this Friday" /
  "本周五" is the Friday of `now`'s week (today when `now` is a Friday), "next Friday" / "下周五"
  the Friday of the week after, "last Friday" / "上周五" the week before.
- A date becomes a `deadline` when "截止", "截至", "deadline", "due" … shortly precede it, when
  "by"/"before" directly precede it, or when "之前"/"前"/"为止" directly follow it.
- Amounts are "<number> <ISO currency>", the multiplier applied: "5万元" -> "50000 CNY"; ¥ and 元
  are CNY, $ is USD.
- Phones: a Chinese mobile is its 11 digits ("+86 138-0013-8000" -> "13800138000"); any other
  number starting with "+" is "+" and its digits. Numbers without "+" other than mobiles are not
  phones (too easily card numbers or ids).
- Thresholds: "<metric><op><number><unit>[ for <n><m|s|h>]", lower-case: "CPU>90% 持续5分钟" ->
  "cpu>90% for 5m", "内存使用率超过80%" -> "内存使用率>80%". Metrics come from a fixed vocabulary.
- Names are taken only after an explicit cue ("客户", "联系人：", "先生", "女士", "总", "customer",
  "client", "Mr."/"Ms."/"Mrs."/"Dr."); Chinese names must start with a common surname.

Speed (batches of 100,000 memories): a rule runs its regex only when the text passes its cheap
gates (an ASCII digit, a needed word, a context word; see Rule). One regex scan per text finds every
gate word and cue phrase (_Words), and the rules to run are worked out once per outcome of the gates.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, InvalidValue
from ..settings import default_settings
from ..text.normalise import DAY_OFFSETS, NORMALISERS
from ..text.terms import LazyPattern

if TYPE_CHECKING:
    from ..settings import ExtractionSettings, ImportancePoints
    from ..store.store import Store

__all__ = ["BUILTIN_RULES", "Extraction", "Extractor", "Rule", "Value", "cue_names", "importance"]

CONTEXT_CHARS = 24  # how far (each side) a rule's context words may stand from its match
DUE_CHARS = 24      # how far before a date its deadline cue ("截止日期是", "due on") may start
POSITIONS = ("first", "last")


@dataclass(frozen=True)
class Value:
    """One typed value found in a text, with its span."""

    type: str
    value: str
    start: int
    end: int


@dataclass(frozen=True)
class Extraction:
    """Everything extraction found in one memory's text."""

    values: list[Value]
    cues: list[str]
    names: list[str]

    @property
    def tags(self) -> list[str]:
        """The distinct value types in text order (extracted types become tags)."""
        return list(dict.fromkeys(v.type for v in self.values))


@dataclass(frozen=True)
class Rule:
    r"""One row of the rule table.

    A regex with a group named `v` yields only that group as the value (the rest is context).
    context: the rule applies only when one of these words (lower case) is within CONTEXT_CHARS.
    normalise: "text" (the value as written) or the name of the function that turns the match into the value
    (normalise.NORMALISERS).
    needs: substrings of which the lower-cased text must hold one before the regex runs at all.
    digit: the regex runs only on text with an ASCII digit (most values have one).
    lower: the regex (written in lower case) runs on the lower-cased text: re.I is several times slower.
    boundary: the match may not follow an ASCII letter or digit; checked here, since a leading
    lookbehind stops the regex engine from skipping ahead to its first characters (and \b counts
    CJK characters as letters).
    For the same skip-ahead, built-in patterns start with a literal, a class, or a group whose
    alternatives all start with a literal (hence `\d\d?`, not `\d{1,2}`, in a leading group).
    """

    type: str
    regex: Any  # a re.Pattern, or a text.LazyPattern compiled on first use
    context: tuple[str, ...] = ()
    normalise: str = "text"
    needs: tuple[str, ...] = ()
    digit: bool = True
    lower: bool = False
    boundary: bool = False


def _rule(type_: str, pattern: str, normalise: str = "text", *, context: Iterable[str] = (), **options: Any) -> Rule:
    return Rule(type_, LazyPattern(pattern), tuple(context), normalise, **options)


_CODE = r"[A-Z][A-Z]+[-_]?\d{2,}(?:[-_][A-Z0-9]+)*(?![A-Za-z0-9_])"
_MONTH = (r"(?P<mon>Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
          r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)(?![a-z])\.?")
_DAY = r"(?P<d>\d(?<!\d\d)\d?)(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s+(?P<y>(?:19|20)\d{2}))?(?!\d)"
# (?<!…\d) after the first digit: tries start only where a number starts; atomic: a digit run that is
# no amount fails at once instead of retrying every shorter split
_NUM = r"(?P<num>\d(?<![\d.,]\d)(?>\d{0,2}(?:,\d{3})+|\d*)(?:\.\d+)?)"
_MULT = r"(?:\s?(?P<mult>百万|千万|万|亿|千|[kKM]|million|billion|bn)(?![A-Za-z]))?"
_CODES = "RMB|CNY|USD|EUR|GBP|JPY|HKD"
_METRIC = (r"(?P<metric>(?:cpu|gpu|memory|mem|ram|disk|latency|load|error rate|response time|p99|p95|heap|swap|qps"
           r"|temperature|内存|磁盘|硬盘|延迟|时延|响应时间|错误率|负载|带宽|温度)"
           r"(?:\s?(?:使用率|利用率|占用率|占用|usage|utili[sz]ation))?)")
_OPERATOR = (r"(?P<op>>=|<=|>|<|≥|≤|＞|＜|超过|高于|大于|低于|小于|不低于|达到|above|over|below|under|exceeds?"
             r"|greater than|less than|at least)")
_UNIT = r"(?:\s*(?P<unit>%|ms|毫秒|秒|gb|mb|°c|℃|s)(?![a-z]))?"
_DURATION = (r"(?:\s*[,，]?\s*(?:持续|for|lasting|over)\s*(?P<dur>\d+)\s*"
             r"(?P<dunit>分钟|小时|秒|minutes?|mins?|hours?|hrs?|seconds?|secs?|[mhs])(?![a-z]))?")
_EN_COUNTS = "an?|one|two|three|four|five|six|seven|eight|nine|ten"
# Every alternative starts with a literal (no leading group), so the scan skips ahead to candidates;
# the normaliser parses the matched words. 后天/前天 inside 之后天气, 以前天… are not dates.
# Two rules, one per language: their matches cannot overlap, and an English text then never
# compiles the Chinese half (~3 ms of a one-off `remember`).
_RELATIVE_ZH = "|".join([
    "大后天", "今天", "明天", "昨天", "后天(?<![之以最然先]..)(?![气然空才生性])", "前天(?<![之以最然先]..)(?![气然空才生性])",
    *(f"{w}个?(?:周|星期|礼拜)[一二三四五六日天]" for w in "上下本这"),
])
_RELATIVE_EN = "|".join([
    "today(?![a-z])", "tomorrow(?![a-z])", "yesterday(?![a-z])",
    *(rf"{w}\s+(?:mon|tues|wednes|thurs|fri|satur|sun)day(?![a-z])" for w in ("next", "this", "last")),
    rf"in\s+(?:\d{{1,3}}|{_EN_COUNTS})\s+(?:days?|weeks?)(?![a-z])",
])
_CN_COUNT = "0-9一二两三四五六七八九十"
_DAYS_LATER = rf"(?P<n>[{_CN_COUNT}][{_CN_COUNT}]{{0,2}})\s*(?P<unit>天|周|个?星期)后"
_METRIC_NEEDS = ("cpu", "gpu", "mem", "ram", "disk", "latency", "load", "error rate", "response time", "p99", "p95",
                 "heap", "swap", "qps", "temperature", "内存", "磁盘", "硬盘", "延迟", "时延", "响应时间", "错误率",
                 "负载", "带宽", "温度")
# Each amount rule needs the currencies its regex can match: a "$5" text skips the "5元" rule and back.
_PREFIX_CURRENCY_NEEDS = ("¥", "￥", "$", "€", "£", "人民币", "rmb", "cny", "usd", "eur", "gbp", "jpy", "hkd")
_SUFFIX_CURRENCY_NEEDS = ("元", "人民币", "美金", "英镑", "港币", "rmb", "cny", "usd", "eur", "gbp", "jpy", "hkd", "dollar")
_MONTH_NEEDS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
# Every relative date holds one of these (weekdays end in "day"), so most texts skip the regex.
_RELATIVE_ZH_NEEDS = ("天", "周", "星期", "礼拜")
_RELATIVE_EN_NEEDS = ("day", "tomorrow", "week")

# Order is precedence: a span belongs to the first rule that matches it, so specific before general.
BUILTIN_RULES: tuple[Rule, ...] = (
    _rule("url", r"(?:https?://|www\.)[A-Za-z0-9\-._~:/?#\[\]@!$&()*+,;=%]*[A-Za-z0-9_~/#@$&*+=%-]",
          needs=("://", "www."), digit=False),
    _rule("email", r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![A-Za-z0-9-])",
          needs=("@",), digit=False),
    _rule("contract_id", r"CT\d{4}-\d{3,}(?![A-Za-z0-9_])", needs=("ct",), boundary=True),
    _rule("contract_id", _CODE, context=("合同", "contract"), boundary=True),
    _rule("invoice_id", r"INV[-_]?\d+(?:[-_][A-Z0-9]+)*(?![A-Za-z0-9_])", needs=("inv",), boundary=True),
    _rule("invoice_id", _CODE, context=("发票", "invoice"), boundary=True),
    _rule("error_code", r"ERR(?:OR)?[-_]?\d{3,}(?![A-Za-z0-9_])", needs=("err",), boundary=True),
    _rule("error_code", _CODE, context=("错误", "报错", "异常", "error", "exception"), boundary=True),
    _rule("error_code", r"(?:错误码|错误代码|error code)\s*(?:is\s+)?[:：是为]?\s*(?P<v>\d{3,6})(?!\d)",
          needs=("错误码", "错误代码", "error code"), lower=True),
    _rule("id", _CODE, boundary=True),
    _rule("threshold", _METRIC + r"\s*(?:is\s+)?" + _OPERATOR + r"\s*(?P<num>\d+(?:\.\d+)?)" + _UNIT + _DURATION,
          "threshold", needs=_METRIC_NEEDS, lower=True, boundary=True),
    _rule("amount", r"(?P<cur>¥|￥|\$|€|£|US\$|HK\$|人民币|" + _CODES + r")\s?" + _NUM + _MULT + r"(?:\s?元)?",
          "amount", needs=_PREFIX_CURRENCY_NEEDS, boundary=True),
    _rule("amount", _NUM + _MULT + r"\s?(?P<cur>元|人民币|美元|美金|欧元|英镑|日元|港币|港元"
          r"|(?:" + _CODES + r"|dollars?|euros?)(?![A-Za-z]))", "amount", needs=_SUFFIX_CURRENCY_NEEDS,
          boundary=True),
    _rule("date", r"(?P<y>(?:19|20)\d\d)(?P<sep>[-/.])(?P<m>\d\d?)(?P=sep)(?P<d>\d\d?)(?!\d|\.\d)", "ymd",
          boundary=True),
    _rule("date", r"(?P<y>\d(?<!\d\d)\d{3})\s*年\s*(?P<m>\d\d?)\s*月\s*(?P<d>\d\d?)\s*[日号]", "ymd", needs=("年",),
          boundary=True),
    _rule("date", r"(?P<m>\d(?<!\d\d)\d?)\s*月\s*(?P<d>\d\d?)\s*[日号]", "ymd", needs=("月",), boundary=True),
    _rule("date", _DAY + r"\s+" + _MONTH + _YEAR, "ymd", needs=_MONTH_NEEDS, boundary=True),
    _rule("date", _MONTH + r"\s+" + _DAY + _YEAR, "ymd", needs=_MONTH_NEEDS, boundary=True),
    _rule("date", _RELATIVE_ZH, "relative", needs=_RELATIVE_ZH_NEEDS, digit=False, lower=True, boundary=True),
    _rule("date", _RELATIVE_EN, "relative", needs=_RELATIVE_EN_NEEDS, digit=False, lower=True, boundary=True),
    _rule("date", _DAYS_LATER, "days_later", needs=("后",), digit=False),
    _rule("phone", r"(?P<v>1[3-9]\d(?:[ -]?\d{4}){2})(?![ -]?\d)", "mobile", boundary=True),
    _rule("phone", r"\+\d{1,3}(?:[ -]?\(?\d{1,4}\)?){2,5}(?![ -]?\d)", "intl_phone", needs=("+",), boundary=True),
)

_BUILTIN_CUES = {
    "remember": ("记住", "别忘了", "别忘记", "不要忘记", "不要忘了", "务必", "切记", "牢记", "remember this",
                 "remember:", "remember to", "please remember", "note to self", "don't forget", "do not forget", "always remember", "never forget", "keep in mind"),
    "later": ("note for later", "for later", "remind me", "备忘", "回头", "提醒我", "稍后"),
    "always": ("以后都", "从现在起", "从今以后", "今后", "每次", "一律", "from now on", "always", "never again",
               "every time", "going forward"),
}

# Cue phrases that only frame a memory ("记住：", "remember:", "from now on"): a title leaves them out.
# Not "always", "never again", "每次": those are what the memory says; nor "remind me", "remember to".
TITLE_CUES = tuple(p for p in (*_BUILTIN_CUES["remember"], *_BUILTIN_CUES["later"], "from now on", "going forward",
                                "从现在起", "从今以后", "今后")
                   if p not in ("remind me", "remember to", "提醒我"))


class Extractor:
    """Finds values, cues and names by rule; build it once per vault config, call extract() often."""

    def __init__(self, rules: Iterable[Rule] = (), cues: Mapping[str, Iterable[str]] | None = None):
        """Build the matchers.

        Args:
            rules: tried before the built-in table (so they win overlapping spans).
            cues: extra phrases per kind ("remember", "later", "always"), added to the built-ins.
        """
        self.rules = (*rules, *BUILTIN_RULES)
        # the gate words of the rules a text [has a digit] may run
        self._gate_words = {True: _gate_words(self.rules), False: _gate_words(r for r in self.rules if not r.digit)}
        self._cue_regex, self._cue_kinds = _cue_matcher(_merged_cues(cues or {}))
        # most texts hold no cue phrase (straight or curly) at all, and then skip the cue matcher
        self._cue_phrases = frozenset(v for p in self._cue_kinds for v in (p, p.replace("'", "’")))
        # a name cue in the text is in low in lower case: texts with none of these skip cue_names()
        self._name_hints = frozenset(w.lower() for w in _NAME_CUE_WORDS)
        self._words: dict[bool, _Words] = {}  # [has a digit]: made on first need, as a one-off text needs one
        self._steps: list[_Step | None] = [None] * len(self.rules)  # made when a rule first runs
        self._plans: dict[tuple[bool, frozenset[str]], tuple[_Step, ...]] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_steps": [None] * len(self.rules), "_plans": {}}  # a worker fills its own

    @classmethod
    def from_settings(cls, section: ExtractionSettings) -> Extractor:
        """An extractor with the user rules and cues of a vault's `extraction` settings.

        Raises ConfigError naming the rule for a malformed rule or an invalid regex.
        """
        if not isinstance(section.rules, (list, tuple)):
            raise ConfigError("extraction.rules must be a list of {type, regex, context} mappings")
        return cls([_user_rule(i, r) for i, r in enumerate(section.rules)], section.cues._asdict())

    @classmethod
    def of(cls, vault: Store) -> Extractor:
        """The vault's extractor, built from its settings once and reused by this process (Store.reused:
        built again after Store.configure)."""
        return vault.reused("extractor", None, lambda: cls.from_settings(vault.settings.extraction))

    def extract(self, text: str, now: dt.datetime) -> Extraction:
        """Values (text order), cue kinds and names in text; relative dates resolve against `now`, in its zone."""
        low = text.lower()
        if len(low) != len(text):  # a few letters lower into two characters: keep the spans aligned
            low = "".join(c if len(c.lower()) > 1 else c.lower() for c in text)
        has_digit = _DIGIT.search(text) is not None
        words = self._words.get(has_digit)
        if words is None:
            words = self._words[has_digit] = _Words(self._gate_words[has_digit] | self._cue_phrases | self._name_hints)
        found = words.found(low)
        values = self._values(text, low, now, has_digit, found)
        names = [] if self._name_hints.isdisjoint(found) else cue_names(text)
        return _frozen(Extraction, values=values, cues=self._cues(low, found), names=names)

    def _cues(self, low: str, found: set[str]) -> list[str]:
        """The distinct cue kinds in the lower-cased text, in order of first appearance."""
        if self._cue_phrases.isdisjoint(found):
            return []
        kinds = (self._cue_kinds[m.group().replace("’", "'")] for m in self._cue_regex.finditer(low)
                 if _stands_alone(low, m.start(), m.end()))
        return list(dict.fromkeys(kinds))

    def _values(self, text: str, low: str, now: dt.datetime, has_digit: bool, found: set[str]) -> list[Value]:
        present = self._gate_words[has_digit].intersection(found)
        claimed: list[Value] = []
        for step in self._plan(has_digit, present):
            s = low if step.lower else text
            first = step.search(s)
            if first is not None:  # most rules find nothing
                step.claim(first, s, text, low, now, claimed)
        if len(claimed) > 1:
            claimed.sort(key=_START)
        return claimed

    def _plan(self, has_digit: bool, present: frozenset[str]) -> tuple[_Step, ...]:
        """The rules that pass their gates, in order: worked out once per outcome (texts share a few thousand)."""
        plan = self._plans.get((has_digit, present))
        if plan is None:
            if len(self._plans) >= _MAX_PLANS:  # adversarial texts could make endless outcomes
                self._plans.clear()
            plan = tuple(self._step(i) for i, rule in enumerate(self.rules) if _may_match(rule, present, has_digit))
            self._plans[(has_digit, present)] = plan
        return plan

    def _step(self, i: int) -> _Step:
        step = self._steps[i] = self._steps[i] or _Step(self.rules[i])
        return step


_DIGIT = re.compile(r"[0-9]")
_ASCII_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_ASCII_ALNUM = _ASCII_LETTERS | frozenset("0123456789")
_MAX_PLANS = 4096
_START = attrgetter("start")


def _gate_words(rules: Iterable[Rule]) -> frozenset[str]:
    return frozenset(w for rule in rules for w in (*rule.needs, *rule.context))


class _Words:
    """Tells which of many words a text holds: a regex scan costs half of an `in` test per word.

    A scan stops at the longest word starting at each place and resumes after it. The words inside
    a found word are there too; a word that starts inside a found word and runs past its end is
    tested on its own. Words starting with an ASCII and with another character get a scan each:
    at each place a scan tries one branch per first character (and ASCII text needs only one scan).
    """

    def __init__(self, words: Iterable[str]):
        words = set(words)
        self._empty = frozenset(w for w in words if not w)  # "" is in every text
        words -= self._empty
        ascii_first = {w for w in words if w[0].isascii()}
        self._scans = [LazyPattern(_alternation(part)) for part in (ascii_first, words - ascii_first) if part]
        self._ascii_scans = self._scans[:1] if ascii_first else []
        self._inside = {u: frozenset(w for w in words if w in u) for u in words}
        starts: dict[str, list[str]] = {}  # each proper beginning of a word -> the words beginning so
        for w in words:
            for k in range(1, len(w)):
                starts.setdefault(w[:k], []).append(w)
        across = {u: tuple({w for d in range(1, len(u)) for w in starts.get(u[d:], ()) if w not in u}) for u in words}
        self._across = {u: ws for u, ws in across.items() if ws}

    def found(self, low: str) -> set[str]:
        found = set(self._empty)
        for scan in self._ascii_scans if low.isascii() else self._scans:
            for word in set(scan.findall(low)):
                found |= self._inside[word]
                if word in self._across:
                    found.update([w for w in self._across[word] if w in low])
        return found


def _alternation(words: Iterable[str]) -> str:
    """Regex text finding the longest of the (non-empty) words at a place, in one branch per first character."""
    tails: dict[str, list[str]] = {}
    for word in sorted(words, key=lambda w: (-len(w), w)):  # longest first: the first tail that fits is the longest
        tails.setdefault(word[0], []).append(word[1:])
    branches = []
    for head, rest in tails.items():
        longer = "|".join(re.escape(t) for t in rest if t)
        branches.append(re.escape(head) + (f"(?:{longer})" + ("?" if "" in rest else "") if longer else ""))
    return "|".join(branches)


def _may_match(rule: Rule, present: frozenset[str], has_digit: bool) -> bool:
    """The cheap gates (present: the gate words the lower-cased text holds): most rules never run their regex."""
    if rule.digit and not has_digit:
        return False
    if rule.needs and present.isdisjoint(rule.needs):
        return False
    return not rule.context or not present.isdisjoint(rule.context)


class _Step:
    """A rule ready to run: its regex compiled and its options looked up once, not once per text."""

    __slots__ = ("boundary", "context", "dated", "finditer", "group", "lower", "normaliser", "search", "type")

    def __init__(self, rule: Rule):
        self.search, self.finditer = rule.regex.search, rule.regex.finditer  # compiles a LazyPattern
        self.group = "v" if "v" in rule.regex.groupindex else 0
        self.type, self.lower, self.boundary, self.context = rule.type, rule.lower, rule.boundary, rule.context
        self.normaliser = rule.normalise  # looked up per value: a misspelt name fails only on a value
        self.dated = rule.type == "date"

    def claim(self, first: re.Match[str], s: str, text: str, low: str, now: dt.datetime, claimed: list[Value]) -> None:
        """Append the values this rule finds in s (text or low) from its first match on, in spans no earlier
        rule claimed."""
        for m in _scan(first, self.search, self.finditer, s):
            start, end = m.span(self.group)
            if start == end or not _free(claimed, start, end):
                continue
            if self.boundary and start and text[start - 1] in _ASCII_ALNUM:
                continue
            if self.context and not _near(low, start, end, self.context):
                continue
            name = self.normaliser
            value = m.group(self.group) if name == "text" else NORMALISERS[name](m, now)
            if value is not None:
                kind = _date_kind(low, start, end) if self.dated else self.type
                claimed.append(_frozen(Value, type=kind, value=value, start=start, end=end))


def _scan(m: re.Match[str] | None, search: Callable[..., re.Match[str] | None],
          finditer: Callable[..., Iterator[re.Match[str]]], s: str) -> Iterator[re.Match[str]]:
    """The matches finditer(s) gives from the first one m on, found by search(): rules find few, and
    starting a finditer costs more than a search."""
    while m is not None:
        if m.start() == m.end():  # after an empty match finditer must move on, which search(s, pos) cannot
            yield from finditer(s, m.start())
            return
        yield m
        m = search(s, m.end())


def _frozen(cls: type, **fields: Any) -> Any:
    """cls(**fields) for a frozen dataclass at half the cost: its __init__ sets each field through
    object.__setattr__ (extract() makes a few hundred thousand)."""
    made = object.__new__(cls)
    made.__dict__.update(fields)
    return made


def _free(claimed: list[Value], start: int, end: int) -> bool:
    """No claimed value overlaps start..end."""
    for v in claimed:
        if start < v.end and v.start < end:
            return False
    return True


def _near(low: str, start: int, end: int, words: tuple[str, ...]) -> bool:
    window = low[max(0, start - CONTEXT_CHARS):end + CONTEXT_CHARS]
    return any(w in window for w in words)


def _stands_alone(s: str, start: int, end: int) -> bool:
    """No ASCII letter is glued to an ASCII-letter edge of s[start:end] ("always" is not in "hallways")."""
    glued_start = start > 0 and s[start - 1] in _ASCII_LETTERS and s[start] in _ASCII_LETTERS
    glued_end = end < len(s) and s[end] in _ASCII_LETTERS and s[end - 1] in _ASCII_LETTERS
    return not (glued_start or glued_end)


# Searched in the DUE_CHARS before a date. Each alternative starts with its word, so the regex engine skips
# ahead to the words ("(?<![a-z])by" would make it try every position): "by" not after a letter is "by(?<![a-z]by)".
_DUE_BEFORE = LazyPattern("|".join([
    *(rf"{word}[^。.;；!?！？\n]{{0,10}}$" for word in ("截止", "截至", "期限", "最晚", "最迟", "deadline", "due")),
    *(rf"{word}(?<![a-z]{word})\s+(?:the\s+|on\s+)?$" for word in ("by", "before", "no later than")),
]))
_DUE_AFTER = LazyPattern(r"\s*(?:之前|以前|前(?![往进面])|截止|为止)")


def _date_kind(low: str, start: int, end: int) -> str:
    """`deadline` for a date with a due cue right before or after it, else `date`."""
    due = _DUE_BEFORE.search(low, max(0, start - DUE_CHARS), start) or _DUE_AFTER.match(low, end)
    return "deadline" if due else "date"


# ---------------------------------------------------------------- user rules and cues from the config

def _user_rule(i: int, spec: Any) -> Rule:
    """A Rule from a config mapping {type, regex, context?}; ConfigError names the rule when it is malformed."""
    from .userregex import compile_user_regex  # only a config with rules of its own needs the check

    where = f"extraction.rules[{i}]"
    if not isinstance(spec, Mapping) or set(spec) - {"type", "regex", "context"}:
        raise ConfigError(f"{where}: must be a mapping with type, regex and optional context")
    type_, pattern, context = spec.get("type"), spec.get("regex"), spec.get("context") or []
    if not isinstance(type_, str) or not type_ or not isinstance(pattern, str):
        raise ConfigError(f"{where}: needs a type and a regex, both text")
    if not isinstance(context, (list, tuple)) or not all(isinstance(w, str) for w in context):
        raise ConfigError(f"{where} ({type_}): context must be a list of words")
    regex = compile_user_regex(pattern, f"{where} ({type_})")
    return Rule(type_, regex, tuple(w.lower() for w in context), "text", digit=False)


def _merged_cues(extra: Mapping[str, Iterable[str]]) -> dict[str, tuple[str, ...]]:
    """Built-in cue phrases plus the config's, per kind; ConfigError for an unknown kind or a non-list."""
    merged = dict(_BUILTIN_CUES)
    for kind, phrases in extra.items():
        if kind not in merged:
            raise ConfigError(f"extraction.cues: unknown kind {kind!r} (use {', '.join(_BUILTIN_CUES)})")
        if not isinstance(phrases, (list, tuple)) or not all(isinstance(p, str) and p.strip() for p in phrases):
            raise ConfigError(f"extraction.cues.{kind} must be a list of phrases")
        merged[kind] = (*merged[kind], *phrases)
    return merged


def _cue_matcher(cues: Mapping[str, Iterable[str]]) -> tuple[LazyPattern, dict[str, str]]:
    """One alternation of every phrase for the lower-cased text, and phrase -> kind.

    Longest first, so "always remember" wins over "always"; apostrophes may be curly.
    """
    kinds = {p.strip().lower(): kind for kind, phrases in cues.items() for p in phrases}
    parts = [re.escape(p).replace("'", "['’]") for p in sorted(kinds, key=len, reverse=True)]
    return LazyPattern("|".join(parts)), kinds  # compiled when a text first holds a cue


# ---------------------------------------------------------------- names

_SURNAMES = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘蒋蔡余杜叶程苏魏吕丁任沈姚卢姜崔"
    "钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史黎贺顾毛郝龚邵万钱严覃武戴莫孔汤常温康施牛樊葛邢"
    "齐易乔伍庞颜倪庄聂章鲁岳翟殷詹申欧耿兰焦俞左柳甘祝包宁尚符舒阮柯纪梅童凌毕季裴霍涂苗谷盛曲翁冉骆蓝游辛靳"
    "管柴蒙鲍华喻祁蒲房滕屈饶牟艾尤穆农卓吉缪简车项芦麦褚娄窦戚岑景党宫费卜冷晏席卫米柏宗瞿桂佟臧闵苟邬卞姬"
    "仇栾隋刁沙荣巫寇桑郎甄仲虞敖巩佘池查麻苑迟邝"
)
# Characters that rarely end a three-character name but often follow a two-character one ("客户张三的…").
_AFTER_NAME = frozenset("的是在和与及说要了也都把被给让对从向就还又会想称表已后前这那合电手邮地公提签付买订"
                        "来去打发问喜不没很最刚每再才只希需请先女总所家为之等们于将到")
_NAME_CUE_WORDS = ("客户", "联系人", "先生", "女士", "总", "customer", "client", "Mr", "Ms", "Dr")
_NAME_CUES = LazyPattern(_alternation(_NAME_CUE_WORDS))
_CN_NAME_AFTER = LazyPattern(r"(?:客户|联系人\s*[：:])\s*([\u4e00-\u9fff]{2,3})")
_CN_TITLE = LazyPattern(r"先生|女士|总(?![是监裁经部结共计体之额量数会括统账价和要算能])")
_EN_NAME = LazyPattern(r"(?:(?:customer|client)\s+(?P<full>[A-Z][a-z]+ [A-Z][a-z]+)"
                      r"|(?:Mr|Ms|Mrs|Dr)\.?\s+(?P<name>[A-Z][a-z]+(?: [A-Z][a-z]+)?))(?![A-Za-z])")


def cue_names(text: str) -> list[str]:
    """Person and customer names named by an explicit cue, distinct, in text order."""
    if _NAME_CUES.search(text) is None:
        return []
    found = [(m.start(1), n) for m in _CN_NAME_AFTER.finditer(text)
             if (n := _name_after(m.group(1), text[m.end(1):m.end(1) + 1]))]
    found += [(m.start(), n) for m in _CN_TITLE.finditer(text) if (n := _name_before(text, m.start()))]
    found += [(m.start(), m.group("full") or m.group("name")) for m in _EN_NAME.finditer(text)
              if _stands_alone(text, m.start(), m.end())]
    return list(dict.fromkeys(n for _, n in sorted(found)))


def _name_after(chars: str, following: str) -> str | None:
    """The name at the start of 2–3 Han characters after a cue ("张三的" -> "张三", "张三明天" -> "张三")."""
    if chars[0] not in _SURNAMES:
        return None
    three = len(chars) == 3 and chars[2] not in _AFTER_NAME and chars[2] + following not in DAY_OFFSETS
    return chars if three else chars[:2]


def _name_before(text: str, end: int) -> str | None:
    """The 2–3 Han character name right before a title ("联系张三先生" -> "张三")."""
    chars = _HAN_TAIL.search(text, max(0, end - 3), end).group()
    if len(chars) == 3 and chars[0] in _SURNAMES:
        return chars
    return chars[-2:] if len(chars) >= 2 and chars[-2] in _SURNAMES else None


_HAN_TAIL = LazyPattern(r"[\u4e00-\u9fff]*$")


# ---------------------------------------------------------------- importance (SPEC §6.3)

def importance(extraction: Extraction, *, position: str | None = None,
               points: ImportancePoints | None = None) -> tuple[float, list[tuple[str, float]]]:
    """SPEC §6.3 score 0..10 and its explanation, e.g. [("cue: remember", 5.0), ("position: first", 2.0)].

    Args:
        extraction: what extract() found.
        position: "first" or "last" message of the conversation; None adds nothing.
        points: a vault's `extraction.importance` settings; None = the defaults.
    Returns:
        (score, contributions); when clamping changed the sum, a last ("clamped to 0..10", delta) entry.
    """
    points, scores = _scale(points or default_settings().extraction.importance)
    if position is not None and position not in POSITIONS:
        raise InvalidValue(f"position must be one of {POSITIONS} or None, not {position!r}")
    key = (tuple(extraction.cues), not extraction.values, not extraction.names, position)  # all a score depends on
    known = scores.get(key)
    if known is None:
        parts = [p for p in (_cue_part(extraction.cues, points), _content_part(extraction, points),
                             position and (f"position: {position}", points[position])) if p]
        total = sum(p for _, p in parts)
        score = min(max(total, 0.0), 10.0)
        if score != total:
            parts.append(("clamped to 0..10", score - total))
        if len(scores) >= 1024:  # hand-made extractions could bring endless cue lists
            scores.clear()
        known = scores[key] = score, tuple(parts)
    return known[0], list(known[1])


# importance settings -> (their points as floats, the scores made with them): a batch scores 100,000
# memories with one vault's settings, and reading its points costs more than the rest of importance()
_SCALES: dict[ImportancePoints, tuple[dict[str, float], dict[tuple, tuple]]] = {}


def _scale(given: ImportancePoints) -> tuple[dict[str, float], dict[tuple, tuple]]:
    known = _SCALES.get(given)
    if known is None:
        if len(_SCALES) >= 64:
            _SCALES.clear()
        points = {name: float(value) for name, value in given._asdict().items()}
        known = _SCALES[given] = (points, {})
    return known


def _cue_part(cues: list[str], points: dict[str, float]) -> tuple[str, float] | None:
    """The strongest cue only: "always" scores like "remember"."""
    scored = [(points["cue_later" if kind == "later" else "cue_remember"], kind) for kind in cues]
    if not scored:
        return None
    best = max(scored, key=lambda s: s[0])
    return f"cue: {best[1]}", best[0]


def _content_part(extraction: Extraction, points: dict[str, float]) -> tuple[str, float]:
    if extraction.values:
        return "content: numbers/dates/urls", points["content_values"]
    if extraction.names:
        return "content: names", points["content_names"]
    return "content: plain", points["content_plain"]
