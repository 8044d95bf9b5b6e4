"""The write policy, step 1 of every write: secrets out, blocked tags refused, trust from the source.

Pure: text in, cleaned text out. Nothing here touches disk, so a secret is gone before the note,
the index or a log could see it. A Finding names the kind of secret, never the secret itself.

Every field a write accepts passes the policy, one of two ways. Free text (the body, a title, a
value) is cleaned: its secrets are redacted or hashed and the rest is kept. An identifier (a tag,
source, type, namespace, episode, lifecycle, supersedes reference, entity name or alias) is never
cleaned: "ops-***" would be a nonsense tag or namespace that still groups notes, and a hash would
keep a guessable secret in the file name, the links and the index. A secret in one refuses the whole
write (a batch before any note, entity notes included), and the error names the field, never the value.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import date
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, PolicyViolation
from ..text.terms import LazyPattern, normalize, normalize_tag

if TYPE_CHECKING:
    from ..settings import PolicySettings
    from ..store.store import Store

__all__ = ["DETECTORS", "IDENTIFIER_FIELDS", "Finding", "Policy"]

# the single-valued fields of a write that name or group notes (with tags and entity names, lists)
IDENTIFIER_FIELDS = ("source", "type", "namespace", "episode", "lifecycle", "supersedes")
_ACTIONS = ("redact", "hash")
_REDACTED = "***"


@dataclass(frozen=True)
class Finding:
    """One secret that clean() replaced: its kind and the action taken, never the secret itself."""

    kind: str
    action: str


def _accept(m: re.Match[str]) -> bool:
    return True


@dataclass(frozen=True)
class _Rule:
    """A regex whose `secret` group (or whole match) is a secret when `valid` agrees.

    trigger names the group of the cheap pre-filter that must fire before the rule runs;
    None (user rules) means always run. action None means the policy's action.
    """

    kind: str
    regex: re.Pattern[str]
    trigger: str | None
    valid: Callable[[re.Match[str]], bool] = _accept
    action: str | None = None


# A value stops at whitespace and at CJK text or punctuation ("密码是abc123，明天改" keeps "，明天改");
# its last character is not sentence punctuation, so "password: hunter2." keeps the full stop.
_STOP = r"\s\u3000-\u303f\u3400-\u9fff\uff00-\uffef"
_BARE = "[^" + _STOP + "]*[^" + _STOP + r""".,;:)\]}>'"]"""
_QUOTED = r""""[^"\n]+"|'[^'\n]+'|“[^”\n]+”|「[^」\n]+」"""
_VALUE = "(?P<secret>" + _QUOTED + "|" + _BARE + ")"
_QUOTES = {'"': '"', "'": "'", "“": "”", "「": "」"}
# A value that starts with a replacement ("Password=***;Database=x" the second time) is clean;
# "***hunter2***" (Markdown bold italics) is not, and is replaced whole.
_ALREADY_CLEAN = LazyPattern(r"(?:\*\*\*|sha256:[0-9a-f]{64})(?![0-9A-Za-z])")

