"""Compare benchmark: two revisions of vaultmem on the same seeded vaults, alternately, in one table.

    python bench/compare.py main                                 # main against the working tree as it is
    python bench/compare.py a6b25e6 c0f8b21 --notes 10000 --rounds 2 --json bench/out/compare.json
    python bench/compare.py main --figures recall,cli_recall_s   # groups or single figures
    python bench/compare.py --smoke                              # the working tree against itself: CI

Decisions (bench/README.md says the same for users):
- BASE and HEAD are anything `git rev-parse` takes, or `worktree`: the working tree as it is, uncommitted
  changes included, labelled `worktree <sha>+dirty` when vaultmem/, pyproject.toml or templates/ differ
  from HEAD. HEAD defaults to `worktree`. A commit is checked out with `git worktree add --detach` to
  CACHE/<sha>/src and installed (`pip install -e`, plus the `mcp` extra when the mcp figure is asked
  for and the commit has that extra) into CACHE/<sha>/venv; the working tree gets CACHE/worktree-<hash of
  its path>/venv with an editable install of this checkout (or --worktree-python). Both are reused.
- The measuring code is always this checkout's: every measurement is a phase of bench/_compare_phases.py run
  by the side's interpreter, from a neutral folder (no checkout), PYTHONPATH and VAULTMEM_* unset, a fresh
  VAULTMEM_HOME per process. Phases use the public API only (Vault, Vault.init, refresh, recall,
  remember, index.snapshot/info, the `vaultmem` and `vaultmem-mcp` console scripts), and each reports
  the vaultmem it imported: a run that imported vaultmem from outside the side's tree is refused (exit 1).
- Vaults: each side builds its own with its own `Vault.init`, the notes written by this checkout's
  bench/_synth.py (the same seed: the same notes); the note files are hashed on both sides and the
  table says whether they are byte-identical (exit 1 when not). Built vaults are cached under
  CACHE/<code id>/vaults/ (the code id is the sha, plus a hash of the diff for a dirty working tree,
  whose older dirty vaults of the same name are deleted), with a copy of `.vaultmem/` as built and as
  first indexed: every run restores the state it needs (cold index: as built; recall, CLI, MCP:
  indexed), so access logs written by one run never reach the next. The first index of a new vault
  waits until its newest note is RACY_WAIT_S old (coarse file-system clocks would make notes written
  just before look changed to the next refresh).
- Alternation: each round runs every selected group for base, then head, each phase in a fresh
  process; a figure is the median over rounds (over the repeats within a run first: 3 no-change
  refreshes, 5 CLI commands, 3 MCP starts). Every phase process records the load average and a
  2M-step pure-Python loop (the yardstick) timed right before its work and again right after it, and
  its CPU seconds over its wall seconds (busy): printed per side as min-max, so a noisy run shows
  itself. Figures are printed, never judged.
- A group that fails on one side prints n/a with the reason below the table; a side that fails
  entirely (no venv, no vault, every run failed) exits 1. The agent group always uses AGENT_NOTES
  notes and AGENT_TURNS turns, prefetching with `recall` (old commits have no `context`).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
from _compare_phases import AGENT_BLOCK  # noqa: E402
from _figures import write_figures  # noqa: E402
from recall import run_json_process  # noqa: E402

WORKTREE = "worktree"
CODE_PATHS = ("vaultmem", "pyproject.toml", "templates")  # what is measured: a change here makes a tree dirty
FIGURES = {  # name: (group, decimals)
    "recall_p50_ms": ("recall", 3), "recall_p99_ms": ("recall", 3), "faults_per_recall": ("recall", 1),
    "rss_loaded_mb": ("recall", 1),
    "index_cold_s": ("index", 2), "refresh_s": ("index", 3), "sidecar_kb_per_1k": ("index", 1),
    "peak_rss_index_mb": ("index", 1),
    "cli_recall_s": ("cli", 3), "cli_recall_no_refresh_s": ("cli", 3), "import_s": ("cli", 3),
    "batch_s": ("batch", 2), "batch_duplicates_left": ("batch", 0),
    "agent_last_over_first": ("agent", 3), "agent_recall_p50_ms": ("agent", 3), "agent_remember_p50_ms": ("agent", 3),
    "mcp_first_answer_s": ("mcp", 3),
}
GROUPS = ("index", "recall", "cli", "mcp", "agent", "batch")  # the order within a round (index first: it indexes)
CHEAP_NOTES = 20_000  # above this the batch (it writes --notes memories) runs only when asked for
AGENT_NOTES, AGENT_TURNS = 2000, 3000
REPEATS = {"refresh": 3, "cli": 5, "mcp": 3}
SMOKE = {"notes": 200, "queries": 50, "agent_notes": 100, "agent_turns": 60, "repeats": 1}
RACY_WAIT_S = 3.0
PHASE_TIMEOUT_S, GIT_TIMEOUT_S, PIP_TIMEOUT_S = 3600, 120, 1200


# -- the two sides: a revision, its tree and its interpreter ---------------------------------------
class SideFailed(Exception):
    """A side cannot be measured at all (no checkout, no venv, no vault)."""


class WrongTree(Exception):
    """A phase imported vaultmem from outside its side's tree."""


