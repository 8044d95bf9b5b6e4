"""Issue 16's sync test: three clones of one vault, each with its own device id, sync through a bare
repository on this machine over 200 seeded random rounds of edits — vaultmem writes, hand edits of
bodies and properties, adjacent-property edits on two machines, renames, deletes, Obsidian
Properties-style rewrites — and syncs. After the last sync: no conflict marker in any note, no
sentence lost (every sentence ever written is in some note, unless the machine that deleted its
note had seen it), and the same recall top 10 on every clone."""

from __future__ import annotations

import os
import random
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from vaultmem import Vault
from vaultmem.sync.gitsync import sync

pytestmark = pytest.mark.skipif(subprocess.run(["git", "--version"], capture_output=True).returncode != 0,
                                reason="needs git")

WORDS = ("amber basil cedar delta ember fjord garnet harbor indigo juniper kestrel lagoon marble nectar "
         "orchid pewter quartz raven saffron tundra umber velvet willow xenon yarrow zephyr").split()
NOUNS = ("invoice server ticket contract laptop router badge budget ledger schedule pipeline backup "
         "printer license roadmap").split()
MARKER = re.compile(r"^(<{7}|={7}|>{7})( |$)", re.MULTILINE)
SENTENCE = re.compile(r"Fact \d+-\d+ [^.]*\.")


def git(where: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(where), *args], capture_output=True, text=True, check=True).stdout


class Machine:
    """One clone with its own device id; writes through vaultmem or by hand, as a person does."""

    def __init__(self, name: str, root: Path):
        self.name, self.root = name, root
        os.environ["VAULTMEM_DEVICE_ID"] = name
        self.vault = Vault(root)
        assert self.vault.device == name

    def notes(self) -> list[Path]:
        return sorted(p for p in (self.root / "memories").rglob("*.md"))

    def sync(self) -> None:
        os.environ["VAULTMEM_DEVICE_ID"] = self.name  # the merge driver git runs inherits it
        sync(self.vault)


class World:
    def __init__(self, tmp: Path, seed: int):
        self.rng = random.Random(seed)
        self.counter = 0
        self.written: dict[str, str] = {}  # sentence -> machine that wrote it
        self.deleted: set[str] = set()  # sentences a machine saw in a note it deleted
        origin = tmp / "origin.git"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
        first = tmp / "m0"
        Vault.init(first)
        git(first, "init", "-q", "-b", "main")
        git(first, "remote", "add", "origin", str(origin))
        self.machines = [Machine("m0-dev", first)]
        self.machines[0].sync()
        for number in (1, 2):
            root = tmp / f"m{number}"
            subprocess.run(["git", "clone", "-q", str(origin), str(root)], check=True)
            self.machines.append(Machine(f"m{number}-dev", root))
            self.machines[-1].sync()

    def sentence(self, machine: Machine) -> str:
        self.counter += 1
        words = " ".join(self.rng.sample(WORDS, 3))
        text = f"Fact {self.counter}-{self.rng.randrange(10**6)} the {self.rng.choice(NOUNS)} is {words}."
        self.written[text] = machine.name
        return text

    # -- the edits ------------------------------------------------------------------------------
    def remember(self, m: Machine) -> None:
        tags = self.rng.sample(["ops", "billing", "home", "travel"], self.rng.randrange(2))
        m.vault.remember(self.sentence(m), tags=tags)

    def append_body(self, m: Machine, note: Path) -> None:
        text = note.read_text(encoding="utf-8")
        note.write_text(text.rstrip("\n") + "\n\n" + self.sentence(m) + "\n", encoding="utf-8")

    def edit_score(self, m: Machine, note: Path) -> None:
        text = note.read_text(encoding="utf-8")
        note.write_text(re.sub(r"(?m)^score: .*$", f"score: {self.rng.randrange(1, 10)}", text, count=1),
                        encoding="utf-8")

    def add_tag(self, m: Machine, note: Path) -> None:
        text = note.read_text(encoding="utf-8")
        tag = self.rng.choice(["urgent", "later", "people", "money"])
        if re.search(r"(?m)^tags: \[.*\]$", text):
            text = re.sub(r"(?m)^tags: \[(.*)\]$",
                          lambda found: f"tags: [{', '.join([*filter(None, found[1].split(', ')), tag])}]",
                          text, count=1)
        note.write_text(text, encoding="utf-8")

    def properties_rewrite(self, m: Machine, note: Path) -> None:
        """What Obsidian's Properties panel does: the whole frontmatter written again in its own style."""
        text = note.read_text(encoding="utf-8")
        _, head, body = text.split("---\n", 2)
        meta = yaml.safe_load(head)
        meta["reviewed"] = True
        note.write_text("---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n" + body,
                        encoding="utf-8")

    def rename(self, m: Machine, note: Path) -> None:
        note.rename(note.with_name(f"{note.stem} r{self.rng.randrange(1000)}.md"))

    def delete(self, m: Machine, note: Path) -> None:
        self.deleted.update(SENTENCE.findall(note.read_text(encoding="utf-8")))
        note.unlink()

    def round(self) -> None:
        m = self.rng.choice(self.machines)
        notes = m.notes()
        roll = self.rng.random()
        if roll < 0.30 or not notes:
            self.remember(m)
        elif roll < 0.45:
            self.append_body(m, self.rng.choice(notes))
        elif roll < 0.55:
            self.edit_score(m, self.rng.choice(notes))
        elif roll < 0.62:
            self.add_tag(m, self.rng.choice(notes))
        elif roll < 0.67:
            self.properties_rewrite(m, self.rng.choice(notes))
        elif roll < 0.71:
            self.rename(m, self.rng.choice(notes))
        elif roll < 0.74 and len(notes) > 3:
            self.delete(m, self.rng.choice(notes))
        elif roll < 0.80:  # adjacent properties on two machines: one raises the score, the other tags
            other = self.rng.choice([x for x in self.machines if x is not m])
            rel = self.rng.choice(notes).relative_to(m.root)
            if (other.root / rel).exists():
                self.edit_score(m, m.root / rel)
                self.add_tag(other, other.root / rel)
        else:
            m.sync()


@pytest.mark.parametrize("seed", [int(s) for s in os.environ.get("VAULTMEM_SYNC_SEEDS", "16").split(",")])
def test_three_clones_converge_through_200_random_rounds_without_markers_or_lost_text(tmp_path, seed, monkeypatch):
    monkeypatch.setenv("VAULTMEM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("VAULTMEM_DEVICE_ID", "setup")
    world = World(tmp_path, seed)
    for _ in range(200):
        world.round()
    for _ in range(2):  # everyone pulls everyone's last changes
        for m in world.machines:
            m.sync()

    for m in world.machines:
        assert git(m.root, "status", "--porcelain") == "", m.name
        assert git(m.root, "rev-parse", "HEAD") == git(world.machines[0].root, "rev-parse", "HEAD")
    texts = {}
    for path in world.machines[0].root.rglob("*.md"):
        if ".git" not in path.parts:
            texts[path] = path.read_text(encoding="utf-8")
    marked = [str(p) for p, t in texts.items() if MARKER.search(t)]
    assert marked == []
    everything = "\n".join(texts.values())
    lost = [s for s in world.written if s not in everything and s not in world.deleted]
    assert lost == []
    for query in ("invoice", "server amber", "contract ledger", "billing", "the router is"):
        tops = {m.name: [h.id for h in m.vault.recall(query, limit=10, record_access=False, now=2_000_000_000)]
                for m in world.machines}
        assert len({tuple(top) for top in tops.values()}) == 1, tops