_PASSWORD_EN = LazyPattern(
    r"(?<![a-z])(?:pass(?:word|wd|code|phrase)s?|pwd?)(?![a-z])"
    # "the password for the router is …": up to three words naming what it opens
    r"(?:\s+(?:for|of|to|on|at|in)(?:\s+[^\s:=,.;]{1,40}){1,3}?)?"
    r"""["']?(?P<sep>\s*(?:[:=：]|=>)\s*|\s+(?:is|was|are|were)(?:\s*[:：])?\s+)""" + _VALUE,
    re.IGNORECASE,
)
_PASSWORD_ZH = LazyPattern(
    r"(?:密码|密碼|口令|pin码)(?P<sep>\s*(?:是|为|為|改成了?|改为|改為|设为|设置为|設為|[:：=])\s*|\s+)?" + _VALUE,
    re.IGNORECASE,
)
# "PIN" is also an English word ("pin the issue"): only digits after it are a PIN
_PIN = LazyPattern(
    r"(?<![a-z])pin(?P<code>\s*code)?(?P<sep>\s*[:=：]\s*|\s+(?:is|was)(?:\s*[:：])?\s+|\s+)(?P<secret>\d{4,12})"
    r"(?![\da-z])",
    re.IGNORECASE,
)
_KNOWN_KEY = LazyPattern(  # formats issued by providers: the prefix says what it is, so case matters
    # (after '-' or '_' too: "ops-AKIA…", "ci_ghp_…" are keys pasted into an identifier)
    r"(?<![A-Za-z0-9])(?:sk-[A-Za-z0-9_-]{20,}|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|xox[abeoprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35})(?![A-Za-z0-9_-])"
)
_GENERIC_KEY_NAMES = {"token", "secret", "令牌"}
_KEY_ASSIGNMENT = LazyPattern(
    r"(?P<key>(?<![a-z0-9])(?:api[_-]?(?:key|secret)|apikey|access[_-]?key(?:[_-]?id)?"
    r"|secret[_-]?(?:access[_-]?)?key|(?:client|app)[_-]?secret|(?:auth|access|refresh|private|api|bot)[_-]?token"
    r"|token|secret)(?![a-z0-9])|密钥|秘钥|令牌)"
    r"""["']?\s*(?:[:=：]|=>|是|为|為)\s*""" + _VALUE,
    re.IGNORECASE,
)
_BEARER = LazyPattern(r"(?<![a-z])bearer\s+(?P<secret>[a-z0-9._~+/-]+=*)", re.IGNORECASE)
_AUTH_HEADER = LazyPattern(
    r"(?<![a-z])(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?"
    r"(?:(?P<scheme>basic|bearer|token|negotiate|ntlm)\s+)?(?P<secret>[^" + _STOP + "\"',;]+)",
    re.IGNORECASE,
)
_JWT = LazyPattern(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*")
_PRIVATE_KEY = LazyPattern(  # an unterminated block (a truncated paste) is a secret up to the end
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----|.*)",
    re.DOTALL,
)
# scheme://user:pass@host — the password ends at the last '@' before the path, query or fragment.
_URL_CREDENTIALS = LazyPattern(
    r"(?<![a-z0-9+.-])[a-z][a-z0-9+.-]{1,30}://[^\s:/@?#]*:(?P<secret>[^\s/?#]+)@", re.IGNORECASE
)
# ADO / ODBC: "…;Password=p@ss w0rd;…" — the value runs to ';' and may hold spaces.
_ADO_FIELD = LazyPattern(r";\s*(?:password|pwd)\s*=\s*(?P<secret>" + _QUOTED + r"|[^;\r\n]*[^;\s])", re.IGNORECASE)
_ADO_LEADING = LazyPattern(
    r"(?<![a-z])(?:password|pwd)\s*=\s*(?P<secret>" + _QUOTED + r"|[^;\r\n]*[^;\s])\s*;", re.IGNORECASE
)
_ID_CARD = LazyPattern(  # 6-digit region, birth date YYYYMMDD, 3-digit sequence, check character
    r"(?<![\dA-Za-z])[1-9]\d{5} ?(?:18|19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01]) ?\d{3}[\dXxＸｘ]"
    r"(?![\dA-Za-z])"
)
# Card numbers start 3-6 or 22-27 (Mastercard's 2-series): this spares millisecond timestamps
# (1…), compact datetimes (2024…) and phone numbers (+86 1…), which Luhn alone lets through 1 in 10.
_BANK_CARD = LazyPattern(
    r"(?<![\dA-Za-z_+.-])(?=[3-6]|2[2-7])(?:\d{13,19}"
    r"|\d{4}(?P<sep>[ -])\d{4}(?P=sep)\d{4}(?P=sep)\d{1,4}(?:(?P=sep)\d{1,3})?"  # 4-4-4-4(-3)
    r"|3\d{3}(?P<amex>[ -])\d{6}(?P=amex)\d{4,5})"  # American Express 4-6-5, Diners 4-6-4
    r"(?![\dA-Za-z_]|[.-]\d)"
)
# Cheap pre-filters decide which detectors can match at all: most texts hold none of these words
# and no long digit run. They search the lowercased text without IGNORECASE, which lets the regex
# engine skip ahead by first character (about 10x faster on this CPython).
_KEY_SEPARATOR = r"""["']?\s*(?:[:=：]|是|为|為)"""
_PASSWORD_WORDS = ("密码", "密碼", "口令", "pin码", "pass(?:word|wd|code|phrase)", "pw",
                   r"pin(?:\s*code)?(?:\s+(?:is|was))?\s*[:=\uff1a\d]")
