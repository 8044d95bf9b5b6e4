"""`vaultmem why` at scale (issue 30, "Tests and numbers"): one note's story in a vault of 100,000 notes in git
with 10,000 commits, against the ≤ 0.5 s target (it reads one note's history, not the vault's).

    python bench/why.py --json bench/out/why-100k.json     # 100k notes, 10k commits: ~5 minutes to build, once
    python bench/why.py --smoke                            # 200 notes, 50 commits: CI (tests/test_bench_smoke.py)

The vault (built once, kept in --cache) is bench/_synth.py's, with an audit log and events logs as vaultmem
writes them (a `remember … created` line for every note, on one of three devices, in the month of the note's
timestamp; accesses for a third of the notes) and a git history made with `git fast-import`: a first commit of
every file, then --commits commits each changing 3 notes (a line added to the body, or the score edited, as a
person does by hand), one chosen note among them in about 20, most of them body edits. The chosen note also gets
two merges in the audit log, and a feedback and a pin through the Vault (real events). Then, each in a fresh
process: `Vault.why(id)` for the chosen note and for a note only the first commit holds (cold: the first call;
p50 of --runs after it), and `vaultmem why ID --json` (wall time, median of --runs). The story is checked: its
commit events must be exactly the note's commits by `git log`. Nothing is asserted: figures are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _figures import finish, run_options, smoke_cache  # noqa: E402

TARGET_S = 0.5
TARGET_NOTES, TARGET_COMMITS = 100_000, 10_000
NOTES_PER_COMMIT = 3
CHOSEN_COMMITS = 20  # commits that touch the chosen note
DEVICES = ("laptop-7f3a", "phone-19c2", "server-a804")
AUTHORS = ("Ann Person <ann@example.com>", "Bo Liu <bo@example.com>")
COMMIT_STEP_S = 60
FIELD = re.compile(rb"^(id|timestamp|source): (.+)$", re.M)
SCORE = re.compile(rb"^score: .+$", re.M)


def _env(cache: Path) -> dict:
    """Machine state and device id inside the cache; git with a fixed identity and no user config."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULTMEM_", "GIT_"))}
    env.update(VAULTMEM_HOME=str(cache / "home"), VAULTMEM_DEVICE_ID=DEVICES[0], GIT_CONFIG_GLOBAL=os.devnull,
               GIT_CONFIG_NOSYSTEM="1")
    return env


def _git(vault: Path, env: dict, *args: str, stdin: bytes | None = None) -> str:
    done = subprocess.run(["git", "-C", str(vault), *args], input=stdin, env=env, capture_output=True, check=True)
    return done.stdout.decode("utf-8", "replace")


# -- the build -------------------------------------------------------------------------------------
def _notes(vault: Path) -> list[tuple[str, dict]]:
    """(relative path, {id, timestamp, source}) of every memory note, in path order."""
    found = []
    for folder in ("memories", "inbox", "archive"):
        for path in sorted((vault / folder).glob("*.md")):
            fields = {k.decode(): v.decode("utf-8") for k, v in FIELD.findall(path.read_bytes())}
            found.append((path.relative_to(vault).as_posix(), fields))
    return found


def _ts(stamp: str) -> float:
    import datetime as dt

    return dt.datetime.fromisoformat(stamp).timestamp()


def write_logs(vault: Path, notes: list[tuple[str, dict]], chosen: str, seed: int) -> int:
    """The audit and events logs as vaultmem appends them: one JSON line an event, per device and month."""
    r = random.Random(seed)
    lines: dict[tuple[str, str, str], list[str]] = {}

    def log(device: str, kind: str, event: dict) -> None:
        month = time.strftime("%Y-%m", time.gmtime(event["ts"]))
        lines.setdefault((device, kind, month), []).append(json.dumps(event, ensure_ascii=False,
                                                                      separators=(",", ":")))

    for rel, fields in notes:
        ts, device = _ts(fields["timestamp"]), r.choice(DEVICES)
        title = rel.rsplit("/", 1)[-1].removesuffix(".md")
        log(device, "audit", {"event": "remember", "action": "created", "id": fields["id"], "title": title,
                              "ts": ts, "source": fields.get("source", "user")})
        if rel == chosen:
            for days in (3, 40):
                log(r.choice(DEVICES), "audit", {"event": "remember", "action": "merged", "id": fields["id"],
                                                 "title": title, "ts": ts + days * 86400, "source": "hermes"})
        if rel == chosen or r.random() < 0.33:
            for _ in range(12 if rel == chosen else r.randint(1, 5)):
                log(r.choice(DEVICES), "events", {"event": "access", "id": fields["id"],
                                                  "ts": round(ts + r.random() * 200 * 86400, 3)})
    total = 0
    for (device, kind, month), chunk in sorted(lines.items()):
        folder = vault / ".vaultmem" / "devices" / device
        folder.mkdir(parents=True, exist_ok=True)
        data = ("\n".join(sorted(chunk, key=lambda line: json.loads(line)["ts"])) + "\n").encode("utf-8")
        with open(folder / f"{kind}-{month}.jsonl", "ab") as handle:
            total += handle.write(data)
    return total


