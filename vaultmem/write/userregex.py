r"""The regexes a user writes in config.yaml (policy.patterns, extraction.rules), compiled only when
they cannot keep Python's regex engine busy for ever.

`re` backtracks: before it gives up on a text it tries every way the pattern could match it, and
`(a+)+$` can match a run of n a's in 2**(n-1) ways, so one 32-character text kept every `remember`,
`lint` and the pre-commit hook busy for hours. A shared config is hostile input: each user regex is
checked once, when its rule is built, and refused with a ConfigError naming the rule (never the regex,
which may hold a secret) when some text could be matched in more than MAX_WAYS ways: a repeat inside a
repeat (`(a+)+$`, `(\w+\s?)*$`), alternatives of a repeat that match the same text (`(a|aa)*$`),
repeats side by side that take the same characters (`\w+\w+$`, `\s*:?\s*x`), optional parts that can
each match nothing (`(a?)?(a?)?…x`). Backreferences and conditional groups are refused outright
(matching them is NP-hard), and so is a lookahead that repeats without bound or, past the pattern's
start, one longer than MAX_LOOKAROUND: either runs again at each position the match reaches.

A pattern is checked as re.search and finditer run it (the policy and the extractor use nothing else):
a way that reaches the pattern's end, with only optional parts left and no assertion pending, is a
match and the engine tries no other. So `(a+)+` alone is harmless (its first way is a match) and
accepted, while `(a+)+$`, where the `$` can fail and send it back through every way, is refused.

Why a check when the config is read, not a time budget (the `regex` package's timeout) nor a
linear-time engine (re2, a C++ dependency): the answer is the same on every machine however loaded (a
budget would redact a secret on an idle machine and let it through on a busy one), the error comes
at once instead of in the middle of a batch, and rules keep Python's syntax and Unicode classes with
no new dependency.

How: the parse tree (re._parser, what re.compile itself reads) becomes the pattern's position
automaton: a state per character the pattern reads, counted repeats written out, and on each edge the
number of ways one state can follow another (`(a+)+` goes from its `a` back to it in two: the inner
repeat and the outer one; `(a?)?` has two ways of matching nothing). Then every text is walked a
class of characters at a time, as a DFA is built, counting the ways of matching it; a way that ends
in a match is dropped, and a match's state starts a count of its own (re goes on from it first). The
check itself is bounded by counts (states, steps), never by a clock: a few milliseconds a pattern.
It does not bound what any backtracking search costs on a long text, with a start at each position:
the length of the text bounds that.
"""

from __future__ import annotations

import array
import functools
import re
import sys
from collections import Counter
from dataclasses import dataclass
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser  # type: ignore[attr-defined]
from typing import Any

from ..errors import ConfigError

__all__ = ["MAX_LOOKAROUND", "MAX_STATES", "MAX_TRIES", "MAX_WAYS", "compile_user_regex"]

MAX_WAYS = 16  # ways one text may be matched: (a|a){4} has 16, (a|a){5} 32
MAX_TRIES = 2000  # ways the engine may try at one character: an alternation of 2,000 words
MAX_STATES = 1000  # characters a pattern reads once its counted repeats are written out
MAX_LOOKAROUND = 32  # characters a lookaround may read where the match reaches it at many positions
MAX_WORK = 100_000  # steps of the check itself: a pattern past it is refused as too complex
FOLD_STEPS = 1_000  # steps of reading the BMP for the characters a class ignoring case matches by their case

_FLAGS = re.IGNORECASE | re.ASCII | re.DOTALL  # what changes the characters a class matches
_READS = (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN)
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT)
_CATEGORIES = {sre.CATEGORY_DIGIT: r"\d", sre.CATEGORY_NOT_DIGIT: r"\D", sre.CATEGORY_SPACE: r"\s",
               sre.CATEGORY_NOT_SPACE: r"\S", sre.CATEGORY_WORD: r"\w", sre.CATEGORY_NOT_WORD: r"\W"}
# Outside ASCII, a class tells characters apart by their kind only (and by the characters it names):
# the first character of each kind between two named ones stands for the rest.
_SPACE = re.compile(r"\s")
_KINDS = (re.compile(r"\d"), re.compile(r"[^\W\d]"), _SPACE, re.compile(r"[^\w\s]"))