_TRIGGER_WORDS = {
    "password": "|".join(_PASSWORD_WORDS),
    # a provider's prefix, or a key name's last word before its ':'/'=' ("token of appreciation" is prose)
    "api_key": r"sk[-_]|rk_|gh[pousr]_|github_pat|akia|asia|xox|aiza"
    r"|(?:key|id|token|secret|密钥|秘钥|令牌)" + _KEY_SEPARATOR,
    "private_key": r"-----begin",
    "bearer_token": r"bearer|authorization|eyj",
    "connection_string": r"://",
}
_TRIGGERS = {name: LazyPattern(words) for name, words in _TRIGGER_WORDS.items()}
# The check before the triggers: every trigger word holds one of these anchors, the word cut to start
# at a letter rare in prose (secret → "cret", akia → "kia", aiza and authorization → "za"). The engine
# then stops only at those letters, provided every alternative starts with a plain character (hence
# the separator repeated per key name): a third of the cost of a search for the trigger words.
# "asia" and "id:" hold no rare letter; as literal prefixes they are found as fast, each on its own.
_RARE_ANCHORS = LazyPattern("|".join([
    _TRIGGER_WORDS["password"],
    r"k[-_]|gh[pousr]_|github_pat|kia|xox|za",
    *(name + _KEY_SEPARATOR for name in ("key", "ken", "cret", "密钥", "秘钥", "令牌")),
    r"begin|bearer|yj",
    _TRIGGER_WORDS["connection_string"],
]))
# The same for ASCII text, which cannot hold the other alternatives: a one-off `remember` of
# English text compiles this one only (the Chinese words cost ~2 ms to compile).
_RARE_ANCHORS_ASCII = LazyPattern("|".join([
    *(word for word in _PASSWORD_WORDS if word.isascii()),
    r"k[-_]|gh[pousr]_|github_pat|kia|xox|za",
    *(name + r"""["']?\s*[:=]""" for name in ("key", "ken", "cret")),  # _KEY_SEPARATOR's ASCII part
    r"begin|bearer|yj",
    _TRIGGER_WORDS["connection_string"],
]))
# What prose puts after "the password is/was": little words, and words ending as adjectives and
# participles do (up to 14 letters: "correcthorsebatterystaple" is no dictionary word)
_PROSE_AFTER_IS = frozenset("""
    a an the this that these those my your his her its our their one no not never now still also just only
    always usually often sometimes already too very so quite really probably being be same different here
    there where what which who how why when if in on at for to of from with by under behind inside outside
    written somewhere nowhere anywhere everywhere gone ok okay fine good bad wrong right correct incorrect
    invalid valid weak strong short long simple complex easy hard safe unsafe secure insecure new old empty
    blank missing unknown known public private secret hidden visible true false case longer shorter stronger
    weaker better worse enough due set reset ready done up down out off back over alive dead available
    different sufficient insufficient present absent important irrelevant relevant consistent redundant
    constant current urgent apparent evident permanent transparent normal personal global local final fatal
    trivial minimal special essential universal
""".split())
_PROSE_ENDINGS = ("ed", "ing", "ly", "able", "ible", "ive", "ous", "ful", "less", "ary", "ory", "ical", "ional")
_ID_KEY = LazyPattern("id" + _KEY_SEPARATOR)
_LONG_NUMBER = LazyPattern(r"\d[\d -]{12}")  # room for a 13-digit card or an 18-digit id number
_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10X98765432"