def _quoted(path: str) -> bytes:
    return ('"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"').encode("utf-8")


def _blob(path: str, data: bytes) -> bytes:
    return b"M 100644 inline " + _quoted(path) + b"\ndata %d\n" % len(data) + data + b"\n"


def _commit(seq: int, stamp: int, author: str, message: str, changes: list[bytes]) -> bytes:
    text = message.encode("utf-8")
    head = (f"commit refs/heads/main\nmark :{seq}\nauthor {author} {stamp} +0000\n"
            f"committer {author} {stamp} +0000\ndata {len(text)}\n").encode("utf-8") + text + b"\n"
    return head + b"".join(changes) + b"\n"


def _edited(data: bytes, seq: int, body: bool) -> bytes:
    """A hand edit: a line added to the body, or the score changed in the frontmatter."""
    if body:
        return data.rstrip(b"\n") + f"\nChecked again by hand in round {seq}.\n".encode("utf-8")
    return SCORE.sub(f"score: {1 + seq % 9}.{seq % 10}".encode("utf-8"), data, count=1)


def make_history(vault: Path, env: dict, paths: list[str], chosen: str, commits: int, seed: int) -> dict:
    """The first commit of every file git does not ignore, then `commits` commits of hand edits, through
    `git fast-import`; the edited notes' last versions are written back to the vault."""
    r = random.Random(seed + 1)
    _git(vault, env, "init", "-q", "-b", "main")
    files = [f for f in _git(vault, env, "ls-files", "-o", "--exclude-standard", "-z").split("\0") if f]
    start = int(time.mktime((2026, 11, 1, 9, 0, 0, 0, 0, 0)))
    stream = [_commit(1, start, AUTHORS[0], "the vault", [_blob(f, (vault / f).read_bytes()) for f in files])]
    current: dict[str, bytes] = {}
    every = max(1, commits // CHOSEN_COMMITS)
    chosen_body = 0
    for seq in range(2, commits + 2):
        touched = r.sample(paths, NOTES_PER_COMMIT)
        if seq % every == 0 and chosen not in touched:
            touched[0] = chosen
        changes = []
        for path in touched:
            body = path != chosen and r.random() < 0.5 or path == chosen and (seq // every) % 4 != 0
            chosen_body += path == chosen and body
            current[path] = _edited(current.get(path) or (vault / path).read_bytes(), seq, body)
            changes.append(_blob(path, current[path]))
        stream.append(_commit(seq, start + seq * COMMIT_STEP_S, AUTHORS[seq % 2], f"notes: hand edits, round {seq}",
                              changes))
    _git(vault, env, "fast-import", "--quiet", stdin=b"".join(stream))
    for path, data in current.items():
        (vault / path).write_bytes(data)
    _git(vault, env, "read-tree", "HEAD")
    subprocess.run(["git", "-C", str(vault), "update-index", "-q", "--refresh"], env=env, capture_output=True)
    return {"files_in_first_commit": len(files), "edited_notes": len(current), "chosen_body_edits": chosen_body}


def build(cache: Path, args: argparse.Namespace, env: dict) -> dict:
    """The vault in git, once: its description is kept beside it (build.json) for the next run."""
    described = cache / "build.json"
    if described.exists():
        return json.loads(described.read_text(encoding="utf-8"))
    os.environ.update(VAULTMEM_HOME=env["VAULTMEM_HOME"], VAULTMEM_DEVICE_ID=env["VAULTMEM_DEVICE_ID"])
    from _synth import make_vault
    from vaultmem import Vault

    vault, started = cache / "vault", time.perf_counter()
    make_vault(vault, args.notes, seed=args.seed)
    notes = _notes(vault)
    actives = [rel for rel, _ in notes if rel.startswith("memories/")]
    chosen, untouched = actives[len(actives) // 3], actives[2 * len(actives) // 3]
    ids = dict(notes)
    log_bytes = write_logs(vault, notes, chosen, args.seed)
    history = make_history(vault, env, [p for p in actives if p != untouched], chosen, args.commits, args.seed)
    opened = Vault(vault)
    opened.refresh()
    opened.feedback(ids[chosen]["id"], "useful", note="used in the weekly review")
    opened.pin(ids[chosen]["id"])
    opened.close()
    info = {"vault": str(vault), "notes": args.notes, "commits": args.commits + 1, "log_bytes": log_bytes,
            "chosen": {"path": chosen, "id": ids[chosen]["id"]}, "untouched": {"path": untouched,
                                                                            "id": ids[untouched]["id"]},
            **history, "build_s": round(time.perf_counter() - started, 1)}
    described.write_text(json.dumps(info, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return info


# -- the measures ------------------------------------------------------------------------------------
_PROBE = """
import json, sys, time
t0 = time.perf_counter()
from vaultmem import Vault
vault = Vault(sys.argv[1])
opened = time.perf_counter()
runs, story = [], None
for _ in range(int(sys.argv[3])):
    started = time.perf_counter()
    story = vault.why(sys.argv[2])
    runs.append(time.perf_counter() - started)
if len(sys.argv) > 4:  # --profile: one more call under cProfile, its top functions to stderr
    import cProfile, pstats
    profile = cProfile.Profile()
    profile.runcall(vault.why, sys.argv[2])
    pstats.Stats(profile, stream=sys.stderr).sort_stats("cumulative").print_stats(int(sys.argv[4]))
commits = [e["commit"] for e in story.events if e["kind"] == "commit"]
diffs = sum(1 for e in story.events if e.get("diff"))
print(json.dumps({"import_open_s": opened - t0, "runs_s": runs, "commits": commits, "diffs": diffs,
                  "git": story.git, "kinds": [e["kind"] for e in story.events]}))
"""


def time_why(vault: Path, env: dict, note_id: str, runs: int, profile: int = 0) -> dict:
    """Vault.why in a fresh process: the first (cold) call, then the p50 of `runs` more (and, with `profile`,
    one more under cProfile, whose `profile` top functions are printed)."""
    done = subprocess.run([sys.executable, "-c", _PROBE, str(vault), note_id, str(runs + 1),
                           *([str(profile)] if profile else [])], env=env, capture_output=True, text=True, check=True)
    if profile:
        print(done.stderr)
    probe = json.loads(done.stdout)
    warm = probe["runs_s"][1:]  # none with --runs 0
    return {"cold_s": round(probe["runs_s"][0], 4), "p50_s": round(statistics.median(warm), 4) if warm else None,
            "max_s": round(max(warm), 4) if warm else None, "import_open_s": round(probe["import_open_s"], 3),
            "commits": probe["commits"], "diffs": probe["diffs"], "git": probe["git"], "kinds": probe["kinds"]}


def time_cli(vault: Path, env: dict, note_id: str, runs: int) -> dict:
    """`vaultmem why ID --json` wall time (interpreter start and imports included): first and median."""
    cli = Path(sys.executable).parent / "vaultmem"
    cmd = [str(cli)] if cli.exists() else [sys.executable, "-m", "vaultmem"]
    walls = []
    for _ in range(max(1, runs)):
        started = time.perf_counter()
        done = subprocess.run([*cmd, "why", note_id, "--vault", str(vault), "--json"], env=env,
                              capture_output=True, text=True)
        walls.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise SystemExit(f"vaultmem why failed: {done.stderr[-2000:]}")
    json.loads(done.stdout)
    return {"first_s": round(walls[0], 3), "median_s": round(statistics.median(walls), 3)}


def check_story(vault: Path, env: dict, path: str, told: dict) -> dict:
    """The story's commits against `git log --follow` of the note (newest first there, oldest first here)."""
    logged = _git(vault, env, "log", "--follow", "--format=%H", "--", path).split()
    expected = [sha[:12] for sha in reversed(logged)][-100:]
    return {"git_log_commits": len(logged), "story_commits": len(told["commits"]),
            "same_commits": told["commits"] == expected, "commits_with_a_diff": told["diffs"]}


def run(args: argparse.Namespace) -> dict:
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    env = _env(cache)
    load_start = os.getloadavg()
    info = build(cache, args, env)
    vault = Path(info["vault"])
    figures: dict = {"notes": info["notes"], "commits": info["commits"], "build": info, "target_s": TARGET_S}
    for name in ("chosen", "untouched"):
        told = time_why(vault, env, info[name]["id"], args.runs, args.profile if name == "chosen" else 0)
        figures[name] = {**{k: v for k, v in told.items() if k not in ("commits", "kinds")},
                         "events": len(told["kinds"]), **check_story(vault, env, info[name]["path"], told),
                         "load_avg_1m": round(os.getloadavg()[0], 2)}
    figures["cli"] = {**time_cli(vault, env, info["chosen"]["id"], args.runs),
                      "load_avg_1m": round(os.getloadavg()[0], 2)}
    figures["load_avg_start"], figures["load_avg_end"] = load_start, os.getloadavg()
    return figures


def _verdict(seconds: float, at_scale: bool) -> str:
    return "-" if not at_scale else ("ok" if seconds <= TARGET_S else "MISS")


def _seconds(value: float | None) -> str:
    return f"{'-':>9}" if value is None else f"{value:>9.3f}"


def print_table(f: dict) -> None:
    at_scale = f["notes"] >= TARGET_NOTES and f["commits"] > TARGET_COMMITS
    print(f"\nvaultmem why: {f['notes']:,} notes, {f['commits']:,} commits in git, audit and events logs "
          f"{f['build']['log_bytes'] / 1e6:.1f} MB; target ≤ {TARGET_S} s at {TARGET_NOTES // 1000}k notes and "
          f"{TARGET_COMMITS // 1000}k commits")
    print(f"{'':<44}{'cold':>9}{'p50':>9}{'max':>9}  target  load")
    for name, label in (("chosen", "Vault.why, the note of ~20 commits"), ("untouched", "Vault.why, a note of 1 commit")):
        w = f[name]
        print(f"{label:<44}{w['cold_s']:>9.3f}{_seconds(w['p50_s'])}{_seconds(w['max_s'])}  "
              f"{_verdict(w['cold_s'], at_scale):<6}  {w['load_avg_1m']:.2f}")
        print(f"  {w['git']}; {w['events']} events; commits {w['story_commits']} = git log's "
              f"{w['git_log_commits']}: {'yes' if w['same_commits'] else 'NO'}; {w['commits_with_a_diff']} with a "
              f"body diff; import + open {w['import_open_s']:.3f} s")
    cli = f["cli"]
    print(f"{'vaultmem why ID --json (wall, first / median)':<44}{cli['first_s']:>9.3f}{cli['median_s']:>9.3f}"
          f"{'':>9}  {_verdict(cli['median_s'], at_scale):<6}  {cli['load_avg_1m']:.2f}")
    print(f"load average at start {', '.join(f'{x:.2f}' for x in f['load_avg_start'])}, at end "
          f"{', '.join(f'{x:.2f}' for x in f['load_avg_end'])} on {os.cpu_count()} cores")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--notes", type=int, default=TARGET_NOTES, help=f"memory notes (default {TARGET_NOTES})")
    p.add_argument("--commits", type=int, default=TARGET_COMMITS,
                   help=f"commits after the first (default {TARGET_COMMITS})")
    p.add_argument("--runs", type=int, default=5,
                   help="timed runs after the cold one (default 5; 0: the cold one alone, and one CLI run)")
    p.add_argument("--profile", type=int, default=0, metavar="N",
                   help="also profile one why of the chosen note (cProfile) and print its N top functions")
    run_options(p, "why", "200 notes, 50 commits, 3 runs: for CI")
    args = p.parse_args(argv)
    if args.smoke:
        args.notes, args.commits, args.runs = 200, 50, 3
        smoke_cache(args, "vaultmem-why-")
    args.cache = args.cache or f"/tmp/vaultmem-bench/why-{args.notes}-{args.commits}-s{args.seed}"
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    finish(args, run(args), print_table)


if __name__ == "__main__":
    main()
