"""Consolidation benchmark: `Vault.consolidate` over a synthetic vault with planted repeat groups.

    python bench/consolidate.py --notes 20000 --json bench/out/consolidate-20k.json
    python bench/consolidate.py --smoke            # 1,000 notes: CI

The vault is bench/_synth.py's (memories of every type, ~200 entities, a year of timestamps) plus
planted groups: 1% of N notes in groups of 3 to 5, a day or more apart: "<verb> the <name> <noun>
<detail>", where each group has a two-word pseudo-name of its own ("the Kalo Miru court"), verbs and
nouns come from pools of 8 and the detail is one of 8 ("again", "after work", ...) per note. Two
groups then share at most their verb, noun and a detail: different things done alike, which must not
merge (`mixed`), while the notes of one group differ in their detail, which must not split them. The index is
built first (not timed here: bench/recall.py times it).

Figures (JSON keys): `dry_run_s` (consolidate --dry-run), `consolidate_s` (the run that writes),
`again_s` (a second run, which must write nothing: `again_written`), `candidates`, `groups`,
`planted`, `planted_found` (planted groups found exactly, members and nothing else), `mixed` (found
groups mixing planted notes with others, or two planted groups: a precision failure), and
`other_groups` (groups of the synthetic notes themselves, which repeat templates by design).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _figures import write_figures  # noqa: E402
from _synth import REFERENCE_END, _ulid, make_vault  # noqa: E402

from vaultmem import Vault  # noqa: E402

SMOKE_NOTES = 1000
PLANTED_SHARE = 0.01
_VERBS = ["ordered", "booked", "visited", "played", "watched", "cooked", "repaired", "painted"]
_NOUNS = ["latte", "court", "museum", "match", "documentary", "curry", "bicycle", "fence"]
_DETAILS = ["again", "today", "downtown", "with friends", "for lunch", "after work", "quickly", "early"]
_SYLLABLES = ["ka", "lo", "mi", "ru", "te", "zo", "vi", "ne", "pa", "su", "do", "ha"]


def _marker(r: random.Random, taken: set[str]) -> str:
    """A two-word pseudo-name no other group has (neither word)."""
    while True:
        words = ["".join(r.choice(_SYLLABLES) for _ in range(3)).capitalize() for _ in range(2)]
        if not taken.intersection(words) and words[0] != words[1]:
            taken.update(words)
            return " ".join(words)


def plant(vault: Vault, n_notes: int, seed: int) -> dict[str, list[str]]:
    """Write the planted groups as notes (as a person or an import would); returns marker -> ids."""
    r = random.Random(seed + 1)
    end_ms = int(REFERENCE_END.timestamp() * 1000)
    groups: dict[str, list[str]] = {}
    taken: set[str] = set()
    planted = 0
    while planted < max(3, int(n_notes * PLANTED_SHARE)):
        marker, size = _marker(r, taken), r.randint(3, 5)
        verb, noun = r.choice(_VERBS), r.choice(_NOUNS)
        start = end_ms - r.randint(30, 300) * 86_400_000
        for k in range(size):
            ms = start + k * r.randint(1, 9) * 86_400_000
            details = r.choice(_DETAILS)
            note_id = _ulid(ms, r.getrandbits(80))
            body = f"{verb.capitalize()} the {marker} {noun} {details}"
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(ms / 1000))
            text = (f"---\nid: {note_id}\ntype: event\nscore: 5.0\ntimestamp: {stamp}\ntags: []\nsource: hermes\n"
                    f"lifecycle: event\ntrust: agent\nstatus: active\nnamespace: shared\n---\n{body}\n")
            (vault.folders["memories"] / f"{marker} {noun} {k}.md").write_text(text, encoding="utf-8")
            groups.setdefault(marker, []).append(note_id)
        planted += size
    return groups


def run(n_notes: int, seed: int, workdir: str) -> dict:
    path = Path(workdir) / "vault"
    made = make_vault(path, n_notes - max(3, int(n_notes * PLANTED_SHARE)), seed)
    vault = Vault(made["path"])
    groups = plant(vault, n_notes, seed)
    vault.refresh()
    start = time.perf_counter()
    dry = vault.consolidate(dry_run=True)
    dry_s = time.perf_counter() - start
    start = time.perf_counter()
    done = vault.consolidate()
    write_s = time.perf_counter() - start
    start = time.perf_counter()
    again = vault.consolidate()
    again_s = time.perf_counter() - start
    planted_of = {i: marker for marker, ids in groups.items() for i in ids}
    found_exact, mixed, other = 0, 0, 0
    for group in dry.groups:
        markers = {planted_of.get(i) for i in group.ids}
        if markers == {None}:
            other += 1
        elif len(markers) == 1 and set(group.ids) == set(groups[next(iter(markers))]):
            found_exact += 1
        else:
            mixed += 1
    return {"notes": n_notes, "candidates": dry.candidates, "groups": len(dry.groups), "planted": len(groups),
            "planted_found": found_exact, "mixed": mixed, "other_groups": other,
            "dry_run_s": round(dry_s, 3), "consolidate_s": round(write_s, 3), "written": len(done.written),
            "again_s": round(again_s, 3), "again_written": len(again.written)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help=f"{SMOKE_NOTES} notes")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vaultmem-consolidate-") as workdir:
        figures = run(SMOKE_NOTES if args.smoke else args.notes, args.seed, workdir)
    text = json.dumps(figures, indent=2)
    print(text)
    write_figures(args.json, figures)


if __name__ == "__main__":
    main()