def _looks_random(value: str) -> bool:
    """Tell a token from a word: long enough and holding a digit, or long and mixed-case."""
    if len(value) < 8:
        return False
    has_digit = any(c.isdigit() for c in value)
    return has_digit or (len(value) >= 16 and not value.islower() and not value.isupper())


def _password_en_ok(m: re.Match[str]) -> bool:
    """After "is"/"was" a plain word is a password ("my password is swordfish") unless prose goes on
    with it: a little word, or one shaped like an adjective or participle ("the password is required")."""
    value = m.group("secret")
    if any(c in m.group("sep") for c in ":=：") or value[0] in _QUOTES:
        return True
    plain_word = value.isalpha() and (len(value) == 1 or value[1:].islower())
    return not (plain_word and _is_prose(value.lower()))


def _is_prose(word: str) -> bool:
    return word in _PROSE_AFTER_IS or (len(word) <= 14 and word.endswith(_PROSE_ENDINGS))


def _pin_ok(m: re.Match[str]) -> bool:
    """"PIN 1234" could be a year after a pin ("pin 2024 roadmap"): a bare space only after "PIN code"."""
    return m.group("code") is not None or bool(m.group("sep").strip())


def _password_zh_ok(m: re.Match[str]) -> bool:
    """Without 是/为/':' the value must be long enough: "密码8位以上" names a length, not a password; after a
    bare space it must also hold a digit or a sign ("密码 88888888abc", not "密码 reset 了")."""
    sep, value = m.group("sep"), m.group("secret")
    if sep is None:
        return len(value) >= 4
    if not sep.strip():
        return len(value) >= 4 and not value.isalpha()
    return True


def _key_assignment_ok(m: re.Match[str]) -> bool:
    """A named key ("api_key: …") takes any value; a bare "token:"/"secret:" only a token-like one."""
    if m.group("key").lower() in _GENERIC_KEY_NAMES:
        return _looks_random(m.group("secret").strip("\"'“”「」"))
    return len(m.group("secret")) >= 4


def _auth_header_ok(m: re.Match[str]) -> bool:
    """With a scheme (Basic, Bearer …) the credential is certain; without one it must look like a token."""
    return m.group("scheme") is not None or _looks_random(m.group("secret"))


def _bearer_ok(m: re.Match[str]) -> bool:
    """"Bearer" is also an English word ("bearer of bad news"): only a token-like value counts."""
    return _looks_random(m.group("secret"))


def _id_card_ok(m: re.Match[str]) -> bool:
    """Check an 18-character Chinese id number: ISO 7064 mod 11-2 check character and a real birth date."""
    chars = m.group().replace(" ", "")
    digits = [int(c) for c in chars[:17]]
    check = _ID_CHECK[sum(d * w for d, w in zip(digits, _ID_WEIGHTS)) % 11]
    if chars[17].upper().replace("Ｘ", "X") != check:
        return False
    try:
        born = date(int(chars[6:10]), int(chars[10:12]), int(chars[12:14]))
    except ValueError:
        return False
    return 1900 <= born.year and born <= date.today()


def _luhn_ok(digits: str) -> bool:
    """Return whether a digit string passes the Luhn check that every payment card number carries."""
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = int(c) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def _bank_card_ok(m: re.Match[str]) -> bool:
    """A card number has 13–19 digits and a valid Luhn check digit."""
    digits = re.sub(r"[ -]", "", m.group())
    return 13 <= len(digits) <= 19 and _luhn_ok(digits)