@dataclass
class Side:
    """One revision under measurement."""

    role: str
    rev: str
    sha: str
    subject: str
    label: str
    code_id: str  # names its vault cache: the sha, plus a hash of the diff for a dirty working tree
    tree: Path = REPO
    python: Path | None = None
    info: dict = field(default_factory=dict)


def _git(*args: str, cwd: Path = REPO) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True,
                          timeout=GIT_TIMEOUT_S).stdout.strip()


def _dirty_hash() -> str:
    """A short hash of the working tree's uncommitted changes to the measured code ("" when clean)."""
    status = _git("status", "--porcelain", "--untracked-files=all", "--", *CODE_PATHS)
    if not status:
        return ""
    digest = hashlib.sha1((status + _git("diff", "HEAD", "--binary", "--", *CODE_PATHS)).encode())
    for line in status.splitlines():
        if line.startswith("??"):
            digest.update((REPO / line[3:]).read_bytes())
    return digest.hexdigest()[:8]


def resolve(role: str, rev: str) -> Side:
    """The side for a revision (`worktree`: the working tree as it is)."""
    try:
        sha = _git("rev-parse", "--verify", "--quiet", f"{'HEAD' if rev == WORKTREE else rev}^{{commit}}")
    except subprocess.CalledProcessError:
        raise SystemExit(f"compare: {rev} is not a commit of {REPO}") from None
    subject = _git("log", "-1", "--format=%s", sha)
    if rev != WORKTREE:
        return Side(role, rev, sha, subject, sha[:7], sha[:12])
    dirty = _dirty_hash()
    return Side(role, rev, sha, subject, f"worktree {sha[:7]}{'+dirty' if dirty else ''}",
                sha[:12] + (f"+dirty-{dirty}" if dirty else ""))


def _checkout(tree: Path, sha: str) -> None:
    """`git worktree add --detach` of sha at tree, or the one left there by an earlier run (if clean)."""
    if (tree / ".git").exists():
        if _git("rev-parse", "HEAD", cwd=tree) != sha or _git("status", "--porcelain", cwd=tree):
            raise SideFailed(f"{tree} is not a clean checkout of {sha[:12]}: remove it (git worktree remove)")
        return
    if f"worktree {tree}\n" in _git("worktree", "list", "--porcelain") + "\n":
        _git("worktree", "prune")  # the cache was deleted by hand: git still has it, and refuses to add it again
    _git("worktree", "add", "--detach", str(tree), sha)


def _venv(where: Path, tree: Path, extras: list[str]) -> Path:
    """A venv at `where` with an editable install of tree[extras], reused when its record matches."""
    record = where / "vaultmem-compare.json"
    wanted = {"tree": str(tree), "extras": extras,
              "pyproject": hashlib.sha1((tree / "pyproject.toml").read_bytes()).hexdigest()}
    python = where / "bin" / "python"
    if python.exists() and record.exists() and json.loads(record.read_text()) == wanted:
        return python
    print(f"  installing {tree}{'[' + ','.join(extras) + ']' if extras else ''} into {where}", flush=True)
    try:
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, capture_output=True, timeout=300)
        target = f"{tree}[{','.join(extras)}]" if extras else str(tree)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "-e", target], check=True, capture_output=True,
                       text=True, timeout=PIP_TIMEOUT_S)
    except subprocess.CalledProcessError as exc:
        raise SideFailed(f"installing {tree} failed: {(exc.stderr or '').strip()[-800:]}") from None
    record.write_text(json.dumps(wanted))
    return python


