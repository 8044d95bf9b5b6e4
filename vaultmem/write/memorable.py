"""Is a text worth keeping? The judgement an agent's turn writer asks before it remembers a turn.

A conversation turn is kept when it holds what the write pipeline's extraction already scores: an
explicit cue ("remember", "记住", "from now on", "以后都"; the vault's own extra cues included), a typed
value (an id, a date, a URL, an amount …), or a stated preference ("I prefer", "我喜欢"). Small talk
holds none and is not kept. A question that only carries a value or a preference asks rather than
tells ("is staging on 8443?"), so it needs a cue to be kept; nor is a bare "today" or "yesterday"
a value worth a note ("nice weather today"), while "due tomorrow" (a deadline) is. Preferences decide
only this: they add no points to a memory's score (SPEC §6.3 lists the points).
"""

from __future__ import annotations

from .extract import Extraction, Value
from ..text.normalise import DAY_OFFSETS
from ..text.terms import LazyPattern

__all__ = ["reasons"]

_PREFERENCE = LazyPattern(
    r"\b(?:i|we)(?: really| much| usually| always)? (?:prefer|like|love|hate|dislike|enjoy)\b"
    r"|\b(?:i|we) (?:don't|do not|never) (?:like|want|use)\b|\bmy (?:favou?rite|preference)\b"
    r"|我们?(?:更|比较|很|最|不太|不)?(?:喜欢|偏好|习惯|讨厌|爱用|倾向于)|我的(?:偏好|习惯|最爱)")
_QUESTION_ENDS = ("?", "？", "吗", "吗。", "呢")


def reasons(extraction: Extraction, text: str) -> list[str]:
    """Why the text is worth keeping ("cue: remember", "value: port", "preference"); [] when it is not."""
    found = [f"cue: {kind}" for kind in extraction.cues]
    if found:
        return found
    if text.rstrip().endswith(_QUESTION_ENDS):
        return []
    found = [f"value: {v.type}" for v in extraction.values if not _chat_day(v, text)]
    if _PREFERENCE.search(text.lower()) is not None:
        found.append("preference")
    return found


def _chat_day(value: Value, text: str) -> bool:
    """A date that is only a word for a day near now, as small talk uses them."""
    return value.type == "date" and text[value.start:value.end].strip().lower() in DAY_OFFSETS
