"""Context weaving (SPEC §5): a query's memories as a few labelled lines that fit a prompt's token budget.

One recall, then, in order:
1. notes that are superseded, candidates or archived are left out, whatever the recall options;
2. duplicates are removed: a memory whose text restates a better-ranked one's (the write pipeline's
   `dedup.restates` at its `write.near_duplicate` likeness, or the same fingerprint) adds nothing;
3. repeated events of one kind are compressed: REPEATS or more event memories whose titles are the
   same once their dates, numbers and ids are taken out ("Weekly sync 2026-10-08", "Weekly sync
   2026-10-15", …) become one line, "first … last (n times)", labelled with the first and last date;
4. each line is labelled with its source and date: "- [from finance-bot, 2026-10-14] …";
5. lines go most important first (the recall's final score; a compressed line ranks as its best
   memory) and are added while they fit the budget; the first line that does not fit is shortened
   ("…") when at least MIN_CUT_TOKENS are left, else left out (counted in `dropped`), as is every
   later line that does not fit whole (shorter ones still may). The block's estimate
   (estimate_tokens) never exceeds the budget.

Access events (reinforcement) are recorded for the memories shown, not for every recalled one.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from . import READ_CHARS
from ..text import terms as text
from ..errors import VaultmemError

if TYPE_CHECKING:
    from .ranking import Hit
    from ..store.store import Store

__all__ = ["Context", "ContextItem", "DEFAULT_BUDGET", "estimate_tokens", "weave"]

DEFAULT_BUDGET = 800
CANDIDATES = 30       # memories recalled for a context (unless `limit` is given): more than 800 tokens hold
REPEATS = 3           # events of one kind recalled this often become one line (two lines would save nothing)
MIN_CUT_TOKENS = 16   # room below which a line is left out rather than shortened to a stub
MIN_KEPT_CHARS = 12   # nor is a memory's text cut shorter than this
LEFT_OUT = ("superseded", "candidate", "archived")

# Token estimate: every visible character counts 1 (a CJK character, a digit: Llama-family tokenizers
# split numbers digit by digit, a punctuation mark, a symbol), except the letters of Latin words,
# which count per word: English averages ~1.3 BPE tokens a word, and a long word about 1 per 4 letters.
_WORD_TOKENS = 1.3
_LETTERS_PER_TOKEN = 4.0
_LETTER = r"[^\W\d_\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0003ffff]"
_LATIN_WORD = re.compile(_LETTER + "+")
_LONG_WORD = re.compile(f"(?<!{_LETTER}){_LETTER}{{6,}}")
_NUMBERED = re.compile(r"[a-z0-9_.:/+-]*\d[a-z0-9_.:/+-]*[年月日号点时分]?")  # dates, times, ids, versions
_SPACE_PUNCT = re.compile(r"[\s\W_]+")
_ELLIPSIS = "…"


def estimate_tokens(value: str) -> int:
    """An estimate of a text's tokens in an LLM prompt that errs on the high side.

    Each Latin word (a run of letters outside CJK) counts max(1.3, letters / 4); every other visible
    character counts 1: a CJK character (Han, kana, Hangul, CJK and full-width punctuation), a digit
    (tokenizers that group digits in threes cost less), a punctuation mark, a symbol, an emoji.
    Whitespace counts 0. The sum is rounded up. So "客户张三的合同编号是 CT2024-0876" is
    10 Han + 1.3 (CT) + 8 digits + 1 (-) = 20.3 -> 21.
    """
    words = _LATIN_WORD.findall(value)
    long_words = _LONG_WORD.findall(value)  # the words past which letters / 4 exceeds 1.3
    word_tokens = _WORD_TOKENS * (len(words) - len(long_words)) + sum(map(len, long_words)) / _LETTERS_PER_TOKEN
    visible = sum(map(len, value.split()))
    return math.ceil(visible - sum(map(len, words)) + word_tokens - 1e-9)


@dataclass(frozen=True)
class ContextItem:
    """One line of a context: a memory, or a run of repeated events compressed into one line."""

    id: str            # the memory's id (of a compressed run: its latest memory)
    title: str
    path: str
    source: str        # who wrote it (of a run: its sources joined by "/")
    date: str          # ISO date it was written (of a run: the last)
    text: str          # the line's text without its label
    score: float       # the recall's final score (of a run: its best)
    count: int = 1     # how many memories the line stands for
    first: str = ""    # a run's first and last dates (a single memory: its date twice)
    last: str = ""
    ids: list[str] = field(default_factory=list)  # every memory the line stands for, best first

    @property
    def line(self) -> str:
        """The line as the context shows it, with its label."""
        when = self.date if self.count == 1 else f"{self.first} {_ELLIPSIS} {self.last}"
        return f"- [from {self.source or 'unknown'}, {when}] {self.text}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (the line included)."""
        return {**asdict(self), "line": self.line}


