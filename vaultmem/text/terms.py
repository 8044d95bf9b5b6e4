"""Normalisation, index terms and fingerprints: pure functions, versioned by TOKENIZER_VERSION.

Terms are Latin/digit words (lightly stemmed; compound ids kept whole and in parts) and character
bigrams/trigrams of CJK runs, so Chinese text and codes match without a segmenter.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable, Iterable
from functools import lru_cache, partial
from itertools import chain
from operator import add
from typing import Any

from ..errors import InvalidValue

__all__ = [
    "FULL_WIDTH",
    "STOPWORDS",
    "TOKENIZER_VERSION",
    "WIKILINK",
    "char_ngrams",
    "fingerprint",
    "normalize",
    "normalize_tag",
    "query_terms",
    "shown_text",
    "stem",
    "terms",
]

TOKENIZER_VERSION: int = 3
"""Bump on any change of terms() or records.index_terms() output: a stored index with another
version is rebuilt (3: the question marker term)."""

_ENGLISH_STOPWORDS = """
a an the this that these those some any each every all both either neither no none other
another such own same one ones
i me my mine myself we us our ours ourselves you your yours yourself yourselves
he him his himself she her hers herself it its itself they them their theirs themselves
what when where who whom whose which why how whatever whoever whichever
be am is are was were been being have has had having do does did doing done
can could might must shall should will would ought
not nor don doesn didn isn aren wasn weren hasn haven hadn wouldn couldn shouldn mustn ll ve re
about above across after against along among amongst around at before behind below beneath
beside besides between beyond by down during except for from in inside into near of off on onto
out outside over past per since through throughout till to toward towards under until up upon
via with within without
and but or if because as while whilst though although unless whether so than then yet
also just very too only again ever even here there now still already really quite rather
almost else more most less least much many few several lot lots thus hence therefore however
etc eg ie yes oh ok okay
"""
_CJK_STOPWORDS = """
的 地 得 了 着 过 是 在 和 与 及 或 也 就 都 而 且 但 又 还 吗 呢 吧 啊 呀 哦 嗯 么
我 你 您 他 她 它 们 这 那 哪 谁 啥 有 个 把 被 给 对 从 向 于 以 之 其 为 所 会 要 能 可
让 很 太 更 最 不 没 别 等 该 此 各 每
の は が を に で と も へ や か ね よ
"""
STOPWORDS: frozenset[str] = frozenset((_ENGLISH_STOPWORDS + _CJK_STOPWORDS).split())
"""English words dropped as terms; CJK characters dropped only when they stand alone.