_TOO_MANY_WAYS = (f"refused: the regex can match one text in more than {MAX_WAYS} ways, and Python's re tries"
                  r" them all before it gives up (a repeat inside a repeat as in (a+)+$, neighbouring repeats that"
                  r" take the same characters as in \w+\w+$ or \s*:?\s*x, alternatives that match the same text as"
                  r" in (a|aa)*$); let each repeat stop where the next part starts")
_TOO_MANY_TRIES = (f"refused: the regex can try more than {MAX_TRIES} ways at one character (optional parts that"
                   " can each match nothing, as in (a?)?(a?)?…, or very many alternatives)")


class _Refused(Exception):
    """Why a regex is refused: the sentence that follows the rule's name."""


def compile_user_regex(pattern: str, where: str) -> re.Pattern[str]:
    """Compile a regex from the config, or raise ConfigError naming `where` and the reason, never the regex.

    Raises ConfigError: the regex is invalid, nests too deep, or could backtrack without bound.
    """
    try:
        regex = re.compile(pattern)
        _check(_parser.parse(pattern), _Budget())
    except re.error as exc:
        raise ConfigError(f"{where}: invalid regex ({exc})") from None
    except RecursionError:
        raise ConfigError(f"{where}: refused: the regex nests its groups too deep") from None
    except _Refused as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return regex


class _Budget:
    """The states and steps a check may spend, shared by a pattern and its lookarounds."""

    def __init__(self) -> None:
        self.states = 0
        self.work = 0

    def state(self) -> None:
        self.states += 1
        if self.states > MAX_STATES:
            raise _Refused(f"refused: the regex is too long to check: it reads more than {MAX_STATES} characters"
                           " once its counted repeats are written out (use + or * or smaller counts)")

    def spend(self, steps: int) -> None:
        self.work += steps
        if self.work > MAX_WORK:
            raise _Refused("refused: the regex is too complex to check (too many combinations of its parts)")


def _check(items: Any, budget: _Budget, flags: int | None = None, lookahead: bool = False) -> None:
    """Raise _Refused when a pattern (or a lookaround's body) or a lookaround in it could backtrack without bound."""
    automaton = _Automaton(budget, lookahead)
    whole = automaton.sequence(items, items.state.flags if flags is None else flags)
    automaton.walk(whole)
    for body, body_flags, ahead, anywhere in automaton.lookarounds:
        states = budget.states
        _check(body, budget, body_flags, ahead)
        if anywhere and budget.states - states > MAX_LOOKAROUND:
            raise _Refused(f"refused: a lookaround past the pattern's start runs again at each position the match"
                           f" reaches; keep it within {MAX_LOOKAROUND} characters")


def _saturated(n: int) -> int:
    return min(n, MAX_TRIES + 1)  # anything past the limit is refused: no need to count on


@dataclass(frozen=True)
class _Part:
    """A piece of the pattern in the automaton: the states that start and end it, each with the number of
    ways it does (Glushkov's first and last sets, counted), the ways it matches no text, and which of its
    states end it with no assertion after them (`clean`)."""

    first: Counter[int]
    last: Counter[int]
    empty: int
    clean_last: frozenset[int]
    clean_empty: bool


_NOTHING = _Part(Counter(), Counter(), 1, frozenset(), True)
_ASSERTION = _Part(Counter(), Counter(), 1, frozenset(), False)  # matches no text, but may fail


def _plus(a: Counter[int], b: Counter[int], times: int = 1) -> Counter[int]:
    """a + times * b, for the ways of a part's first or last states."""
    total = Counter(a)
    if times:
        for state, ways in b.items():
            total[state] = _saturated(total[state] + ways * times)
    return total