def prepare(side: Side, cache: Path, groups: list[str], worktree_python: str | None) -> None:
    """Check out and install the side (or take the given interpreter for the working tree)."""
    if side.rev == WORKTREE and worktree_python:
        side.python = Path(worktree_python)
        return
    if side.rev == WORKTREE:
        home = cache / f"worktree-{hashlib.sha1(str(REPO).encode()).hexdigest()[:8]}"
    else:
        home = cache / side.sha[:12]
        side.tree = home / "src"
        _checkout(side.tree, side.sha)
    declared = tomllib.loads((side.tree / "pyproject.toml").read_text()).get("project", {})
    extras = ["mcp"] if "mcp" in groups and "mcp" in declared.get("optional-dependencies", {}) else []
    side.python = _venv(home / "venv", side.tree, extras)


# -- running phases and keeping vault states -------------------------------------------------------
@dataclass
class Context:
    """Where this run keeps its work, and how a phase process is started."""

    cache: Path
    scratch: Path  # this run's temporary folder: the neutral cwd, each process's VAULTMEM_HOME, the inputs
    seed: int
    started: int = 0

    def env(self, side: Side) -> dict:
        """The environment of a phase: nothing that points at another tree, a fresh VAULTMEM_HOME."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULTMEM_", "PYTHON"))
               and k not in ("OBSIDIAN_VAULT_PATH", "VIRTUAL_ENV")}
        self.started += 1
        bin_dir = Path(side.python).parent
        env.update(VAULTMEM_HOME=str(self.scratch / "home" / str(self.started)), VAULTMEM_DEVICE_ID="bench-0001",
                   PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}")
        if (bin_dir.parent / "pyvenv.cfg").exists():
            env["VIRTUAL_ENV"] = str(bin_dir.parent)
        return env

    def phase(self, side: Side, name: str, spec: dict, watch_tree: bool = False) -> dict:
        """Run a phase (bench/_compare_phases.py) with the side's interpreter; refuse one whose vaultmem
        came from another tree."""
        cmd = [str(side.python), str(BENCH / "_compare_phases.py"), name, json.dumps(spec)]
        done = run_json_process(cmd, self.env(side), cwd=self.scratch / "cwd", watch_tree=watch_tree,
                                timeout=PHASE_TIMEOUT_S)
        imported = Path(done["vaultmem_file"]).resolve()
        if not imported.is_relative_to(side.tree.resolve()):
            raise WrongTree(f"{side.role} {side.label}: phase {name} imported vaultmem from {imported}, "
                            f"not from {side.tree}")
        return done


@dataclass
class Built:
    """A cached vault of one side: vault/, build.json, and `.vaultmem/` copies as built and as first indexed."""

    folder: Path

    @property
    def path(self) -> Path:
        return self.folder / "vault"

    def restore(self, state: str) -> None:
        shutil.rmtree(self.path / ".vaultmem")
        shutil.copytree(self.folder / f"state-{state}", self.path / ".vaultmem", symlinks=True)

    def save(self, state: str) -> None:
        """Keep `.vaultmem/` as it is now as `state`, unless kept already."""
        if not (self.folder / f"state-{state}").exists():
            shutil.copytree(self.path / ".vaultmem", self.folder / f"state-{state}.tmp", symlinks=True)
            (self.folder / f"state-{state}.tmp").rename(self.folder / f"state-{state}")


def _vault_folder(ctx: Context, side: Side, notes: int) -> Path:
    """A vault's cache folder: by the side's code, the size, the seed and the generator's own hash."""
    synth = hashlib.sha1((BENCH / "_synth.py").read_bytes()).hexdigest()[:8]
    return ctx.cache / side.code_id / "vaults" / f"n{notes}-s{ctx.seed}-{synth}"


