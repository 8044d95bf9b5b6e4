"""The normalisers of the extraction rules: a rule's match (and the write time) -> the value stored.

Dates become ISO dates (relative ones resolved against the write time, in its zone), amounts
"<number> <currency>", phone numbers their digits, thresholds "metric>number unit for duration".
A normaliser returns None when the match is not a value after all (a date that does not exist).
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Callable

__all__ = ["DAY_OFFSETS", "NORMALISERS"]

_MONTHS = {name: i for i, name in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), 1)}


def _ymd(m: re.Match[str], now: dt.datetime) -> str | None:
    """ISO date from groups y/m/d or y/mon/d; a missing year is the one nearest to now."""
    groups = m.groupdict()
    month = int(groups["m"]) if groups.get("m") else _MONTHS[groups["mon"][:3].lower()]
    day = int(groups["d"])
    if not groups.get("y"):
        return _nearest(month, day, now.date())
    return _iso(groups["y"], month, day)


@functools.lru_cache(maxsize=4096)  # texts repeat their dates
def _iso(year: str, month: int, day: int) -> str | None:
    """The ISO text of a date, None for a day that does not exist."""
    try:
        return dt.date(int(year), month, day).isoformat()
    except ValueError:
        return None


@functools.lru_cache(maxsize=4096)
def _nearest(month: int, day: int, today: dt.date) -> str | None:
    """The date with this month and day nearest to today (last, this or next year)."""
    candidates = []
    for year in (today.year - 1, today.year, today.year + 1):
        try:
            candidates.append(dt.date(year, month, day))
        except ValueError:
            pass
    return min(candidates, key=lambda d: abs(d - today)).isoformat() if candidates else None


DAY_OFFSETS = {"大后天": 3, "今天": 0, "明天": 1, "后天": 2, "昨天": -1, "前天": -2,
                "today": 0, "tomorrow": 1, "yesterday": -1}
_WEEK_OFFSETS = {"上": -1, "下": 1, "本": 0, "这": 0, "last": -1, "next": 1, "this": 0}
_CN_DIGITS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_EN_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
               "eight": 8, "nine": 9, "ten": 10}
_EN_WEEKDAYS = ("mon", "tues", "wednes", "thurs", "fri", "satur", "sun")


def _relative(m: re.Match[str], now: dt.datetime) -> str:
    """ISO date of "明天", "下周五", "next friday", "in 2 weeks" … (lower case) counted from now's local date."""
    word, today = m.group(), now.date()
    if word in DAY_OFFSETS:
        return (today + dt.timedelta(days=DAY_OFFSETS[word])).isoformat()
    parts = word.split()
    if parts[0] == "in":
        return _later(today, parts[1], parts[2])
    if len(parts) == 2:
        week, weekday = _WEEK_OFFSETS[parts[0]], _EN_WEEKDAYS.index(parts[1][:-3])
    else:
        week, weekday = _WEEK_OFFSETS[word[0]], "一二三四五六".find(word[-1]) % 7  # 日/天: Sunday
    monday = today - dt.timedelta(days=today.weekday())
    return (monday + dt.timedelta(days=7 * week + weekday)).isoformat()


def _days_later(m: re.Match[str], now: dt.datetime) -> str | None:
    return _later(now.date(), m.group("n"), m.group("unit"))


def _later(today: dt.date, count: str, unit: str) -> str | None:
    """ISO date `count` days ("天", "days") or weeks later; None for a count that is no number."""
    n = _count(count)
    if n is None:
        return None
    return (today + dt.timedelta(days=n if unit[0] in "天d" else 7 * n)).isoformat()


def _count(word: str) -> int | None:
    """1..99 from digits, "a"/"three", or Chinese numerals ("三", "十五", "二十")."""
    if word.isdigit():
        return int(word)
    if word in _EN_NUMBERS:
        return _EN_NUMBERS[word]
    if "十" not in word:
        return _CN_DIGITS.get(word)
    tens, _, ones = word.partition("十")
    if tens not in ("", *_CN_DIGITS) or ones not in ("", *_CN_DIGITS):
        return None
    return _CN_DIGITS.get(tens, 1) * 10 + _CN_DIGITS.get(ones, 0)


_CURRENCIES = {"¥": "CNY", "￥": "CNY", "元": "CNY", "人民币": "CNY", "rmb": "CNY", "cny": "CNY",
               "$": "USD", "us$": "USD", "usd": "USD", "美元": "USD", "美金": "USD", "dollar": "USD",
               "dollars": "USD", "€": "EUR", "eur": "EUR", "欧元": "EUR", "euro": "EUR", "euros": "EUR",
               "£": "GBP", "gbp": "GBP", "英镑": "GBP", "日元": "JPY", "jpy": "JPY",
               "港币": "HKD", "港元": "HKD", "hkd": "HKD", "hk$": "HKD"}
_MULTIPLIERS = {"百万": 10**6, "千万": 10**7, "万": 10**4, "亿": 10**8, "千": 10**3, "k": 10**3,
                "m": 10**6, "million": 10**6, "billion": 10**9, "bn": 10**9}


def _amount(m: re.Match[str], now: dt.datetime) -> str:
    """"<number> <currency>" with the multiplier applied: "5万元" -> "50000 CNY", "$1,200.50" -> "1200.50 USD"."""
    from decimal import Decimal  # here: few memories hold an amount (~3 ms to import)

    number = Decimal(m.group("num").replace(",", "")) * _MULTIPLIERS.get((m.group("mult") or "").lower(), 1)
    shown = str(int(number)) if number == number.to_integral_value() else f"{number:f}"
    return f"{shown} {_CURRENCIES[m.group('cur').strip().lower()]}"


def _mobile(m: re.Match[str], now: dt.datetime) -> str:
    """The 11 digits of a Chinese mobile, separators dropped."""
    return re.sub(r"\D", "", m.group("v"))


def _intl_phone(m: re.Match[str], now: dt.datetime) -> str | None:
    """"+" and the digits; a Chinese mobile written "+8613800138000" is its 11 digits, as the mobile rule gives."""
    digits = re.sub(r"\D", "", m.group())
    if _CN_MOBILE.fullmatch(digits):
        return digits[2:]
    return "+" + digits if 8 <= len(digits) <= 15 else None


_CN_MOBILE = re.compile(r"861[3-9]\d{9}")


_OPERATORS = {">=": (">=", "≥", "不低于", "达到", "at least"), "<=": ("<=", "≤"),
              "<": ("<", "＜", "低于", "小于", "below", "under", "less than")}
_OPERATOR_OF = {word: op for op, words in _OPERATORS.items() for word in words}
_UNITS = {"毫秒": "ms", "秒": "s", "℃": "°c", "分钟": "m", "小时": "h"}


def _threshold(m: re.Match[str], now: dt.datetime) -> str:
    """"cpu>90% for 5m" from the lower-cased text: metric, operator, number and unit, then the duration if any."""
    metric = " ".join(m.group("metric").split())
    unit = m.group("unit") or ""
    value = f"{metric}{_OPERATOR_OF.get(m.group('op'), '>')}{m.group('num')}{_UNITS.get(unit, unit)}"
    if m.group("dur"):
        dunit = m.group("dunit")
        value += f" for {m.group('dur')}{_UNITS.get(dunit, dunit[0])}"
    return value


NORMALISERS: dict[str, Callable[[re.Match[str], dt.datetime], str | None]] = {
    "ymd": _ymd, "relative": _relative, "days_later": _days_later, "amount": _amount,
    "mobile": _mobile, "intl_phone": _intl_phone, "threshold": _threshold,
}