class _Automaton:
    """The position automaton of one pattern: state 0 is before its first character."""

    def __init__(self, budget: _Budget, lookahead: bool):
        self.budget = budget
        self.lookahead = lookahead  # a lookahead's body: no unbounded repeat
        self.repeating = 0  # how many repeats (of more than one) the node being built is inside
        self.follow: list[Counter[int]] = [Counter()]  # state -> {next state: ways}
        self.classes: list[tuple[str, int]] = [("", 0)]  # state -> the class it reads: (regex, flags)
        self.distinct: set[tuple[str, int]] = set()  # the classes, each once
        self.named: set[int] = set()  # the characters the classes name (where their kinds change)
        # (body, flags, ahead, anywhere): checked on their own; `anywhere` unless it is met once per attempt,
        # before the pattern reads anything
        self.lookarounds: list[tuple[Any, int, bool, bool]] = []

    # -- building: a part per node of the parse tree
    def sequence(self, items: Any, flags: int) -> _Part:
        part = _NOTHING
        for op, av in items:
            part = self.concat(part, self.node(op, av, flags))
        return part

    def node(self, op: Any, av: Any, flags: int) -> _Part:
        if op in _READS:
            return self.reader(op, av, flags)
        if op == sre.SUBPATTERN:
            _group, add, remove, items = av
            return self.sequence(items, (flags | add) & ~remove)
        if op == sre.ATOMIC_GROUP:  # it backtracks less than a plain group: counted as one, to be safe
            return self.sequence(av, flags)
        if op == sre.BRANCH:
            return self.either([self.sequence(branch, flags) for branch in av[1]])
        if op in _REPEATS:
            return self.repeat(*av, flags)
        if op == sre.AT:
            return _ASSERTION
        if op in (sre.ASSERT, sre.ASSERT_NOT):
            direction, body = av
            self.lookarounds.append((body, flags, direction > 0, self.repeating > 0 or len(self.follow) > 1))
            return _ASSERTION
        if op in (sre.GROUPREF, sre.GROUPREF_EXISTS):
            raise _Refused("refused: backreferences and conditional groups can make matching take exponential"
                           " time; a rule needs neither")
        raise _Refused(f"refused: the check does not know the regex construct {op}")

    def reader(self, op: Any, av: Any, flags: int) -> _Part:
        """A state that reads one character of a class."""
        self.budget.state()
        key = (_class_regex(op, av), flags & _FLAGS)
        self.named.update(_named(op, av))
        if flags & re.IGNORECASE and key not in self.distinct:
            self.named |= self.case_partners(op, av, key)
        self.classes.append(key)
        self.distinct.add(key)
        self.follow.append(Counter())
        state = len(self.follow) - 1
        return _Part(Counter({state: 1}), Counter({state: 1}), 0, frozenset({state}), False)

    def case_partners(self, op: Any, av: Any, key: tuple[str, int]) -> set[int]:
        """The characters a class ignoring case matches, or not, only by their case (Kelvin sign and k)."""
        if op == sre.ANY or (op == sre.LITERAL and not _cased(av)):
            return set()
        if op == sre.LITERAL and av < 0x80:
            return _ascii_partners()
        self.budget.spend(FOLD_STEPS)
        return {v for code in _named(op, av) for v in _variants(code)} | _folded(*key)

    def link(self, last: Counter[int], first: Counter[int]) -> None:
        """Add the ways each state of `last` goes on to each of `first`."""
        self.budget.spend(len(last) * len(first))
        for p, m in last.items():
            follow = self.follow[p]
            for q, n in first.items():
                follow[q] = _saturated(follow[q] + m * n)

    def concat(self, a: _Part, b: _Part) -> _Part:
        self.link(a.last, b.first)
        clean_last = b.clean_last | a.clean_last if b.clean_empty else b.clean_last
        return _Part(_plus(a.first, b.first, a.empty), _plus(b.last, a.last, b.empty), _saturated(a.empty * b.empty),
                     clean_last, a.clean_empty and b.clean_empty)

    def either(self, parts: list[_Part]) -> _Part:
        first, last = Counter[int](), Counter[int]()
        for part in parts:
            first, last = _plus(first, part.first), _plus(last, part.last)
        return _Part(first, last, _saturated(sum(p.empty for p in parts)),
                     frozenset().union(*(p.clean_last for p in parts)), any(p.clean_empty for p in parts))

    def optional(self, part: _Part) -> _Part:
        return _Part(part.first, part.last, _saturated(part.empty + 1), part.clean_last, True)

    def loop(self, part: _Part) -> _Part:
        """One or more of a part. re ends a loop either at once or after one iteration that matched nothing,
        so a part that can match nothing leaves its loop in 1 + empty ways."""
        self.link(part.last, part.first)
        return _Part(part.first, _plus(Counter(), part.last, 1 + part.empty), part.empty, part.clean_last,
                     part.clean_empty)

    def repeat(self, low: int, high: int, body: Any, flags: int) -> _Part:
        """body{low,high}, written out: low copies, then high - low optional ones nested (x(x(x)?)?)?, or a loop."""
        unbounded = high == sre.MAXREPEAT
        if unbounded and self.lookahead:
            raise _Refused("refused: a lookahead that repeats without bound runs again at every position the match"
                           " reaches; give its repeat a bound, e.g. {0,100}")
        self.repeating += high > 1
        try:
            states = len(self.follow)
            made = [self.sequence(body, flags)]  # built first to see whether the body reads anything
            if len(self.follow) == states:  # it reads nothing (an assertion, an empty group): only its ways count
                return self.repeat_nothing(low, high, made[0])

            def copy() -> _Part:
                return made.pop() if made else self.sequence(body, flags)

            part = _NOTHING
            for _ in range(low - 1 if unbounded and low else low):
                part = self.concat(part, copy())
            if unbounded:
                looped = self.loop(copy())
                return self.concat(part, looped) if low else self.optional(looped)
            tail = _NOTHING
            for _ in range(high - low):
                tail = self.optional(self.concat(copy(), tail))
            return self.concat(part, tail)
        finally:
            self.repeating -= high > 1

    def repeat_nothing(self, low: int, high: int, body: _Part) -> _Part:
        """A repeat of a body that reads nothing: re runs each of the low copies (its ways multiply), then
        at most one more, as a loop ends after an iteration that matched nothing."""
        ways = _saturated(body.empty ** min(low, 12))  # 2 ** 12 is past MAX_TRIES
        if high > low:
            ways = _saturated(ways * (1 + body.empty))
        return _Part(Counter(), Counter(), ways, frozenset(), low == 0 or body.clean_empty)

    # -- walking every text
    def walk(self, whole: _Part) -> None:
        """Raise _Refused when some text can be matched in more than MAX_WAYS ways, or more than MAX_TRIES
        are tried at one character."""
        self.follow[0] = Counter(whole.first)
        done = whole.clean_last  # a way that gets here is a match
        tries = [sum(f.values()) + (0 if s in done else whole.last[s]) for s, f in enumerate(self.follow)]
        tries[0] += 0 if whole.clean_empty else whole.empty  # each way to the end is tried, and may fail
        reads = self.symbols()
        starts = [0] + [s for s in sorted(done) if any(q not in done for q in self.follow[s])]
        seen: set[tuple[tuple[int, int], ...]] = set()
        todo = [((s, 1),) for s in starts]
        while todo:
            ways = todo.pop()
            if sum(n * tries[p] for p, n in ways) > MAX_TRIES:
                raise _Refused(_TOO_MANY_TRIES)
            for step in self.steps(ways, done, reads):
                if sum(n for _, n in step) > MAX_WAYS:
                    raise _Refused(_TOO_MANY_WAYS)
                if step not in seen:
                    seen.add(step)
                    todo.append(step)

    def steps(self, ways: tuple[tuple[int, int], ...], done: frozenset[int],
              reads: list[list[int]]) -> list[tuple[tuple[int, int], ...]]:
        """The ways that go on, for each class of characters that can come next (ways that match dropped)."""
        targets: Counter[int] = Counter()
        for p, n in ways:
            for q, m in self.follow[p].items():
                if q not in done:
                    targets[q] = _saturated(targets[q] + n * m)
        self.budget.spend(len(ways) + sum(len(reads[q]) for q in targets))
        by_symbol: dict[int, list[tuple[int, int]]] = {}
        for q, n in sorted(targets.items()):
            for symbol in reads[q]:
                by_symbol.setdefault(symbol, []).append((q, n))
        return [tuple(step) for step in by_symbol.values()]

    def symbols(self) -> list[list[int]]:
        """For each state, the classes of characters it reads, as numbers: two characters are one class
        when every state reads both or neither."""
        probes = _probes(self.named)
        self.budget.spend(len(probes) * len(self.distinct))
        matches = {key: [m.start() for m in re.compile(*key).finditer(probes)] for key in self.distinct}
        signature: list[list[tuple[str, int]]] = [[] for _ in probes]
        for key, hits in matches.items():
            for i in hits:
                signature[i].append(key)
        symbol_of: dict[tuple, int] = {}
        by_class: dict[tuple[str, int], set[int]] = {key: set() for key in matches}
        for keys in signature:
            symbol = symbol_of.setdefault(tuple(sorted(keys)), len(symbol_of))
            for key in keys:
                by_class[key].add(symbol)
        return [[]] + [sorted(by_class[key]) for key in self.classes[1:]]