def build(ctx: Context, side: Side, name: str, notes: int) -> tuple[Built, dict]:
    """The side's vault `name` of `notes` notes: cached, else built now (its build info beside it)."""
    built = Built(_vault_folder(ctx, side, notes))
    record = built.folder / "build.json"
    if record.exists():
        return built, json.loads(record.read_text())
    if "+dirty-" in side.code_id:  # an older diff's vault of the same name: not wanted again
        for stale in ctx.cache.glob(f"{side.code_id.split('+')[0]}+dirty-*/vaults/{built.folder.name}"):
            shutil.rmtree(stale, ignore_errors=True)
            for parent in (stale.parent, stale.parent.parent):
                with contextlib.suppress(OSError):
                    parent.rmdir()  # when empty
    shutil.rmtree(built.folder, ignore_errors=True)
    built.folder.mkdir(parents=True)
    print(f"  building {name} vault of {notes:,} notes for {side.role} {side.label}", flush=True)
    try:
        info = ctx.phase(side, "build", {"vault": str(built.path), "notes": notes, "seed": ctx.seed})["extra"]
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        raise SideFailed(f"building the {name} vault failed: {str(exc).strip()[-800:]}") from None
    built.save("built")
    time.sleep(RACY_WAIT_S)
    record.write_text(json.dumps(info))
    return built, info


def indexed(ctx: Context, side: Side, built: Built, notes: int) -> Built:
    """The vault restored to its first indexed state (indexed now, untimed, if never yet)."""
    if not (built.folder / "state-indexed").exists():
        built.restore("built")
        ctx.phase(side, "index", {"vault": str(built.path), "notes": notes})
        built.save("indexed")
    built.restore("indexed")
    return built


# -- the groups: what one run of a group does for one side ----------------------------------------
@dataclass
class Plan:
    """What this comparison measures and with which inputs."""

    notes: int
    queries: int
    groups: list[str]
    shown: list[str]  # the figures in the table
    rounds: int
    repeats: dict
    agent_notes: int
    agent_turns: int
    vaults: dict = field(default_factory=dict)  # (role, name) -> Built


def run_group(ctx: Context, plan: Plan, side: Side, group: str) -> list[dict]:
    """One run of a group for one side: every phase process it takes, in order."""
    main = plan.vaults.get((side.role, "main"))
    spec = {"vault": str(main.path) if main else "", "notes": plan.notes}
    if group == "index":
        main.restore("built")
        done = [ctx.phase(side, "index", spec, watch_tree=True)]
        main.save("indexed")
        return done + [ctx.phase(side, "refresh", spec) for _ in range(plan.repeats["refresh"])]
    if group in ("recall", "cli", "mcp"):
        indexed(ctx, side, main, plan.notes)
        extra = {"queries": str(ctx.scratch / "queries.json"), "runs": plan.repeats.get(group, 1)}
        return [ctx.phase(side, group, {**spec, **extra})]
    work = ctx.scratch / f"{group}-{side.role}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        if group == "batch":
            return [ctx.phase(side, "batch", {"work": str(work), "items": str(ctx.scratch / "batch.jsonl"),
                                              "markers": str(ctx.scratch / "markers.json")})]
        agent = indexed(ctx, side, plan.vaults[(side.role, "agent")], plan.agent_notes)
        shutil.copytree(agent.path, work / "vault", symlinks=True)
        return [ctx.phase(side, "agent", {"vault": str(work / "vault"), "items": str(ctx.scratch / "agent.json")})]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _combine(processes: list[dict]) -> tuple[dict, dict]:
    """A run's figures (the median where several processes report one) and its n/a reasons."""
    values: dict[str, list[float]] = {}
    na: dict[str, str] = {}
    for done in processes:
        for key, value in done.get("figures", {}).items():
            if value is not None:
                values.setdefault(key, []).append(value)
        na.update(done.get("na", {}))
    return {k: statistics.median(v) for k, v in values.items()}, na


def measure(ctx: Context, plan: Plan, sides: list[Side]) -> list[dict]:
    """Every round: every group for base, then head, each phase in a fresh process."""
    runs = []
    for round_ in range(1, plan.rounds + 1):
        for group in plan.groups:
            for side in sides:
                print(f"round {round_}/{plan.rounds}: {group} for {side.role} {side.label}", flush=True)
                run = {"round": round_, "group": group, "side": side.role}
                try:
                    processes = run_group(ctx, plan, side, group)
                except (RuntimeError, subprocess.TimeoutExpired, ValueError) as exc:  # not WrongTree: it stops all
                    reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
                    processes, run["error"] = [], reason[:300]
                run["figures"], run["na"] = _combine(processes)
                runs.append(run | {"processes": processes})
    return runs


