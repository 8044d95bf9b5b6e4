"""Notes of their own (`merge: false`) and a write's own properties: what a keyed store (LangGraph's, issue 29)
needs of the write pipeline. Such a note is never a retry or a restatement of another, nothing is folded into
it, and only an explicit supersede retires it; its properties follow vaultmem's in the frontmatter."""

import pytest

from vaultmem import PolicyViolation, VaultmemError
from vaultmem.notes.note import parse_note


def _note(vault, result):
    return parse_note((vault.root / result.path).read_bytes())


def _own(vault, text, **fields):
    return vault.remember(text, merge=False, **fields)


def test_properties_follow_vaultmems_own_in_the_order_given(vault):
    made = _own(vault, "User likes pizza", properties={"food": "pizza", "count": 3, "vegan": False,
                                                       "sizes": ["s", 2], "note": None, "when": "2024-01-01"})
    note = _note(vault, made)
    keys = list(note.meta)
    assert keys[keys.index("merge") + 1:] == ["version", "food", "count", "vegan", "sizes", "note", "when"]
    assert note.meta["merge"] is False
    assert {k: note.meta[k] for k in keys[-6:]} == {"food": "pizza", "count": 3, "vegan": False, "sizes": ["s", 2],
                                                     "note": None, "when": "2024-01-01"}  # text stays text
    assert "merge" not in _note(vault, vault.remember("Deploys are on Tuesdays")).meta  # merging is the default


def test_the_same_words_twice_are_two_notes_of_their_own(vault):
    first = _own(vault, "User likes pizza", properties={"key": "a"})
    second = _own(vault, "User likes pizza", properties={"key": "b"})
    assert (first.action, second.action) == ("created", "created") and first.id != second.id
    assert [_note(vault, r).meta["key"] for r in (first, second)] == ["a", "b"]


def test_an_ordinary_memory_is_never_folded_into_a_note_of_its_own(vault):
    own = _own(vault, "The backup runs nightly at 02:00 on the main cluster", properties={"key": "backup"})
    before = (vault.root / own.path).read_bytes()
    repeat = vault.remember("The backup runs nightly at 02:00 on the main cluster", tags=["ops"])
    restated = vault.remember("The backup runs nightly at 02:00 on the main cluster.")
    assert repeat.action == "created" and repeat.id != own.id
    assert restated.action in ("merged", "unchanged") and restated.id == repeat.id  # into the ordinary one
    assert (vault.root / own.path).read_bytes() == before


def test_a_batch_keeps_notes_of_their_own_apart(vault):
    results = vault.remember_many([{"text": "User likes pizza", "merge": False, "properties": {"key": str(n)}}
                                   for n in range(3)] + [{"text": "User likes pizza"}])
    assert [r.action for r in results] == ["created"] * 4 and len({r.id for r in results}) == 4


def test_only_an_explicit_supersede_retires_a_note_of_its_own(vault):
    vault.add_entity("张三")
    own = _own(vault, "张三的合同编号是 CT2024-0771", properties={"key": "contract"})
    other = vault.remember("张三的合同编号改为 CT2024-0876")  # an attribute's new value: not for a note of its own
    assert other.supersedes is None and _note(vault, own).meta["status"] == "active"
    newer = _own(vault, "张三的合同编号是 CT2024-0999", properties={"key": "contract"}, supersedes=own.id)
    assert newer.supersedes == own.id and _note(vault, own).meta["status"] == "superseded"
    assert _note(vault, newer).meta["key"] == "contract"


def test_a_propertys_secret_is_redacted_and_a_secret_name_refused(vault):
    made = _own(vault, "The staging database", properties={"dsn": "postgres://app:Tr0ub4dor3x@db:5432/app"})
    assert "Tr0ub4dor3x" not in (vault.root / made.path).read_text() and made.redacted
    with pytest.raises(PolicyViolation, match="property name holds a secret"):
        _own(vault, "A note", properties={"ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8": 1})


@pytest.mark.parametrize("fields, problem", [
    ({"properties": {"food": "pizza"}}, "give merge: false with them"),
    ({"merge": "no"}, "merge must be true or false"),
    ({"merge": False, "properties": {"status": "published"}}, "'status' is vaultmem's own"),
    ({"merge": False, "properties": {"nested": {"a": 1}}}, "flat list"),
    ({"merge": False, "properties": {"rows": [[1, 2]]}}, "flat list"),
    ({"merge": False, "properties": {"x": float("nan")}}, "flat list"),
    ({"merge": False, "properties": ["food"]}, "an object of name: value"),
    ({"merge": False, "properties": {"": 1}}, "1 to 200 characters"),
])
def test_properties_are_checked_before_anything_is_written(vault, fields, problem):
    with pytest.raises(VaultmemError, match=problem):
        vault.remember("User likes pizza", **fields)
    assert not list((vault.root / "memories").glob("*.md"))