_BUILT_IN: tuple[_Rule, ...] = (  # on an identical span the earlier rule names the kind
    _Rule("private_key", _PRIVATE_KEY, "private_key"),
    _Rule("connection_string", _URL_CREDENTIALS, "connection_string"),
    _Rule("connection_string", _ADO_FIELD, "password"),
    _Rule("connection_string", _ADO_LEADING, "password"),
    _Rule("bearer_token", _BEARER, "bearer_token", _bearer_ok),
    _Rule("bearer_token", _AUTH_HEADER, "bearer_token", _auth_header_ok),
    _Rule("bearer_token", _JWT, "bearer_token"),
    _Rule("api_key", _KNOWN_KEY, "api_key"),
    _Rule("api_key", _KEY_ASSIGNMENT, "api_key", _key_assignment_ok),
    _Rule("password", _PASSWORD_EN, "password", _password_en_ok),
    _Rule("password", _PASSWORD_ZH, "password", _password_zh_ok),
    _Rule("password", _PIN, "password", _pin_ok),
    _Rule("id_card", _ID_CARD, "number", _id_card_ok),
    _Rule("bank_card", _BANK_CARD, "number", _bank_card_ok),
)
DETECTORS: tuple[str, ...] = tuple(dict.fromkeys(rule.kind for rule in _BUILT_IN))
"""The built-in detectors, as named in policy.detectors."""


def _triggered(text: str) -> set[str]:
    """Return the pre-filter groups that fire on text: only their detectors need to run."""
    lowered = text.lower()
    fired = set()
    anchors = _RARE_ANCHORS_ASCII if lowered.isascii() else _RARE_ANCHORS
    if anchors.search(lowered) or "asia" in lowered or _ID_KEY.search(lowered):  # false for ~99% of texts
        fired = {name for name, regex in _TRIGGERS.items() if regex.search(lowered)}
    if _LONG_NUMBER.search(text):
        fired.add("number")
    return fired


def _secret_span(m: re.Match[str]) -> tuple[int, int] | None:
    """Return where the secret of a match lies (its `secret` group, unquoted), or None if already clean."""
    has_group = "secret" in m.re.groupindex and m.group("secret") is not None
    start, end = m.span("secret") if has_group else m.span()
    value = m.string[start:end]
    if len(value) >= 2 and _QUOTES.get(value[0]) == value[-1]:
        start, end = start + 1, end - 1
    if start >= end or _ALREADY_CLEAN.match(m.string, start, end):
        return None  # a replacement is never replaced again: a retry keeps its idempotency key
    return start, end


def _rule_spans(rule: _Rule, text: str) -> Iterator[tuple[int, int]]:
    """Yield the secret span of each match of a rule that its validator accepts.

    A rejected match is retried one character later, not after its end: in "Bearer Bearer
    3f9a…" the first match ("Bearer" as the token) fails, and the second one must still be seen.
    """
    pos = 0
    while pos <= len(text) and (m := rule.regex.search(text, pos)) is not None:
        span = _secret_span(m) if rule.valid(m) else None
        if span is not None:
            yield span
        pos = m.end() if span is not None and m.end() > m.start() else m.start() + 1


def _replacement(secret: str, action: str) -> str:
    """Return what stands in for a secret: *** or sha256:<hex>, so equal secrets stay matchable."""
    if action == "hash":
        return "sha256:" + hashlib.sha256(secret.encode("utf-8")).hexdigest()
    return _REDACTED


def _merge_overlaps(found: list[tuple[int, int, int, _Rule]]) -> list[tuple[int, int, _Rule]]:
    """Join overlapping spans, so no tail of a secret survives; the first span's rule names the kind.

    Args:
        found: (start, -end, rule order, rule): sorting puts the widest, earliest rule first.
    """
    merged: list[tuple[int, int, _Rule]] = []
    for start, neg_end, _order, rule in sorted(found):
        end = -neg_end
        if merged and start < merged[-1][1]:
            first_start, first_end, first_rule = merged[-1]
            merged[-1] = (first_start, max(first_end, end), first_rule)
        else:
            merged.append((start, end, rule))
    return merged


def _strings(policy: PolicySettings, key: str) -> tuple[str, ...]:
    """Read a list of strings from the policy settings, or raise ConfigError naming the key."""
    value = getattr(policy, key)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"policy.{key} must be a list of strings")
    return tuple(value)