@dataclass(frozen=True)
class Context:
    """Memories woven for a prompt: `text` is the block, `items` its lines, most important first."""

    query: str
    text: str
    items: list[ContextItem]
    tokens: int        # estimate_tokens(text), never above budget
    budget: int
    dropped: int       # recalled memories the budget left out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {"query": self.query, "text": self.text, "tokens": self.tokens, "budget": self.budget,
                "dropped": self.dropped, "items": [item.to_dict() for item in self.items]}


def weave(vault: Store, query: str, budget_tokens: int = DEFAULT_BUDGET, **recall_options: Any) -> Context:
    """The context for a query within budget_tokens (see the module's docstring for the rules).

    Args:
        recall_options: fields of recall.Query (tags, limit, type, source, namespace, since, now, …);
            `limit` is how many memories are recalled to choose from (default CANDIDATES).
    Raises VaultmemError for a budget below 1.
    """
    if not isinstance(budget_tokens, int) or budget_tokens < 1:
        raise VaultmemError(f"the token budget must be a whole number of at least 1, not {budget_tokens!r}")
    record = recall_options.pop("record_access", None)
    if recall_options.get("as_of") is not None:  # a look at the past is no use of a memory now
        record = False
    recall_options["limit"] = recall_options.get("limit") or CANDIDATES
    from .ranking import Query, recall  # here: importing this module need not load numpy

    hits = [h for h in recall(vault, Query(text=query, record_access=False, **recall_options))
            if h.status not in LEFT_OUT]
    likeness = float(vault.settings.write.near_duplicate)
    shown, dropped = _fit(_runs(_distinct(hits, likeness)), budget_tokens)
    block = "\n".join(item.line for item in shown)
    if record is None:
        record = vault.settings.reinforcement.record_access
    if record and shown:
        vault.record_access([i for item in shown for i in item.ids], recall_options.get("now"))
    return Context(query=query, text=block, items=shown, tokens=estimate_tokens(block), budget=budget_tokens,
                   dropped=dropped)


def _distinct(hits: list[Hit], likeness: float) -> list[Hit]:
    """The hits without those that restate a better-ranked one."""
    from ..text.dedup import restates, words_and_numbers

    kept: dict[tuple[str, ...], list[tuple[str, set[str]]]] = {}  # by numbers: a restatement has the same
    distinct = []
    for hit in hits:
        plain = text.plain_text(_said(hit))
        words, numbers = words_and_numbers(plain)
        same_numbers = kept.setdefault(tuple(numbers), [])
        if not any(plain == other or (likeness < 1 and (words <= other_words or other_words <= words) and
                                      max(restates(plain, other), restates(other, plain)) >= likeness)
                   for other, other_words in same_numbers):
            same_numbers.append((plain, words))
            distinct.append(hit)
    return distinct


def _kind(hit: Hit) -> tuple[str, str] | None:
    """What makes events repeats of one another: their type and their title without dates, numbers
    and ids ("Weekly sync 2026-10-08" -> "weekly sync"); None for a memory that is no event."""
    if "event" not in (hit.type, hit.lifecycle):
        return None
    stem = _SPACE_PUNCT.sub(" ", _NUMBERED.sub(" ", text.normalize(hit.title))).strip()
    return (hit.type, stem) if len(stem) >= 2 else None