def _class_regex(op: Any, av: Any) -> str:
    """The regex of the one character a LITERAL, NOT_LITERAL, ANY or IN node reads."""
    if op == sre.LITERAL:
        return re.escape(chr(av))
    if op == sre.NOT_LITERAL:
        return f"[^{re.escape(chr(av))}]"
    if op == sre.ANY:
        return "."
    negate, parts = "", []
    for item, value in av:
        if item == sre.NEGATE:
            negate = "^"
        elif item == sre.LITERAL:
            parts.append(re.escape(chr(value)))
        elif item == sre.RANGE:
            parts.append(f"{re.escape(chr(value[0]))}-{re.escape(chr(value[1]))}")
        elif item == sre.CATEGORY and value in _CATEGORIES:
            parts.append(_CATEGORIES[value])
        else:
            raise _Refused(f"refused: the check does not know the class item {item} {value}")
    return f"[{negate}{''.join(parts)}]"


def _named(op: Any, av: Any) -> list[int]:
    """The characters a node names (a range by its ends): where what its class matches can change."""
    if op in (sre.LITERAL, sre.NOT_LITERAL):
        return [av]
    if op != sre.IN:
        return []
    return [code for item, value in av if item in (sre.LITERAL, sre.RANGE)
            for code in (value if item == sre.RANGE else (value,))]


