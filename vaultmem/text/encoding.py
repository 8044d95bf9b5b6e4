"""Input checked to be UTF-8 text before anything is written: refused with the place where it stops
being text, never decoded by a guess (a Latin-1 é is no UTF-8, and no decoder can tell which 8-bit
code page a byte came from)."""

from __future__ import annotations

from ..errors import NotText

__all__ = ["check_text", "decode_text"]

ICONV = "convert it first, e.g. `iconv -f latin1 -t utf-8`"
# Python carries an undecodable byte of a command-line argument or a file name as U+DC80-U+DCFF
# (surrogateescape): such a character is that byte, and the argument was not UTF-8
_ESCAPED = range(0xDC80, 0xDD00)


def decode_text(data: bytes, where: str) -> str:
    """The bytes as UTF-8 text; NotText naming `where`, the first byte that is not UTF-8, its offset and line."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise NotText(where, exc.start, f"byte 0x{data[exc.start]:02x} at byte offset {exc.start} (line {line})",
                      ICONV) from None


def check_text(value: str, where: str) -> str:
    """The string, if it can be written as UTF-8; else NotText (a lone surrogate: from a JSON `\\udcxx`
    escape, or a byte of a command-line argument that was not UTF-8)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        at = exc.start
        code = ord(value[at])
        if code not in _ESCAPED:
            raise NotText(where, at, f"a lone surrogate U+{code:04X} at character {at}") from None
        offset = len(value[:at].encode("utf-8"))  # the text before it is UTF-8: the first bad one is here
        line = value.count("\n", 0, at) + 1
        raise NotText(where, offset, f"byte 0x{code - 0xDC00:02x} at byte offset {offset} (line {line})",
                      ICONV) from None
    return value
