"""Direct answers (SPEC §5, "zero-LLM"): a question about an entity's attribute answered from the
value a note holds, with a confidence, or declined.

How a question is read (no model): its words are split into
- the value types it asks for, by cue phrase (TYPE_CUES: "合同编号" asks for a contract_id, "when"
  for a date or deadline, "how much" for an amount); the first type of a cue fits fully, the
  others a little less (SECONDARY_FIT);
- the entities it names (entity notes' titles and aliases, as recall's graph channel finds them);
- question words, dropped (QUESTION_WORDS, and the index's stopwords);
- what is left: the attribute's own words ("生日", "staging", "security review report").

The candidates are the values of the notes a recall of the question returns (never a superseded,
candidate or archived note, whatever the recall options): a note's `value` frontmatter, whose type
is the note's `type` when that is a value type or one the question asks for, else the type
extraction gives the value; and,
when that value is not of a type asked for, the values of those types extraction finds in its
text (a value some superseded note holds is no candidate: it is the old one). Each scores

    confidence = fit × source × entities × coverage × margin

- fit: 1 for the cue's first type, SECONDARY_FIT for its others; a question with no type cue takes
  the note's `value` only, at UNTYPED_FIT, and only when it is put as a question (a question mark,
  "what", "多少", …): "deploy freeze" is a topic, "what is the deploy freeze date?" a question;
- source: 1 for the `value` frontmatter, TEXT_SOURCE for a value found in the text;
- entities: the share of the named entities the note names or links (none: no candidate);
- coverage: the share of the attribute's words (index terms) the note's title, text and tags hold;
  for a value found in the text, both count in the note's title and the value's sentence only;
- margin: a runner-up with another value within AMBIGUITY_MARGIN lowers the best one's confidence,
  to half of it at a tie (two notes that disagree are no confident answer).

The answer is the best value at THRESHOLD (0.6) or above; below, ask() declines and lists the
best candidates.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ..text import terms as text
from ..text.times import iso_time
from . import READ_CHARS
from .context import LEFT_OUT
from ..errors import VaultmemError
from ..store.index.snapshot import entity_mentions

if TYPE_CHECKING:
    from ..write.extract import Extractor, Value
    from .ranking import Hit
    from ..store.store import Store

__all__ = ["Answer", "THRESHOLD", "ask"]

THRESHOLD = 0.6
SECONDARY_FIT = 0.85
UNTYPED_FIT = 0.75
TEXT_SOURCE = 0.9
AMBIGUITY_MARGIN = 0.15
CANDIDATES_SHOWN = 5
_VALUE_SHARE = 0.4  # a `value` is of an extracted type when that value spans this share of it

# "when" asks for a date of any kind: a more specific cue in the same question ("due") ranks first
WHEN_CUES = ("什么时候", "哪天", "哪一天", "几号", "几月几号", "日期", "when", "what date", "which day", "what day",
             "date")
# cue phrase (normalised) -> the value types it asks for, best fitting first
TYPE_CUES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("合同编号", "合同号", "contract number", "contract id", "contract no"), ("contract_id",)),
    **dict.fromkeys(("发票号", "发票编号", "invoice number", "invoice id", "invoice no"), ("invoice_id",)),
    **dict.fromkeys(("错误码", "错误代码", "error code"), ("error_code",)),
    **dict.fromkeys(("邮箱", "邮件地址", "电子邮件", "email", "e-mail", "mail address"), ("email",)),
    **dict.fromkeys(("电话", "手机号", "手机", "phone number", "phone", "telephone", "mobile"), ("phone",)),
    **dict.fromkeys(("网址", "链接", "url", "link", "website", "web address"), ("url",)),
    **dict.fromkeys(("地址", "address"), ("url", "email")),
    **dict.fromkeys(("截止日期", "截止", "期限", "deadline", "due date", "due"), ("deadline", "date")),
    **dict.fromkeys(WHEN_CUES, ("date", "deadline")),
    **dict.fromkeys(("多少钱", "金额", "费用", "年费", "预算", "价格", "how much", "cost", "price", "budget", "fee",
                     "amount"), ("amount",)),
    **dict.fromkeys(("阈值", "告警条件", "threshold"), ("threshold",)),
    **dict.fromkeys(("端口", "port"), ("port",)),
}
QUESTION_WORDS = (
    "请问", "告诉我", "一下", "多少", "什么", "哪个", "哪些", "哪里", "哪儿", "是啥", "啥", "几", "吗", "呢", "是",
    "的", "现在", "目前", "当前", "用的", "使用", "用", "what", "which", "who", "whose", "where", "how", "is", "are",
    "was", "does", "do", "did", "the", "a", "an", "of", "for", "'s", "’s", "use", "uses", "used", "using", "current",
    "currently", "now", "tell", "me", "please", "know", "our", "my",
)
_CUES = re.compile("|".join(re.escape(c) for c in sorted(TYPE_CUES, key=len, reverse=True)))
_ASCII_WORD = re.compile(r"[a-z0-9]")
_LATIN_WORD = re.compile(r"[a-z]+")
_LONE_HAN = re.compile(r"(?<![\u4e00-\u9fff])[\u4e00-\u9fff](?![\u4e00-\u9fff])")
_ASKS = re.compile(r"[?？]|多少|什么|哪|几|吗|是啥|(?<![a-z])(?:what|which|who|whose|where|how)(?![a-z])")
# stopwords to the index, but what tells "phase one" from "phase two" and "paid" from "not paid"
_KEPT_WORDS = frozenset("one two three four five six seven eight nine ten first second third last next not no".split())
_SENTENCE_END = re.compile(r"[。；;！？!?\n]|\.(?:\s|$)")


@dataclass(frozen=True)
class Answer:
    """A direct answer, or a declined one (answered False, answer '')."""

    question: str
    answered: bool
    answer: str        # the value ('' when declined)
    confidence: float  # 0..1, of the answer (of the best candidate when declined)
    type: str = ""     # the value's type (contract_id, email, date, …)
    id: str = ""       # the note answered from ('' when declined)
    title: str = ""
    path: str = ""
    source: str = ""
    date: str = ""     # the ISO date the note was written
    candidates: list[dict[str, Any]] = field(default_factory=list)  # best first, also when declined
    reason: str = ""   # one sentence: why answered or declined

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return asdict(self)


@dataclass(frozen=True)
class _Candidate:
    value: str
    type: str
    confidence: float
    origin: str        # "value" (the frontmatter) or "text"
    hit: Hit

    def to_dict(self) -> dict[str, Any]:
        h = self.hit
        return {"value": self.value, "type": self.type, "confidence": round(self.confidence, 3),
                "from": self.origin, "id": h.id, "title": h.title, "path": h.path, "source": h.source,
                "date": h.timestamp[:10]}


@dataclass(frozen=True)
class _Question:
    types: tuple[str, ...]               # asked-for value types, best fitting first
    entities: dict[str, set[str]]        # link key -> the names the question gives it
    attribute: frozenset[str]            # index terms of the attribute's own words
    norm: str                            # the whole question, normalised
    asks: bool                           # it is put as a question (a question mark or word)


def ask(vault: Store, question: str, *, min_confidence: float | None = None, **recall_options: Any) -> Answer:
    """Answer a question from the value a note holds, or decline (see the module's docstring).

    Args:
        min_confidence: the threshold (default THRESHOLD).
        recall_options: fields of recall.Query (limit, namespace, source, tags, now, …).
    Raises VaultmemError for an empty question or a threshold outside 0..1.
    """
    threshold = THRESHOLD if min_confidence is None else float(min_confidence)
    if not 0.0 <= threshold <= 1.0:
        raise VaultmemError(f"min_confidence must be between 0 and 1, not {min_confidence!r}")
    if not question.strip():
        raise VaultmemError("the question is empty")
    record = recall_options.pop("record_access", None)
    if recall_options.get("as_of") is not None:  # a look at the past is no use of a memory now
        record = False
    parsed = _parse(vault, question)
    from .ranking import Query, recall  # here: importing this module need not load numpy

    hits = [h for h in recall(vault, Query(text=question, record_access=False, **recall_options))
            if h.status not in LEFT_OUT]
    ranked = _ranked(vault, parsed, hits)
    best = ranked[0] if ranked else None
    shown = [c.to_dict() for c in ranked[:CANDIDATES_SHOWN]]
    if best is None or best.confidence < threshold:
        return Answer(question=question, answered=False, answer="", confidence=round(best.confidence, 3) if best else 0.0,
                      candidates=shown, reason=_declined(parsed, best, threshold))
    if vault.settings.reinforcement.record_access if record is None else record:
        vault.record_access([best.hit.id], recall_options.get("now"))
    h = best.hit
    return Answer(question=question, answered=True, answer=best.value, confidence=round(best.confidence, 3),
                  type=best.type, id=h.id, title=h.title, path=h.path, source=h.source, date=h.timestamp[:10],
                  candidates=shown, reason=f"the note \"{h.title}\" holds the {best.type or 'value'} {best.value} "
                                           f"in its {'value field' if best.origin == 'value' else 'text'}")


def _declined(parsed: _Question, best: _Candidate | None, threshold: float) -> str:
    if best is None:
        asked = " or ".join(parsed.types) if parsed.types else "structured"
        return f"no current note that matches the question holds a {asked} value"
    return (f"the best candidate, {best.value} from \"{best.hit.title}\", has confidence {best.confidence:.2f}, "
            f"below {threshold:g}")


def _parse(vault: Store, question: str) -> _Question:
    """The question's asked-for types, named entities and attribute words."""
    norm = text.normalize(question)
    cues = [m for m in _CUES.finditer(norm) if _whole(norm, m.start(), m.end())]
    types: list[str] = []
    for m in sorted(cues, key=lambda m: m.group() in WHEN_CUES):
        types.extend(t for t in TYPE_CUES[m.group()] if t not in types)
    for m in cues:
        norm = norm[:m.start()] + " " * (m.end() - m.start()) + norm[m.end():]
    entities: dict[str, set[str]] = {}
    for at, name, key in entity_mentions(vault.index.snapshot().entities, norm):
        if _whole(norm, at, at + len(name)):
            entities.setdefault(key, set()).add(name)
    for name in sorted({n for names in entities.values() for n in names}, key=len, reverse=True):
        norm = norm.replace(name, " ")  # longest first: an alias inside a name ("星河" in "星河科技") goes with it
    for word in sorted(QUESTION_WORDS, key=len, reverse=True):
        norm = re.sub(rf"(?<![a-z0-9]){re.escape(word)}(?![a-z0-9])" if _ASCII_WORD.match(word) else re.escape(word),
                      " ", norm)
    norm = _LONE_HAN.sub(" ", norm)  # what is left of "使用率" once "使用" went says nothing on its own
    kept = _KEPT_WORDS.intersection(_LATIN_WORD.findall(norm))
    whole = text.normalize(question)
    return _Question(tuple(types), entities, frozenset(text.terms(norm)) | kept, whole,
                     _ASKS.search(whole) is not None)


def _whole(norm: str, start: int, end: int) -> bool:
    """A Latin-script phrase must stand as whole words ("port" is not in "report")."""
    before = norm[start - 1] if start else " "
    after = norm[end] if end < len(norm) else " "
    glued = (before.isascii() and before.isalnum() and norm[start].isascii()) or \
            (after.isascii() and after.isalnum() and norm[end - 1].isascii())
    return not glued


def _ranked(vault: Store, parsed: _Question, hits: list[Hit]) -> list[_Candidate]:
    """Candidates, one per distinct value (its best support), best first, the margin applied."""
    from ..write.extract import Extractor

    extractor = Extractor.of(vault)
    found = [c for hit in hits for c in _candidates(extractor, parsed, hit)]
    old = _superseded_values(vault, [c.value for c in found if c.origin == "text"])
    best: dict[str, _Candidate] = {}
    for c in sorted(found, key=lambda c: -c.confidence):
        key = text.normalize(c.value).strip()
        # a value the question gives is what it asks about ("what is ERR_4031?"), not its answer
        if c.confidence > 0 and key not in best and key not in parsed.norm and not (c.origin == "text" and key in old):
            best[key] = c
    ranked = list(best.values())
    scores = [c.confidence for c in ranked]
    return [_Candidate(c.value, c.type, c.confidence * _margin(c.confidence, max(scores[:i] + scores[i + 1:], default=0.0)),
                       c.origin, c.hit) for i, c in enumerate(ranked)]


def _margin(score: float, rival: float) -> float:
    """1 when the best other value scores AMBIGUITY_MARGIN less or lower, 0.5 at a tie, 0 at a
    margin's deficit; monotonic, so the order stays the scores' order."""
    return min(1.0, max(0.0, 0.5 + (score - rival) / (2 * AMBIGUITY_MARGIN)))


def _candidates(extractor: Extractor, parsed: _Question, hit: Hit) -> list[_Candidate]:
    """The values one note offers for the question, each with its confidence (from the beginning of a
    long note's text: READ_CHARS)."""
    now = _written(hit)
    said = hit.content[:READ_CHARS]
    if hit.value:
        typed = hit.type in parsed.types or hit.type in _value_types(extractor)  # a `port` note holds a port
        kind = hit.type if typed else _type_of(extractor, hit.value, now)
        fit = _fit(parsed.types, kind) if parsed.types else UNTYPED_FIT if parsed.asks else 0.0
        if fit:
            where = f"{hit.title} {said}"
            weight = _entity_share(parsed, where) * _coverage(parsed, where, hit.tags)
            return [_Candidate(hit.value, kind, fit * weight, "value", hit)] if weight else []
    if not parsed.types:
        return []
    found = []
    for value in extractor.extract(said, now).values:
        if value.type in parsed.types:
            # of a text's values, the one the question's words stand with: "Li Wei is on leave Nov 3",
            # not "deploy freeze from Nov 10" two sentences before it
            where = f"{hit.title} {_sentence(said, value)}"
            weight = _entity_share(parsed, where) * _coverage(parsed, where, hit.tags)
            if weight:
                found.append(_Candidate(value.value, value.type, _fit(parsed.types, value.type) * TEXT_SOURCE * weight,
                                        "text", hit))
    return found


def _sentence(body: str, value: Value) -> str:
    """The sentence of a text that holds a value."""
    starts = [m.end() for m in _SENTENCE_END.finditer(body, 0, value.start)]
    end = _SENTENCE_END.search(body, value.end)
    return body[starts[-1] if starts else 0:end.start() if end else len(body)]


def _fit(types: tuple[str, ...], kind: str) -> float:
    if kind not in types:
        return 0.0
    return 1.0 if kind == types[0] else SECONDARY_FIT


def _entity_share(parsed: _Question, words: str) -> float:
    """The share of the question's entities the words (a note's title and text) name or link (1 when
    the question names none)."""
    if not parsed.entities:
        return 1.0
    norm = text.normalize(words)
    named = sum(1 for key, names in parsed.entities.items() if key in norm or any(n in norm for n in names))
    return named / len(parsed.entities)


def _coverage(parsed: _Question, words: str, tags: list[str]) -> float:
    """The share of the attribute's words that words and tags hold (1 when the question has none left)."""
    if not parsed.attribute:
        return 1.0
    joined = f"{words} {' '.join(tags)}"
    held = set(text.terms(joined)) | (_KEPT_WORDS & set(_LATIN_WORD.findall(text.normalize(joined))))
    return len(parsed.attribute & held) / len(parsed.attribute)


def _value_types(extractor: Extractor) -> frozenset[str]:
    return frozenset(rule.type for rule in extractor.rules) | {"deadline"}


def _type_of(extractor: Extractor, value: str, now: dt.datetime) -> str:
    """The type extraction gives a `value` written in a note whose type is no value type ('' if none)."""
    for found in extractor.extract(value, now).values:
        if (found.end - found.start) >= _VALUE_SHARE * len(value.strip()):
            return found.type
    return ""


def _written(hit: Hit) -> dt.datetime:
    """When the note was written: relative dates in its text ("周五") are relative to then."""
    when = iso_time(hit.timestamp)
    if when is None:
        return dt.datetime.now().astimezone()
    return when if when.tzinfo else when.astimezone()


def _superseded_values(vault: Store, values: list[str]) -> set[str]:
    """Those of these values some superseded note holds as its `value` (normalised)."""
    if not values:
        return set()
    distinct = list(dict.fromkeys(values))
    rows = vault.index.select_notes(f"status = 'superseded' AND value IN ({','.join('?' * len(distinct))})",
                                    tuple(distinct), columns=("value",))
    return {text.normalize(r["value"]).strip() for r in rows}