# -- setting up: sides, vaults, inputs ---------------------------------------------------------------
def set_up(ctx: Context, plan: Plan, sides: list[Side], worktree_python: str | None) -> dict:
    """Install both sides, build (or find) their vaults, write the shared inputs; returns the note check."""
    for side in sides:
        print(f"{side.role}: {side.label}  {side.subject[:70]}", flush=True)
        try:
            prepare(side, ctx.cache, plan.groups, worktree_python)
            side.info = ctx.phase(side, "probe", {})["extra"]
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError, RuntimeError) as exc:
            detail = f"{exc} {getattr(exc, 'stderr', '') or ''}".strip()[-800:]
            raise SideFailed(f"{side.role} {side.label}: {detail}") from None
    names = [("main", plan.notes)] if set(plan.groups) & {"index", "recall", "cli", "mcp"} else []
    names += [("agent", plan.agent_notes)] if "agent" in plan.groups else []
    check, builds = {}, {}
    for name, notes in names:
        for side in sides:
            plan.vaults[(side.role, name)], builds[(side.role, name)] = build(ctx, side, name, notes)
        if any(c["notes"] == notes for c in check.values()):
            continue  # the same vault as the main one
        digests = {side.role: builds[(side.role, name)]["digest"] for side in sides}
        check[name] = {"notes": notes, "identical": len(set(digests.values())) == 1, "sha256": digests,
                       "note_files": {s.role: builds[(s.role, name)]["note_files"] for s in sides}}
    spec: dict = {"dir": str(ctx.scratch), "seed": ctx.seed}
    if ("base", "main") in plan.vaults:
        spec.update(queries=plan.queries, main_build=str(plan.vaults[("base", "main")].folder / "build.json"))
    if "agent" in plan.groups:
        spec.update(agent_turns=plan.agent_turns,
                    agent_build=str(plan.vaults[("base", "agent")].folder / "build.json"))
    if "batch" in plan.groups:
        spec["batch_notes"] = plan.notes
    ctx.phase(sides[0], "inputs", spec)
    return check


# -- the report --------------------------------------------------------------------------------------
def summarise(plan: Plan, sides: list[Side], runs: list[dict]) -> dict:
    """Per figure: each side's median over its runs, the runs, the ratio of the medians and the ratio of
    each round's pair (base and head measured one after the other); per side: yardstick, load, busy."""
    figures, na = {}, {}
    for name in plan.shown:
        row, by_round = {}, {}
        for side in sides:
            mine = [r for r in runs if r["side"] == side.role and r["group"] == FIGURES[name][0]]
            values = [r["figures"][name] for r in mine if name in r["figures"]]
            row[side.role] = statistics.median(values) if values else None
            row[f"{side.role}_runs"] = values
            by_round[side.role] = {r["round"]: r["figures"][name] for r in mine if name in r["figures"]}
            reasons = {r["na"].get(name) or r.get("error") for r in mine if name not in r["figures"]} - {None}
            if reasons or not values:
                why = "; ".join(sorted(reasons)) or ("not reported" if mine else "not run")
                na.setdefault(name, {})[side.role] = why
        base, head = row["base"], row["head"]
        row["ratio"] = head / base if base and head is not None else None
        row["round_ratios"] = [by_round["head"][k] / v for k, v in sorted(by_round["base"].items())
                               if v and k in by_round["head"]]
        figures[name] = row
    machine = {}
    for side in sides:
        procs = [p for r in runs if r["side"] == side.role for p in r["processes"]]
        machine[side.role] = {"yardstick_s": [v for p in procs for v in p["yardstick_s"]],
                              "load_avg": [v for p in procs for v in p["load_avg"]],
                              "busy": [p["busy"] for p in procs],
                              "vaultmem": sorted({str(Path(p["vaultmem_file"]).parent) for p in procs})}
    return {"figures": figures, "na": na, "per_side": machine}


