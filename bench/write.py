"""Write pipeline benchmark: `vaultmem remember --batch` into an empty vault, then one CLI remember.

    python bench/write.py --notes 100000 --json bench/out/write-100k.json
    python bench/write.py --smoke            # 300 memories: CI
    python bench/write.py --python /work/venv-a6b25e6/bin/python   # another commit's vaultmem, in its own venv

The batch is N memories drawn from bench/_synth.py's pools (Chinese, English and mixed; ids, dates,
amounts; entity names as plain text, so the pipeline links them), with planted extras: ~3% exact
repeats, ~2% reworded repeats (case, punctuation, spacing) and ~1% memories carrying a secret
(passwords in Chinese and English, API keys, AWS ids, a private key, id-card and bank-card numbers,
a database URL with its password). Each repeat group carries a marker word of its own.

Figures (JSON keys): `batch_s` (wall time of the whole `vaultmem remember --batch FILE` process),
`batch_cpu_s` (its CPU seconds, worker processes included), `io_floor_s` (the same notes written
again with the same atomic create and one sync, nothing else: the disk's share, measured in the
same run) and `batch_over_io_floor`,
`single_remember_s` (median wall of 3 `vaultmem remember TEXT` processes in the vault the batch
filled), `single_remember_empty_s` (the same in an empty vault), `secrets_on_disk` (planted secrets
found anywhere under the vault, `.vaultmem/` included, as bytes), `duplicates_left` (repeat groups
that ended as more than one note), and the batch's created/merged/unchanged counts; `measured`: the
vaultmem package the CLI processes imported.

Every `vaultmem` process is the one of `--python` (default: this interpreter; its `vaultmem` console
script, else `-m vaultmem`), run from the temporary folder with PYTHONPATH unset, so the code measured is
that interpreter's install, never a checkout in the current folder. The batch is made, and the disk's
floor and the figures read, by this checkout's code, so two commits are measured on the same inputs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _synth import REFERENCE_END, _Writer, build_entities  # noqa: E402

SMOKE_NOTES = 300
EXACT_SHARE, REWORD_SHARE, SECRET_SHARE = 0.03, 0.02, 0.01
TIMEOUT_S = 1800


def _luhn_digit(digits: str) -> str:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 0:
            d = d * 2 - 9 if d * 2 > 9 else d * 2
        total += d
    return str((10 - total % 10) % 10)


def _id_card(r: random.Random) -> str:
    """An 18-character Chinese id number with a valid check character."""
    body = f"{r.randint(110000, 659000)}{r.randint(1960, 2005)}{r.randint(1, 12):02d}{r.randint(1, 28):02d}"
    body += f"{r.randint(0, 999):03d}"
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    check = "10X98765432"[sum(int(c) * w for c, w in zip(body, weights)) % 11]
    return body + check


def _secret(r: random.Random, n: int) -> tuple[str, str]:
    """(memory text, the secret it holds)."""
    alnum = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    token = "".join(r.choice(alnum) for _ in range(32))
    kind = n % 8
    if kind == 0:
        secret = f"Tr0ub4dor{n}x"
        return f"The staging admin password: {secret} (rotate monthly)", secret
    if kind == 1:
        secret = f"qaz{n}WSX"
        return f"服务器 root 密码是{secret}，别外传。", secret
    if kind == 2:
        secret = "sk-proj-" + token
        return f"OpenAI key for the bot is {secret}", secret
    if kind == 3:
        secret = "ghp_" + token + "abcd"
        return f"CI uses the token {secret} to push tags.", secret
    if kind == 4:
        secret = "AKIA" + "".join(r.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16))
        return f"Backup bucket access key id {secret}, region eu-west-1.", secret
    if kind == 5:
        secret = _id_card(r)
        return f"客户身份证号 {secret}，已核验。", secret
    if kind == 6:
        digits = "6222" + "".join(r.choice("0123456789") for _ in range(11))
        secret = digits + _luhn_digit(digits)
        return f"退款打到银行卡 {secret}。", secret
    secret = f"pw{n}Secret"
    return f"Reporting DB: postgres://report:{secret}@db.internal:5432/analytics", secret


def _reword(r: random.Random, body: str) -> str:
    """The same memory said again a little differently: case, punctuation, spacing (≥ 0.9 alike,
    no new word; a text with a new word is a new memory to vaultmem)."""
    choice = r.randrange(3)
    if choice == 0:
        return body.upper() if body.isascii() else body + "！"
    if choice == 1:
        return "- " + body.rstrip("。.") + ("。" if not body.isascii() else ".")
    return body.replace(" ", "  ", 3) + ("……" if not body.isascii() else "...")


def _when(r: random.Random, start: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(start + r.random() * 365 * 86400))


def make_items(n: int, seed: int = 0) -> tuple[list[dict], list[str], list[str]]:
    """The batch: (JSON-lines items, planted secrets, marker words of the repeat groups)."""
    r = random.Random(seed)
    writer = _Writer(r, build_entities(seed))
    items: list[dict] = []
    secrets: list[str] = []
    markers: list[str] = []
    start = REFERENCE_END.timestamp() - 365 * 86400
    for _ in range(max(8, round(n * SECRET_SHARE))):  # every kind of secret, even in a smoke run
        body, secret = _secret(r, len(secrets))
        secrets.append(secret)
        items.append({"text": body, "timestamp": _when(r, start), "source": "user"})
    while len(items) < n:
        draft, _ = writer.memory()
        body = draft.body.replace("[[", "").replace("]]", "")
        item = {"text": body, "tags": draft.tags, "timestamp": _when(r, start), "source": r.choice(("user", "hermes"))}
        roll = r.random()
        if roll < EXACT_SHARE + REWORD_SHARE:
            marker = f"mk{len(markers):05d}q"
            markers.append(marker)
            item["text"] = f"{body} ({marker})"
            items.append(item)
            again = dict(item)
            if roll >= EXACT_SHARE:
                again["text"] = _reword(r, item["text"])
            items.append(again)
            continue
        items.append(item)
    r.shuffle(items)
    return items[:n], secrets, markers


def _cli(python: str) -> list[str]:
    """The command line of the `vaultmem` of this interpreter (not resolved: a venv's python is a link)."""
    script = Path(python).parent / "vaultmem"
    return [str(script)] if script.exists() else [python, "-m", "vaultmem"]


def _run(cmd: list[str], cwd: Path) -> tuple[float, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=cwd, env=env)
    wall = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd[:4])} … failed ({proc.returncode}): {proc.stderr.strip()}")
    return wall, proc.stdout