def _probes(named: set[int]) -> str:
    """Characters enough to tell a pattern's classes apart: all of ASCII, and past it the first character
    of each kind between two characters where what a class matches may change (those it names)."""
    edges = sorted({0x80, 0x110000} | {b for code in named for b in (code, code + 1) if 0x80 < b < 0x110000})
    found = list(range(0x80))
    for start, end in zip(edges, edges[1:]):
        found += _first_of_each_kind(start, end)
    return "".join(map(chr, found))


def _cased(code: int) -> bool:
    c = chr(code)
    return c.lower() != c or c.upper() != c


def _variants(code: int) -> set[int]:
    c = chr(code)
    return {code} | {ord(v) for v in (c.lower(), c.upper(), c.title(), c.swapcase()) if len(v) == 1}


@functools.lru_cache(maxsize=1)
def _ascii_partners() -> set[int]:
    """The characters past ASCII that an ASCII letter ignoring case matches: the Kelvin sign, long s, …"""
    return {0x80 + m.start() for m in re.finditer("(?i)[a-z]", _characters(0x80, 0x10000))}


@functools.lru_cache(maxsize=256)
def _folded(source: str, flags: int) -> frozenset[int]:
    """The characters past ASCII in the BMP that a class ignoring case matches and the same class minding
    case does not, or the reverse."""
    differ = f"(?i:{source})(?<!(?-i:{source}))|(?-i:{source})(?<!(?i:{source}))"
    return frozenset(0x80 + m.start() for m in re.finditer(differ, _characters(0x80, 0x10000), flags & ~re.IGNORECASE))


_LAST_SPACE = 0x3000  # no character past U+3000 is whitespace (tests/test_userregex.py holds this to str.isspace)


@functools.lru_cache(maxsize=4096)
def _first_of_each_kind(start: int, end: int) -> tuple[int, ...]:
    """The first digit, letter, space and other character in [start, end), of those there are."""
    found = []
    for kind in _KINDS:
        stop = min(end, _LAST_SPACE + 1) if kind is _SPACE else end
        at = start
        while at < stop:
            chunk_end = min(stop, at + 8192)
            hit = kind.search(_characters(at, chunk_end))
            if hit:
                found.append(at + hit.start())
                break
            at = chunk_end
    return tuple(sorted(found))


@functools.lru_cache(maxsize=4)
def _characters(start: int, end: int) -> str:
    """The characters start..end-1 (surrogates too: a regex reads them like any other)."""
    return array.array("I", range(start, end)).tobytes().decode(f"utf-32-{sys.byteorder[0]}e", "surrogatepass")