def _cell(value: float | None, decimals: int) -> str:
    return "n/a" if value is None else f"{value:,.{decimals}f}"


def _spread(values: list[float], digits: int) -> str:
    return f"{min(values):.{digits}f}–{max(values):.{digits}f}" if values else "-"


def print_table(report: dict) -> None:
    """The header (both revisions, the machine, the note check), the figures, the noise, the n/a reasons."""
    sides, per_side = report["sides"], report["summary"]["per_side"]
    print(f"\nvaultmem compare: {report['notes']:,} notes (seed {report['seed']}), {report['queries']} queries, "
          f"{report['rounds']} round(s) alternating base/head; {report['total_s']:.0f} s")
    for role, side in sides.items():
        print(f"{role:<5} {side['label']:<22} {side['subject'][:80]}")
        print(f"      python {side['python']}, numpy {side['numpy']}: {side['interpreter']}")
    print(f"machine: {report['machine']['platform']}, {report['machine']['cpus']} cpus")
    for name, check in report["notes_check"].items():
        state = "byte-identical on both sides" if check["identical"] else "DIFFER between the sides"
        print(f"{name} vault: {check['notes']:,} notes, {check['note_files']['base']:,} note files {state} "
              f"(sha256 {check['sha256']['base'][:12]}…)")
    print(f"\n{'figure':<26}{'base':>14}{'head':>14}{'head/base':>11}   by round")
    for name, row in report["summary"]["figures"].items():
        decimals = FIGURES[name][1]
        ratio = "-" if row["ratio"] is None else f"{row['ratio']:.2f}"
        rounds = _spread(row["round_ratios"], 2) if len(row["round_ratios"]) > 1 else ""
        print(f"{name:<26}{_cell(row['base'], decimals):>14}{_cell(row['head'], decimals):>14}{ratio:>11}   {rounds}")
    for key, label, digits in (("yardstick_s", "yardstick (2M loop, s)", 3), ("load_avg", "load average (1 min)", 2),
                               ("busy", "busy (cpu/wall of work)", 2)):
        print(f"{label:<26}" + "".join(f"{_spread(per_side[r][key], digits):>14}" for r in ("base", "head")))
    for role in ("base", "head"):
        print(f"{role} measured vaultmem from {', '.join(per_side[role]['vaultmem']) or '-'}")
    missing: dict[tuple[str, str], list[str]] = {}  # (side, reason) -> figures
    for name, reasons in report["summary"]["na"].items():
        for role, reason in reasons.items():
            missing.setdefault((role, reason), []).append(name)
    for (role, reason), names in missing.items():
        print(f"n/a {', '.join(names)} ({role}): {reason}")
    for remark in report["remarks"]:
        print(remark)


def parse_figures(text: str | None, notes: int, smoke: bool) -> tuple[list[str], list[str], list[str]]:
    """(groups to run, figures to show, remarks) from --figures (groups or figure names)."""
    remarks = []
    if text is None:
        groups = list(GROUPS) if smoke or notes <= CHEAP_NOTES else [g for g in GROUPS if g != "batch"]
        if "batch" not in groups:
            remarks.append(f"batch left out above {CHEAP_NOTES:,} notes (it writes them all): ask with --figures batch")
        return groups, [f for f, (g, _) in FIGURES.items() if g in groups], remarks
    wanted = [w.strip() for w in text.split(",") if w.strip()]
    unknown = [w for w in wanted if w not in GROUPS and w not in FIGURES]
    if unknown:
        raise SystemExit(f"unknown figure(s) {', '.join(unknown)}; groups: {', '.join(GROUPS)}; "
                         f"figures: {', '.join(FIGURES)}")
    shown = [f for f, (g, _) in FIGURES.items() if f in wanted or g in wanted]
    return [g for g in GROUPS if any(FIGURES[f][0] == g for f in shown)], shown, remarks


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("base", nargs="?", help="the revision compared against (what git rev-parse takes, or worktree)")
    p.add_argument("head", nargs="?", default=WORKTREE, help="the revision measured (default: the working tree)")
    p.add_argument("--notes", type=int, default=10_000, help="memory notes in the vault (default 10000)")
    p.add_argument("--queries", type=int, default=1000, help="timed recall queries (default 1000)")
    p.add_argument("--figures", help=f"comma-separated groups ({', '.join(GROUPS)}) or figure names "
                                     f"(default: every group, the batch only up to {CHEAP_NOTES:,} notes)")
    p.add_argument("--rounds", type=int, default=2, help="base-then-head rounds (default 2)")
    p.add_argument("--seed", type=int, default=0, help="generator seed")
    p.add_argument("--cache", help="checkouts, venvs and vaults (default /tmp/vaultmem-compare)")
    p.add_argument("--worktree-python", help="the interpreter for a worktree side (it must import this checkout's "
                                             "vaultmem) instead of a cached venv")
    p.add_argument("--json", help="write everything (per-run values included) to this JSON file")
    p.add_argument("--smoke", action="store_true", help=f"{SMOKE['notes']} notes, {SMOKE['queries']} queries, one "
                   "round, the working tree against itself with this interpreter, a throwaway cache: for CI")
    args = p.parse_args(argv)
    if args.smoke:
        args.base, args.rounds = args.base or WORKTREE, 1
        args.notes, args.queries = SMOKE["notes"], SMOKE["queries"]
        args.worktree_python = args.worktree_python or sys.executable
    elif args.base is None:
        p.error("give BASE (e.g. main)")
    return args