"may" is not one: the month ("May 2022") outweighs the modal verb.
"""

class LazyPattern:
    """A regex compiled on first use: a one-off `remember` runs few of the write pipeline's rules,
    and compiling them all costs more (~0.1 s here) than the rest of it.

    The first use binds the compiled pattern's methods into the slots below: from then on a call
    such as `.search(...)` costs what it costs on the pattern itself.
    """

    __slots__ = ("_args", "findall", "finditer", "flags", "fullmatch", "groupindex", "groups", "match", "pattern",
                 "search", "split", "sub", "subn")

    def __init__(self, *args: Any):
        self._args = args

    def __getattr__(self, name: str) -> Any:  # only reached while a slot is empty: before first use
        if name.startswith("__"):
            raise AttributeError(name)
        compiled = re.compile(*self._args)
        for slot in LazyPattern.__slots__[1:]:
            setattr(self, slot, getattr(compiled, slot))
        return getattr(compiled, name)

    def __reduce__(self) -> tuple:
        return LazyPattern, self._args  # a worker process compiles it again on first use


# Han (with 々〆〇), kana (without the ・ separator), Hangul; \w covers every other script.
_CJK = (
    "\u1100-\u11ff\u2e80-\u2fdf\u3005-\u3007\u3040-\u309f\u30a0-\u30fa\u30fc-\u30ff"
    "\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff"
    "\uf900-\ufaff\U00020000-\U0003ffff"
)
_CJK_RUN = LazyPattern(f"([{_CJK}]+)")
# A word may hold '-' or '.' between word characters: ids, dates and hostnames also stay whole.
_WORD = re.compile(r"\w+(?:[-.]\w+)*")
_JOINERS = re.compile(r"[-._]+")
# Hyphenated letters (dairy-free) count as their parts only, not also whole: the compound then
# weighs no more than its words would. Ids, codes and hostnames (CT2024-0876, ERR_4031,
# api.example.com) and words with a one-letter part (x-ray) are also kept whole.
_PLAIN_COMPOUND = LazyPattern(r"[^\W\d_]{2,}(?:-[^\W\d_]{2,})+")
# Common full-width punctuation in Chinese text; replacing it first spares a full NFKC pass (here and
# in the linker's folding, links.py).
FULL_WIDTH = {c: unicodedata.normalize("NFKC", c) for c in "，：；！？（）～\u3000"}

# [[target#heading|alias]]: the groups are target, heading and alias
# no '[' inside a link (Obsidian allows none in a name): with one, a run of 100,000 '[' cost minutes, each
# position scanning to the end for a ']'
WIKILINK = re.compile(r"\[\[([^\[\]|#]*)(?:#([^\[\]|]*))?(?:\|([^\[\]]*))?\]\]")
_LINE_MARKERS = LazyPattern(r"\n[ \t]*(?:(?:#{1,6}|[-*+]|\d+[.)]|>)[ \t]+(?:\[.\][ \t]+)?)+")
# Emphasis markers touch a word on one side only; '_' inside ERR_4031 or snake_case is content.
_EMPHASIS = re.compile(r"(?<!\w)[*_]+|[*_]+(?!\w)")

_VOWELS = "aeiou"
# Consonant-vowel-consonant stem with one vowel: its silent 'e' is kept (hope, make, note).
_SHORT_STEM = re.compile(r"^[^aeiou]*[^aeiou][aeiou][^aeiouwxy]$")
_IRREGULAR_BASES = {
    "meet": "met", "pay": "paid", "say": "said", "make": "made", "send": "sent",
    "spend": "spent", "buy": "bought", "bring": "brought", "think": "thought",
    "teach": "taught", "tell": "told", "sell": "sold", "feel": "felt", "keep": "kept",
    "build": "built", "write": "wrote written", "choose": "chose chosen",
    "give": "gave given", "take": "took taken", "run": "ran", "begin": "began begun",
    "get": "got gotten", "go": "goes going went gone", "use": "used using",
    "child": "children", "man": "men", "woman": "women", "person": "people", "foot": "feet",
    "tooth": "teeth",
}
_IRREGULAR: dict[str, str] = {}  # form -> stem of its base; filled once stem() exists
_FUL = re.compile(r"([a-z]{3,})ful")
# Derivational endings, dropped in turn when enough of the root is left (station, organ and real
# stay): -ation/-ction/-ssion lose -ion, -ate its -at (collaboration -> collabor), -ize its -iz.
_DERIVATIONS = tuple(
    map(re.compile, (r"([a-z]{3,}(?:at|ct)|[a-z]{4,}ss)ion", r"([a-z]{5,})at", r"([a-z]{6,})iz"))
)


def normalize(text: str) -> str:
    """Return text in NFKC, case-folded: full-width forms, ligatures and case no longer matter."""
    folded = _nfkc(text).casefold()
    # Folding can leave combining marks out of canonical order (İ + ゙); one more pass settles them.
    return _nfkc(folded)


def normalize_tag(tag: str) -> str:
    """Return a tag's comparable form: '#Client_Zhangsan' and 'client_zhangsan' are equal."""
    return normalize(tag).strip().lstrip("#")


def terms(text: str) -> list[str]:
    """Return the index terms of a document, repeated as often as they occur.

    Word terms come first, then CJK n-grams: the list is a bag, not in text order.
    """
    return _terms(normalize(text), _index_chunk_terms)


def query_terms(text: str) -> list[str]:
    """Return a query's distinct terms, in the order terms() would list them.

    A query made only of stopwords ("what is it") keeps them, so it still has something to match.
    """
    norm = normalize(text)
    found = _terms(norm, _index_chunk_terms)
    found = found or _terms(norm, partial(_chunk_terms, keep_stopwords=True))
    return list(dict.fromkeys(found))


