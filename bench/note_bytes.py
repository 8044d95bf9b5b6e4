"""Golden check: the note bytes written for the same inputs are the same as at another commit (issue 15 item 6).

    python bench/note_bytes.py --notes 10000                # against 4e056c2 (the default)
    python bench/note_bytes.py --against COMMIT --json out.json
    python bench/note_bytes.py --smoke                      # 50 notes against HEAD: seconds, for CI

The same inputs are written twice, by this checkout and by COMMIT (a temporary `git worktree add --detach`,
removed after), each in its own subprocess with PYTHONPATH set to its tree, a fixed VAULTMEM_DEVICE_ID and a
temporary VAULTMEM_HOME: (a) bench/write.py's `make_items(N, seed=0)` through `Vault.remember_many` into a
fresh `Vault.init` vault; (b) every note of sample-vault/memories/ (read from a temporary copy) remembered
one by one, its body with its tags, type, source and timestamp, into another fresh vault. Then the sha256 of
every .md file (outside .vaultmem/) is compared, with only the frontmatter's `id: ...` line normalised (ids
are random ULIDs). Prints files compared, identical and differing (up to 10 paths, with a unified diff of the
first); exits 1 on any difference, 2 when COMMIT's API does not take these inputs.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
from _figures import write_figures  # noqa: E402

DEFAULT_AGAINST = "4e056c2"
SMOKE_NOTES = 50
SHOWN = 10
DEVICE_ID = "golden-1"
API_ERROR = 2
SAMPLE_FIELDS = ("tags", "type", "source", "timestamp")
_ID_LINE = re.compile(r"^id: .*$", re.M)


def normalised(data: bytes) -> bytes:
    """The note's bytes with its frontmatter's `id:` line made the same everywhere (the body is left alone)."""
    text = data.decode("utf-8")
    if not text.startswith("---\n"):
        return data
    end = text.find("\n---\n", 3)
    end = len(text) if end < 0 else end
    return (_ID_LINE.sub("id: ID", text[:end], count=1) + text[end:]).encode("utf-8")


def sample_inputs(sample: Path) -> list[dict]:
    """The memories of a copy of sample-vault/: body text and the fields remember takes, by file name."""
    from vaultmem.notes.note import parse_note

    inputs = []
    for path in sorted((sample / "memories").glob("*.md")):
        note = parse_note(path.read_bytes(), path)
        fields = {key: note.meta[key] for key in SAMPLE_FIELDS if note.meta.get(key) is not None}
        if "timestamp" in fields and not isinstance(fields["timestamp"], str):
            fields["timestamp"] = fields["timestamp"].isoformat()
        inputs.append({"text": note.body.strip("\n"), **fields})
    return inputs


def _write_phase(inputs: Path, out: Path) -> None:
    """Run in the subprocess: write both vaults with the vaultmem on PYTHONPATH."""
    import vaultmem
    from vaultmem import Vault

    given = json.loads(inputs.read_text(encoding="utf-8"))
    try:
        Vault.init(out / "batch").remember_many(given["batch"])
        vault = Vault.init(out / "sample")
        for item in given["sample"]:
            vault.remember(item["text"], **{k: v for k, v in item.items() if k != "text"})
    except (TypeError, AttributeError) as exc:
        print(f"vaultmem at {Path(vaultmem.__file__).parent} does not take these inputs: {exc!r}", file=sys.stderr)
        raise SystemExit(API_ERROR) from None
    print(Path(vaultmem.__file__).resolve().parent)


def write_side(tree: Path, inputs: Path, out: Path, label: str) -> None:
    """Write the inputs with the vaultmem of `tree` in a fresh process."""
    with tempfile.TemporaryDirectory(prefix="vaultmem-golden-home-") as home:
        env = {**os.environ, "PYTHONPATH": str(tree), "VAULTMEM_DEVICE_ID": DEVICE_ID, "VAULTMEM_HOME": home}
        done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--_write", str(inputs), str(out)],
                              env=env, capture_output=True, text=True)
    if done.returncode != 0:
        print(f"writing with {label} failed:\n{done.stderr[-3000:]}", file=sys.stderr)
        raise SystemExit(API_ERROR if done.returncode == API_ERROR else 1)
    used = Path(done.stdout.strip().splitlines()[-1])
    if not used.is_relative_to(tree.resolve()):
        raise SystemExit(f"{label}: the subprocess imported vaultmem from {used}, not from {tree}")


def digests(root: Path) -> dict[str, str]:
    """sha256 of every normalised note under root (outside .vaultmem/), by relative path."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(normalised(p.read_bytes())).hexdigest()
            for p in sorted(root.rglob("*.md")) if ".vaultmem" not in p.relative_to(root).parts}


