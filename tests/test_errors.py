"""Every error vaultmem raises is a VaultmemError, so a caller (and each surface) catches one class."""

from __future__ import annotations

import ast
import datetime as dt
from pathlib import Path

import pytest

import vaultmem
from vaultmem.errors import InvalidValue, VaultmemError
from vaultmem.write.extract import Extraction, importance
from vaultmem.notes.writing import render_new

SUB_MINUTE = "2026-01-01T10:00:00+05:30:15"


def test_a_sub_minute_utc_offset_is_refused_before_anything_is_written(vault):
    with pytest.raises(VaultmemError, match="whole minutes"):
        vault.remember("The deploy freeze starts on Friday", timestamp=SUB_MINUTE)
    with pytest.raises(VaultmemError, match=r"item 2: .*whole minutes"):
        vault.remember_many([{"text": "first"}, {"text": "second", "timestamp": SUB_MINUTE}])
    assert not list(vault.folders["memories"].glob("*.md"))


def test_a_datetime_with_a_sub_minute_offset_is_refused_too(vault):
    odd = dt.datetime(2026, 1, 1, 10, tzinfo=dt.timezone(dt.timedelta(hours=5, seconds=15)))
    with pytest.raises(VaultmemError, match="whole minutes"):
        vault.remember("The deploy freeze starts on Friday", timestamp=odd)


def test_an_unknown_position_is_a_vaultmem_error_in_the_pipeline_and_in_importance(vault):
    with pytest.raises(VaultmemError, match="position"):
        vault.remember_many([{"text": "hello there", "position": "middle"}])
    with pytest.raises(VaultmemError, match="position"):
        importance(Extraction([], [], []), position="middle")


def test_a_value_that_cannot_be_a_property_is_a_vaultmem_error_and_still_a_value_error():
    with pytest.raises(InvalidValue) as raised:
        render_new({"k": {"nested": 1}}, "")
    assert isinstance(raised.value, VaultmemError) and isinstance(raised.value, ValueError)


def test_the_library_holds_no_assert_statements():
    """`python -O` drops asserts: a check a user relies on must raise a VaultmemError instead."""
    package = Path(vaultmem.__file__).parent
    found = [f"{path.relative_to(package)}:{node.lineno}" for path in sorted(package.rglob("*.py"))
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(node, ast.Assert)]
    assert found == []