def unstemmed(text: str) -> dict[str, list[str]]:
    """Each stemmed query term of a text's words and the words as written that it came from, where
    they differ ({"bill": ["billing"]}): a tag is matched as written, so `billing` finds #billing."""
    out: dict[str, list[str]] = {}
    for word in _WORD.findall(normalize(text)):
        word = word.strip("-._")
        stemmed = stem(word)
        if stemmed != word and word not in out.setdefault(stemmed, []):
            out[stemmed].append(word)
    return out


def char_ngrams(s: str, n: int) -> list[str]:
    """Return every length-n substring of s in order; a non-empty s shorter than n yields itself."""
    if n < 1:
        raise InvalidValue(f"n-gram length must be at least 1, got {n}")
    if len(s) < n:
        return [s] if s else []
    # Adding shifted copies with map() builds the n-grams in C, faster than slicing in a loop.
    grams: Iterable[str] = s
    for shift in range(1, n):
        grams = map(add, grams, s[shift:])
    return list(grams)


def plain_text(text: str) -> str:
    """Return a note's content as compared for duplicates: normalised, wikilinks reduced to their
    shown text, list/heading/quote markers and */_ emphasis dropped, whitespace collapsed."""
    plain = WIKILINK.sub(_link_text, normalize(text).replace("![[", "[["))
    plain = _LINE_MARKERS.sub("\n", "\n" + plain)  # the leading newline lets line 1 match too
    if "*" in plain or "_" in plain:
        plain = _EMPHASIS.sub("", plain)
    return " ".join(plain.split())


def shown_text(text: str) -> str:
    """Return a note's content as a reader sees it on one line: wikilinks reduced to their shown
    text, whitespace collapsed, case and width kept (for prompts and answers, not for matching)."""
    return " ".join(WIKILINK.sub(_link_text, text.replace("![[", "[[")).split())


def fingerprint(text: str) -> str:
    """Return 32 hex chars identifying a note's content regardless of links, emphasis and spacing
    (the hash of plain_text), so a memory rewritten with links has one print."""
    return digest(plain_text(text))


def digest(plain: str) -> str:
    """fingerprint() of a text whose plain_text is at hand (the write pipeline's twice-used form)."""
    return hashlib.sha256(plain.encode("utf-8", "surrogatepass")).hexdigest()[:32]


@lru_cache(maxsize=1 << 15)
def stem(word: str) -> str:
    """Return a light English stem of a lower-case word, folding inflections onto one form.

    Only ASCII-letter words of three or more letters change, and never below three letters:
    plurals and -ies, -ed/-ied, -ing, -ly (not -bly/-ply/-fly/-ily/-aly/-oly), a silent final 'e',
    consonant+y as 'i', and a short table of irregular forms (met -> meet, ran -> run); then the
    derivational endings -ful, -ion, -ate and -ize (helpful -> help, frustration -> frustr).
    """
    if len(word) < 3 or not (word.isascii() and word.isalpha()):
        return word
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    return _derive(_finish(*_strip_suffix(_strip_plural(word))))


def _nfkc(text: str) -> str:
    """Return text in NFKC, quickly when only full-width punctuation needs replacing."""
    if not unicodedata.is_normalized("NFKC", text):
        for wide, narrow in FULL_WIDTH.items():
            text = text.replace(wide, narrow)
        if not unicodedata.is_normalized("NFKC", text):
            text = unicodedata.normalize("NFKC", text)
    return text


def _terms(norm: str, chunk_terms: Callable[[str], Iterable[str]]) -> list[str]:
    """Return the terms of normalised text: word chunks through chunk_terms, then CJK n-grams."""
    parts = [norm] if norm.isascii() or max(norm) < _CJK[0] else _CJK_RUN.split(norm)
    # Even parts are the text between CJK runs, odd parts the runs; map() keeps the loops in C.
    found = list(chain.from_iterable(map(chunk_terms, " ".join(parts[::2]).split())))
    found.extend(chain.from_iterable(map(_cjk_terms, parts[1::2])))
    return found


def _chunk_terms(chunk: str, keep_stopwords: bool = False) -> tuple[str, ...]:
    """Return the terms of the words in one whitespace-free chunk of non-CJK text."""
    return tuple(chain.from_iterable(_word_terms(w, keep_stopwords) for w in _WORD.findall(chunk)))