def _check_action(action: Any, where: str) -> str:
    if action not in _ACTIONS:
        raise ConfigError(f"{where} must be redact or hash, not {action!r}")
    return action


def _user_rule(spec: Any, action: str) -> _Rule:
    """Compile one entry of policy.patterns, or raise ConfigError naming the rule (never its regex)."""
    from .userregex import compile_user_regex  # only a config with rules of its own needs the check

    if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str) or not isinstance(spec.get("regex"), str):
        raise ConfigError("each rule in policy.patterns needs a name and a regex, e.g. {name: employee_id, regex: ...}")
    name = spec["name"]
    unknown = set(spec) - {"name", "regex", "action"}
    if unknown:
        raise ConfigError(f"policy.patterns rule {name!r}: unknown setting {sorted(unknown)[0]!r}")
    regex = compile_user_regex(spec["regex"], f"policy.patterns rule {name!r}")
    if regex.fullmatch(""):
        raise ConfigError(f"policy.patterns rule {name!r}: the regex matches empty text; a secret has characters")
    rule_action = _check_action(spec.get("action", action), f"policy.patterns rule {name!r}: action")
    return _Rule(name, regex, None, action=rule_action)


def _cached(cache: dict, key: str, compute: Callable[[str], Any]) -> Any:
    """compute(key), kept in cache (emptied when it outgrows a batch's handful of distinct keys)."""
    if key not in cache:
        if len(cache) >= 4096:
            cache.clear()
        cache[key] = compute(key)
    return cache[key]


def _matches_any(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatchcase(name, pattern) for pattern in patterns)