def _single_walls(cli: list[str], vault: Path, tag: str) -> list[float]:
    return [_run([*cli, "remember", f"Single write {tag} {i}: deploy window moved to Friday 22:00.",
                  "--vault", str(vault)], vault.parent)[0] for i in range(3)]


def _measured(python: str, cwd: Path) -> str:
    """Where the vaultmem that interpreter imports lives, as it imports it from `cwd`."""
    return _run([python, "-c", "import vaultmem; print(vaultmem.__file__)"], cwd)[1].strip()


def _secrets_on_disk(vault: Path, secrets: list[str]) -> int:
    """How many planted secrets occur in any file under the vault (.vaultmem/ included), as a run
    of ASCII letters, digits, '_' and '-' (every planted secret is one), compared case-insensitively
    (the index stores lower-cased terms)."""
    import re

    wanted = {s.lower().encode() for s in secrets}
    token = re.compile(rb"[A-Za-z0-9_-]{8,}")
    found: set[bytes] = set()
    for path in vault.rglob("*"):
        if path.is_file():
            found.update(wanted.intersection(token.findall(path.read_bytes().lower())))
    return len(found)


def _duplicates_left(vault: Path, markers: list[str]) -> int:
    """Repeat groups whose marker is in the body of more than one memory note (a superseded
    note's `superseded_by:` may name another group's title: frontmatter is not counted)."""
    import re

    seen: dict[str, int] = {}
    pattern = re.compile(r"\(mk\d{5}q\)")
    for folder in ("memories", "inbox"):
        for path in (vault / folder).glob("*.md"):
            body = path.read_text(encoding="utf-8").split("\n---\n", 1)[-1]
            for marker in set(pattern.findall(body)):
                seen[marker] = seen.get(marker, 0) + 1
    return sum(1 for c in seen.values() if c > 1)