# Most chunks ("deadline", "meeting.") recur from note to note, so indexing mostly hits this cache.
_index_chunk_terms = lru_cache(maxsize=1 << 15)(_chunk_terms)


def _word_terms(word: str, keep_stopwords: bool) -> tuple[str, ...]:
    """Return the terms of one word: its stem, or a compound in parts and, if an id, whole."""
    word = word.strip("-._")
    parts = _JOINERS.split(word)
    if len(parts) == 1:
        return _simple_terms(word, keep_stopwords)
    found = [word] if _PLAIN_COMPOUND.fullmatch(word) is None else []
    for part in parts:
        found.extend(_simple_terms(part, keep_stopwords))
    return tuple(found)


def _simple_terms(word: str, keep_stopwords: bool) -> tuple[str, ...]:
    """Return () for a dropped word (stopword, lone letter), else its stem."""
    if (len(word) < 2 and not word.isdigit()) or (word in STOPWORDS and not keep_stopwords):
        return ()
    return (stem(word),)


def _cjk_terms(run: str) -> list[str]:
    """Return a CJK run's bigrams then trigrams; a shorter run is one term unless a stopword."""
    if len(run) < 3:
        return [] if run in STOPWORDS else [run]
    bigrams = char_ngrams(run, 2)
    return bigrams + list(map(add, bigrams, run[2:]))  # each trigram extends a bigram


def _link_text(match: re.Match[str]) -> str:
    """Return what a wikilink shows: its alias, else its target, else its heading."""
    target, heading, alias = match.groups()
    return alias if alias is not None else (target or heading or "")


def _strip_plural(word: str) -> str:
    """Return word without a plural/third-person -s (parties -> parti, boxes -> boxe, skis -> ski).

    Words in -ss, -us and -sis (class, bus, analysis) are singular.
    """
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "i"
    if word.endswith("s") and not word.endswith(("ss", "us", "sis")) and len(word) > 3:
        return word[:-1]
    return word


def _strip_suffix(word: str) -> tuple[str, bool]:
    """Return word without one of -ied/-eed/-ed/-ing/-ly, and whether -ed/-ing went."""
    if word.endswith("ied") and len(word) > 4:
        return word[:-3] + "i", False
    if word.endswith("eed"):
        # agreed -> agree, but speed and need are words of their own.
        return (word[:-1] if len(word) > 5 else word), False
    for suffix in ("ed", "ing"):
        rest = word[: -len(suffix)]
        if word.endswith(suffix) and len(rest) >= 3 and any(v in rest for v in "aeiouy"):
            return rest, True
    rest = word[:-2]
    if word.endswith("ly") and len(rest) >= 4 and rest[-1] not in "aioubpfy":
        return rest, False
    return word, False


def _finish(word: str, lost_ending: bool) -> str:
    """Return word with a doubled consonant undone, its silent 'e' settled and consonant+y as i."""
    if lost_ending:
        if word[-1] == word[-2] and word[-1] not in _VOWELS + "lsfz" and len(word) > 3:
            return word[:-1]  # running -> run, planned -> plan
        if _SHORT_STEM.match(word):
            return word + "e"  # making -> make, hoped -> hope
    silent_e = word.endswith("e") and word[-2] != "e" and len(word) > 3
    if silent_e and not _SHORT_STEM.match(word[:-1]):
        return word[:-1]  # create/created -> creat, deadline -> deadlin
    if word.endswith("y") and word[-2] not in _VOWELS:
        return word[:-1] + "i"  # party/parties -> parti
    return word


def _derive(word: str) -> str:
    """Return an inflection-free stem without its derivational endings (-ful, -ion, -ate, -ize)."""
    if match := _FUL.fullmatch(word):
        return stem(match[1])  # helpful -> help, peaceful -> peac (as peace)
    for pattern in _DERIVATIONS:
        if match := pattern.fullmatch(word):
            word = match[1]
    return word


def _irregular_table() -> dict[str, str]:
    """Map each irregular form to the stem of its base word."""
    return {
        form: stem(base)
        for base, forms in _IRREGULAR_BASES.items()
        for form in forms.split()
    }


_IRREGULAR.update(_irregular_table())