class Policy:
    """What may be written: clean() removes secrets from free text, check_tags() refuses blocked tags,
    check_identifiers() refuses identifiers holding a secret, trust() rates a source."""

    def __init__(self, action: str, rules: Iterable[_Rule], blocked_tags: Iterable[str],
                 user_sources: Iterable[str], external_sources: Iterable[str]):
        self.action = action
        # (order, rule): the order breaks ties between rules on one span. User rules (no trigger)
        # run on every text; a built-in rule only on a text that fires its trigger.
        ordered = list(enumerate(rules))
        self._always = [(order, rule) for order, rule in ordered if rule.trigger is None]
        self._gated: dict[str, list[tuple[int, _Rule]]] = {}
        for order, rule in ordered:
            if rule.trigger is not None:
                self._gated.setdefault(rule.trigger, []).append((order, rule))
        self._blocked = frozenset(normalize_tag(tag) for tag in blocked_tags)
        self._user = tuple(normalize(s).strip() for s in user_sources)
        self._external = tuple(normalize(s).strip() for s in external_sources)
        # A batch repeats a handful of sources and tags: each is normalised and matched once (plain
        # dicts, not lru_cache: a policy is pickled into the worker processes that draft a batch)
        self._rated: dict[str, str] = {}
        self._tag_parts: dict[str, str | None] = {}
        self._secret_kinds: dict[str, str | None] = {}

    @classmethod
    def from_settings(cls, policy: PolicySettings) -> Policy:
        """Build the policy from a vault's `policy` settings.

        Raises ConfigError for an unknown action or detector, or a user rule that does not compile.
        """
        action = _check_action(policy.action, "policy.action")
        detectors = _strings(policy, "detectors")
        unknown = [d for d in detectors if d not in DETECTORS]
        if unknown:
            raise ConfigError(f"policy.detectors: unknown detector {unknown[0]!r} (known: {', '.join(DETECTORS)})")
        if not isinstance(policy.patterns, (list, tuple)):
            raise ConfigError("policy.patterns must be a list of rules")
        rules = [rule for rule in _BUILT_IN if rule.kind in detectors]
        rules += [_user_rule(spec, action) for spec in policy.patterns]
        return cls(action, rules, _strings(policy, "blocked_tags"),
                   _strings(policy, "user_sources"), _strings(policy, "external_sources"))

    @classmethod
    def of(cls, vault: Store) -> Policy:
        """The vault's policy, built from its settings once and reused by every writer and check of
        this process (Store.reused: built again after Store.configure)."""
        return vault.reused("policy", None, lambda: cls.from_settings(vault.settings.policy))

    def clean(self, text: str) -> tuple[str, list[Finding]]:
        """Replace every secret in text (redacted or hashed); return the new text and what was found."""
        spans = self._secret_spans(text)
        if not spans:
            return text, []
        parts: list[str] = []
        findings: list[Finding] = []
        pos = 0
        for start, end, rule in spans:
            action = rule.action or self.action
            parts += (text[pos:start], _replacement(text[start:end], action))
            findings.append(Finding(rule.kind, action))
            pos = end
        parts.append(text[pos:])
        return "".join(parts), findings

    def note_secrets(self, title: str, body: str, value: str, source: str, tags: Iterable[str],
                     aliases: Iterable[str]) -> list[str]:
        """The kinds of secret a note's title, body or properties hold (never the secrets), sorted:
        what doctor --strict and the pre-commit hook refuse."""
        fields = [title, body, value, source, " ".join(tags), " ".join(aliases)]
        return sorted({f.kind for text in fields if text for f in self.clean(str(text))[1]})

    def _secret_spans(self, text: str) -> list[tuple[int, int, _Rule]]:
        """Return the non-overlapping spans of every secret in text, in text order."""
        fired = _triggered(text)
        if not fired and not self._always:
            return []  # most texts: no rule can match
        found: list[tuple[int, int, int, _Rule]] = []
        for order, rule in self._always + [pair for name in fired for pair in self._gated.get(name, ())]:
            for span in _rule_spans(rule, text):
                found.append((span[0], -span[1], order, rule))
        return _merge_overlaps(found)

    def check_tags(self, tags: Iterable[str]) -> None:
        """Raise PolicyViolation for the first blocked tag; a nested tag is blocked by any of its parts."""
        for tag in tags:
            part = _cached(self._tag_parts, tag, self._blocked_part)
            if part is not None:
                raise PolicyViolation(
                    f"tag {part!r} is blocked by the write policy (policy.blocked_tags in .vaultmem/config.yaml);"
                    " store secrets in a password manager"
                )

    def check_identifiers(self, fields: dict[str, Any], where: str) -> None:
        """check_identifier() for each identifier of a checked write item (tags and entity names one by one)."""
        check = self.check_identifier
        for tag in fields["tags"]:
            check("tag", tag, where)
        for name in fields["entity"]:
            check("entity", name, where)
        for key in IDENTIFIER_FIELDS:
            value = fields.get(key)
            if value is not None and value != "":
                check(key, value if isinstance(value, str) else str(value), where)

    def check_identifier(self, field: str, value: str, where: str = "") -> None:
        """Raise PolicyViolation when an identifier (a tag, source, namespace, entity name …) holds a secret.

        Redacted, it would be a nonsense identifier that still groups and links notes, so the write is
        refused instead. The message names the field (after `where`, e.g. "item 3") and the kind of
        secret, never the value.
        """
        kind = _cached(self._secret_kinds, value, self._first_secret)
        if kind is not None:
            raise PolicyViolation(f"{where + ': ' if where else ''}{field} holds a secret ({kind}); an identifier is"
                                  " never redacted, so nothing was written (keep secrets in a password manager)")

    def _first_secret(self, value: str) -> str | None:
        spans = self._secret_spans(value)
        return spans[0][2].kind if spans else None

    def _blocked_part(self, tag: str) -> str | None:
        """Return the first blocked part of a tag, or None."""
        return next((part for part in normalize_tag(tag).split("/") if part in self._blocked), None)

    def trust(self, source: str) -> str:
        """Rate a source: 'user' or 'external' when listed (fnmatch patterns, any case), else 'agent'."""
        return _cached(self._rated, source, self._rate)

    def _rate(self, source: str) -> str:
        name = normalize(source).strip()
        if _matches_any(name, self._user):
            return "user"
        if _matches_any(name, self._external):
            return "external"
        return "agent"