def _children_cpu() -> float:
    """User + system seconds of the finished child processes (the batch and its workers)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _io_floor(vault: Path, folder: Path) -> float:
    """Seconds to write the batch's memory notes again, byte for byte, with the same atomic create
    (temp file + no-replace rename) and one sync, and nothing else: what the disk alone costs."""
    from vaultmem.store.files import atomic_write

    notes = [p.read_bytes() for sub in ("memories", "inbox") for p in sorted((vault / sub).glob("*.md"))]
    folder.mkdir()
    start = time.perf_counter()
    for i, data in enumerate(notes):
        atomic_write(folder / f"note {i}.md", data, durable=False, exclusive=True)
    os.sync()
    return time.perf_counter() - start


def run(n: int, seed: int, python: str = sys.executable) -> dict:
    cli = _cli(python)
    with tempfile.TemporaryDirectory(prefix="vaultmem-write-") as tmp:
        work = Path(tmp)
        items, secrets, markers = make_items(n, seed)
        batch = work / "batch.jsonl"
        batch.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items), encoding="utf-8")
        vault, empty = work / "vault", work / "empty"
        _run([*cli, "init", str(vault)], work)
        _run([*cli, "init", str(empty)], work)
        cpu_before = _children_cpu()
        batch_s, out = _run([*cli, "remember", "--batch", str(batch), "--vault", str(vault), "--json"], work)
        batch_cpu_s = _children_cpu() - cpu_before
        summary = json.loads(out)
        on_disk = sum(1 for folder in ("memories", "inbox") for _ in (vault / folder).glob("*.md"))
        io_floor_s = _io_floor(vault, work / "floor")
        figures = {"secrets_on_disk": _secrets_on_disk(vault, secrets), "duplicates_left": _duplicates_left(vault, markers)}
        single = _single_walls(cli, vault, "after batch")
        single_empty = _single_walls(cli, empty, "empty vault")
        return {"notes": n, "batch_s": round(batch_s, 3), "batch_cpu_s": round(batch_cpu_s, 1),
                "io_floor_s": round(io_floor_s, 3), "batch_over_io_floor": round(batch_s / io_floor_s, 1),
                "single_remember_s": round(statistics.median(single), 3),
                "single_remember_empty_s": round(statistics.median(single_empty), 3),
                **figures, "secrets_planted": len(set(secrets)), "duplicate_groups": len(markers),
                "created": summary["created"], "merged": summary["merged"], "unchanged": summary["unchanged"],
                "notes_on_disk": on_disk, "secrets_anywhere_after_singles": _secrets_on_disk(vault, secrets),
                "measured": _measured(python, work), "date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notes", type=int, default=10_000, help="memories in the batch (default 10,000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="PATH", help="also write the figures to PATH")
    parser.add_argument("--smoke", action="store_true", help=f"{SMOKE_NOTES} memories (CI)")
    parser.add_argument("--python", metavar="PATH", default=sys.executable,
                        help="the interpreter whose vaultmem is measured, e.g. another commit's venv (default: this one)")
    args = parser.parse_args()
    result = run(SMOKE_NOTES if args.smoke else args.notes, args.seed, args.python)
    for key, value in result.items():
        print(f"{key:>24}: {value}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