def _runs(hits: list[Hit]) -> list[list[Hit]]:
    """Hits grouped: each repeated kind of event (REPEATS or more) as one run, every other hit alone;
    in order of each group's best hit."""
    by_kind: dict[tuple[str, str], list[Hit]] = {}
    for hit in hits:
        kind = _kind(hit)
        if kind is not None:
            by_kind.setdefault(kind, []).append(hit)
    runs: list[list[Hit]] = []
    placed: set[tuple[str, str]] = set()
    for hit in hits:
        kind = _kind(hit)
        if kind is None or len(by_kind[kind]) < REPEATS:
            runs.append([hit])
        elif kind not in placed:
            placed.add(kind)
            runs.append(by_kind[kind])
    return runs


def _item(run: list[Hit], keep: float = 1.0) -> ContextItem:
    """The line for a run of hits, each memory's text cut to `keep` of its length ("…" marks a cut)."""
    best = run[0]
    if len(run) == 1:
        date = best.timestamp[:10]
        return ContextItem(id=best.id, title=best.title, path=best.path, source=best.source, date=date,
                           text=_cut(_said(best), keep), score=best.final, first=date, last=date, ids=[best.id])
    by_time = sorted(run, key=lambda h: h.timestamp)
    first, last = by_time[0], by_time[-1]
    sources = "/".join(dict.fromkeys(h.source or "unknown" for h in by_time))
    shown = f"{_cut(_said(first), keep)} {_ELLIPSIS} {_cut(_said(last), keep)} ({len(run)} times)"
    return ContextItem(id=last.id, title=last.title, path=last.path, source=sources, date=last.timestamp[:10],
                       text=shown, score=best.final, count=len(run), first=first.timestamp[:10],
                       last=last.timestamp[:10], ids=[h.id for h in run])


def _said(hit: Hit) -> str:
    """What a context weaves of a hit: its text, of a long one its first READ_CHARS characters and "…"
    (more than any budget but a huge one holds; a whole huge note would be shortened over and over)."""
    content = hit.content
    return content if len(content) <= READ_CHARS else content[:READ_CHARS] + _ELLIPSIS


def _cut(content: str, keep: float) -> str:
    shown = text.shown_text(content)
    if keep >= 1.0:
        return shown
    return shown[:int(len(shown) * keep)].rstrip() + _ELLIPSIS


def _fit(runs: list[list[Hit]], budget: int) -> tuple[list[ContextItem], int]:
    """The lines that fit the budget in order (shortened where that lets one fit), and how many
    memories were left out. Lines are joined by newlines, which cost nothing, so a block's estimate
    is at most the sum of its lines' (each is rounded up)."""
    shown: list[ContextItem] = []
    left, dropped, cut = budget, 0, False
    for run in runs:
        item: ContextItem | None = _item(run) if left else None
        cost = estimate_tokens(item.line) if item else 0
        if item is not None and cost > left:
            # one line is shortened, the one that meets the budget; after it, only whole lines that fit
            item = _shortened(run, left) if left >= MIN_CUT_TOKENS and not cut else None
            cost = estimate_tokens(item.line) if item else 0
            cut = cut or item is not None
        if item is None:
            dropped += len(run)
            continue
        shown.append(item)
        left -= cost
    return shown, dropped


def _shortened(run: list[Hit], room: int) -> ContextItem | None:
    """The run's line with its texts cut as little as lets it fit `room` tokens (a binary search
    over the share kept), or None when even a stub does not fit."""
    shortest = min(len(text.shown_text(_said(h))) for h in run)
    low, high, best = 0.0, 1.0, None
    for _ in range(12):  # 1/4096 of the text: finer than one character of any note a budget holds
        keep = (low + high) / 2
        item = _item(run, keep)
        if estimate_tokens(item.line) <= room:
            best, low = item, keep
        else:
            high = keep
    return best if best is not None and int(shortest * low) >= MIN_KEPT_CHARS else None