def compare(ours: Path, theirs: Path, against: str) -> dict:
    """Files compared, identical and differing between the two written trees, with a diff of the first."""
    mine, other = digests(ours), digests(theirs)
    paths = sorted(set(mine) | set(other))
    differing = [p for p in paths if mine.get(p) != other.get(p)]
    diff = ""
    if differing:
        first = differing[0]
        texts = [normalised((root / first).read_bytes()).decode("utf-8").splitlines(keepends=True)
                 if (root / first).exists() else [] for root in (theirs, ours)]
        diff = "".join(difflib.unified_diff(*texts, fromfile=f"{against}/{first}", tofile=f"current/{first}"))
    return {"compared": len(paths), "identical": len(paths) - len(differing), "differing": len(differing),
            "differing_paths": differing[:SHOWN], "only_current": sum(p not in other for p in paths),
            "only_against": sum(p not in mine for p in paths), "first_diff": diff}


def print_figures(figures: dict) -> None:
    print(f"note bytes: this tree against {figures['against']} ({figures['against_commit'][:12]}), "
          f"{figures['notes']} batch items and {figures['sample_memories']} sample memories")
    print(f"files compared {figures['compared']}, identical {figures['identical']}, differing {figures['differing']}"
          f" (only here {figures['only_current']}, only at {figures['against']} {figures['only_against']})")
    for path in figures["differing_paths"]:
        print(f"  differs: {path}")
    if figures["first_diff"]:
        print(figures["first_diff"], end="")
    print("identical" if figures["differing"] == 0 else "NOT identical")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", default=DEFAULT_AGAINST, help=f"the commit to compare with (default {DEFAULT_AGAINST})")
    parser.add_argument("--notes", type=int, default=10_000, help="batch items from bench/write.py (default 10000)")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--smoke", action="store_true", help=f"{SMOKE_NOTES} notes against HEAD: for CI")
    parser.add_argument("--_write", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._write:
        _write_phase(Path(args._write[0]), Path(args._write[1]))
        return
    if args.smoke:
        args.notes, args.against = SMOKE_NOTES, "HEAD"
    sys.path.insert(0, str(REPO))  # the inputs are made and read by this tree (a subprocess writes each side)
    from write import make_items

    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", f"{args.against}^{{commit}}"],
                            capture_output=True, text=True, check=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="vaultmem-golden-") as tmp:
        tmp = Path(tmp)
        shutil.copytree(REPO / "sample-vault", tmp / "sample-vault")
        inputs = {"batch": make_items(args.notes, seed=0)[0], "sample": sample_inputs(tmp / "sample-vault")}
        (tmp / "inputs.json").write_text(json.dumps(inputs, ensure_ascii=False), encoding="utf-8")
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(tmp / "src"), commit],
                       capture_output=True, text=True, check=True)
        try:
            write_side(REPO, tmp / "inputs.json", tmp / "current", "this tree")
            write_side(tmp / "src", tmp / "inputs.json", tmp / "against", args.against)
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tmp / "src")],
                           capture_output=True, text=True)
        figures = {"against": args.against, "against_commit": commit, "notes": args.notes,
                   "sample_memories": len(inputs["sample"]), **compare(tmp / "current", tmp / "against", args.against)}
    print_figures(figures)
    write_figures(args.json, figures)
    raise SystemExit(1 if figures["differing"] else 0)


if __name__ == "__main__":
    main()