def _plan(args: argparse.Namespace) -> tuple[Plan, list[str]]:
    groups, shown, remarks = parse_figures(args.figures, args.notes, args.smoke)
    small = args.smoke
    repeats = {k: SMOKE["repeats"] if small else v for k, v in REPEATS.items()}
    return Plan(args.notes, args.queries, groups, shown, args.rounds, repeats,
                SMOKE["agent_notes"] if small else AGENT_NOTES, SMOKE["agent_turns"] if small else AGENT_TURNS), remarks


def _side_record(side: Side) -> dict:
    return {"rev": side.rev, "sha": side.sha, "subject": side.subject, "label": side.label, "tree": str(side.tree),
            "interpreter": str(side.python), "python": side.info.get("python"), "numpy": side.info.get("numpy")}


def compare(args: argparse.Namespace) -> int:
    """Set up, measure, print, write the JSON; returns the exit code."""
    started = time.perf_counter()
    cache = Path(args.cache or (tempfile.mkdtemp(prefix="vaultmem-compare-smoke-") if args.smoke
                                else "/tmp/vaultmem-compare")).resolve()
    if cache.is_relative_to(REPO):
        raise SystemExit(f"--cache {cache} is inside this checkout: its trees would pass for this one")
    plan, remarks = _plan(args)
    sides = [resolve("base", args.base), resolve("head", args.head)]
    scratch = Path(tempfile.mkdtemp(prefix="vaultmem-compare-run-"))
    (scratch / "cwd").mkdir()
    ctx = Context(cache, scratch, args.seed)
    try:
        check = set_up(ctx, plan, sides, args.worktree_python)
        runs = measure(ctx, plan, sides)
    except (SideFailed, WrongTree) as exc:
        print(f"compare: {exc}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if args.smoke and not args.cache:
            shutil.rmtree(cache, ignore_errors=True)
    summary = summarise(plan, sides, runs)
    failed = [s.role for s in sides if not any(r["figures"] for r in runs if r["side"] == s.role)]
    differ = [name for name, c in check.items() if not c["identical"]]
    remarks += [f"{role} failed entirely" for role in failed]
    remarks += [f"the {name} vault's notes differ between the sides: the comparison is void" for name in differ]
    report = {"notes": plan.notes, "seed": args.seed, "queries": plan.queries, "rounds": plan.rounds,
              "groups": plan.groups,
              "agent": {"notes": plan.agent_notes, "turns": plan.agent_turns, "block": AGENT_BLOCK},
              "sides": {s.role: _side_record(s) for s in sides}, "notes_check": check,
              "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version()},
              "summary": summary, "runs": runs, "remarks": remarks, "cache": str(cache),
              "total_s": round(time.perf_counter() - started, 1)}
    print_table(report)
    write_figures(args.json, report)
    return 1 if failed or differ else 0


def main(argv: list[str] | None = None) -> None:
    """Entry point."""
    raise SystemExit(compare(parse_args(argv)))


if __name__ == "__main__":
    main()
