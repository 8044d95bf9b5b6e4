"""Side by side: vaultmem, ripgrep, basic-memory and agentcairn on the same generated vault.

    python bench/peers.py --json bench/out/peers-2k.json                 # 2,000 notes, every tool
    python bench/peers.py --notes 10000 --peers vaultmem,rg,agentcairn   # 10k, the peers that cope
    python bench/peers.py --smoke                  # 200 notes, vaultmem and rg only, installs nothing

The vault comes from bench/_synth.py; every tool gets its own copy, so one tool's writes never
reach another's measurement. The peers are installed by this script into throwaway venvs
(--venvs DIR keeps and reuses them) with their state under a throwaway HOME; nothing but the
package registries is reached (HF_HUB_OFFLINE=1, no update checks, no analytics). basic-memory
needs Python >= 3.12: --peer-python, else python3.1x on PATH, else ~/.pyenv/versions/3.1x.

Figures per tool, each the wall time of a fresh process (interpreter start and imports
included, as a user or an agent's hook waits for it) unless it says otherwise:
  index_s        first index of the copy (no state at all)
  refresh_s      re-index with nothing changed (median of 3)
  edit_refresh_s re-index after the benchmark appended a sentence to one note (median of 3 notes)
  cli_search_s   one search from the command line (median of 3 text queries)
  warm_p50_ms / warm_p95_ms  one search in a process that already has the index open (ripgrep
                 has no such mode: its figures are whole `rg` runs with the files in page cache)
  files_touched  notes and other files the tool created, changed, deleted or chmod-ed, found by
                 hashing every file of its copy before and after (its own state folder excepted)
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import glob
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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

SCRIPT = Path(__file__).resolve()
ALL_TOOLS = ("vaultmem", "rg", "basic-memory", "agentcairn")
FIGURES = ("index_s", "refresh_s", "edit_refresh_s", "cli_search_s", "warm_p50_ms", "warm_p95_ms")
TARGETS = {"index_s": 100, "cli_search_s": 10, "warm_p50_ms": 20}  # vaultmem's speed-up over basic-memory
REPEATS = 3
EDIT_MARKERS = ("quokkazebra", "wombatheron", "lemurotter")  # one unique word per edited note
INSTALL_TIMEOUT_S = 1800
CLI_TIMEOUT_S = 300
BM_PROJECT = "bench"
BM_PACKAGES = ("basic-memory",)
# agentcairn's BM25 needs DuckDB's fts extension, which DuckDB downloads at run time from its own
# host (unreachable here); duckdb-ext-fts ships it on PyPI for one DuckDB release.
AC_PACKAGES = ("agentcairn", "duckdb==1.4.4", "duckdb-ext-fts==1.4.4.20260205")
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "DO_NOT_TRACK": "1",
               "BASIC_MEMORY_NO_PROMOS": "1", "BASIC_MEMORY_AUTO_UPDATE": "false"}


class StepFailed(RuntimeError):
    """A measured command failed or timed out; the message says why."""


@dataclass
class Tool:
    """How to index, refresh and search one vault copy with one tool (commands take the copy's path)."""

    key: str
    label: str
    version: str
    env: dict
    state: tuple[str, ...] = ()  # the tool's own folders inside the vault: not counted as touched
    index: Callable[[Path], list[str]] | None = None
    refresh: Callable[[Path], list[str]] | None = None
    search: Callable[[Path, dict], list[str]] | None = None
    search_ok: tuple[int, ...] = (0,)  # exit codes of a search that worked (grep's 1 is "no match")
    warm: Callable[[Path, Path], list[str]] | None = None  # (copy, queries file): prints JSON timings
    notes: list[str] = field(default_factory=list)
    error: str | None = None  # set when the tool could not be set up at all


# -- running commands ------------------------------------------------------------------------------
def _run(cmd: list[str], env: dict, timeout: float, cwd: Path | None = None, ok=(0,)) -> tuple[float, str]:
    """Run a command; returns (wall seconds, stdout). Raises StepFailed on timeout or a bad exit code."""
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        raise StepFailed(f"timed out after {timeout:.0f} s: {' '.join(cmd)}") from None
    except OSError as exc:
        raise StepFailed(f"cannot run {cmd[0]}: {exc}") from None
    wall = time.perf_counter() - start
    if proc.returncode not in ok:
        tail = (proc.stderr.strip() or proc.stdout.strip())[-1500:]
        raise StepFailed(f"exit {proc.returncode}: {' '.join(cmd)}\n{tail}")
    return wall, proc.stdout


def _last_json(stdout: str) -> dict:
    """The JSON object on the last line of a driver's output."""
    return json.loads(stdout.strip().splitlines()[-1])


def _percentile(values: list[float], q: float) -> float:
    """The q-th percentile (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


# -- warm drivers: run inside a tool's own interpreter as `peers.py --_driver NAME` ----------------
def _timed(queries: list[dict], marker: str, search: Callable[[dict], int]) -> dict:
    """One untimed search for the last edit's marker word, then every query timed alone."""
    found = search({"text": marker, "tags": []}) > 0
    ms, empty = [], 0
    for q in queries:
        start = time.perf_counter()
        hits = search(q)
        ms.append((time.perf_counter() - start) * 1000)
        empty += hits == 0
    return {"ms": ms, "empty": empty, "marker_found": found}


def driver_vaultmem_refresh(vault: str, _queries: list[dict], _marker: str) -> dict:
    """Vault(path).refresh(); the in-process seconds (the caller also times the whole process)."""
    from vaultmem import Vault

    start = time.perf_counter()
    v = Vault(vault)
    stats = v.refresh()
    seconds = time.perf_counter() - start
    v.close()
    return {"seconds": seconds, "stats": stats.__dict__}


def driver_vaultmem(vault: str, queries: list[dict], marker: str) -> dict:
    """Vault.recall with the query's text and tags."""
    from vaultmem import Vault

    v = Vault(vault)
    v.index.snapshot()
    return _timed(queries, marker, lambda q: len(v.recall(q["text"], tags=q["tags"])))


def driver_basic_memory(_vault: str, queries: list[dict], marker: str) -> dict:
    """basic-memory's search_notes MCP tool called in process (what its MCP server runs per request)."""
    import asyncio

    from basic_memory.config import init_mcp_logging
    from basic_memory.mcp.tools import search_notes

    init_mcp_logging()  # as `basic-memory mcp` does: log to its file, not to the terminal

    async def one(q: dict) -> int:
        result = await search_notes(query=q["text"] or None, tags=q["tags"] or None, project=BM_PROJECT,
                                    output_format="json")
        if not isinstance(result, dict):
            raise TypeError(f"search_notes answered: {str(result)[:300]}")
        return len(result["results"])

    loop = asyncio.new_event_loop()
    try:
        return _timed(queries, marker, lambda q: loop.run_until_complete(one(q)))
    finally:
        loop.close()


def driver_agentcairn(vault: str, queries: list[dict], marker: str) -> dict:
    """agentcairn's search() on its DuckDB index: BM25 only (no embedder), no reranker."""
    from cairn import paths
    from cairn.search.engine import open_search, search

    con = open_search(str(paths.index_for(None, Path(vault))))
    return _timed(queries, marker, lambda q: len(search(con, _flat_query(q), embedder=None, k=10, rerank=False)))


def _flat_query(q: dict) -> str:
    """Text and tags as one string, for tools that have no tag filter."""
    return " ".join([q["text"], *q["tags"]]).strip()


DRIVERS = {"vaultmem-refresh": driver_vaultmem_refresh, "vaultmem": driver_vaultmem,
           "basic-memory": driver_basic_memory, "agentcairn": driver_agentcairn}


def _driver_cmd(python: str, name: str) -> Callable[..., list[str]]:
    """The command running one driver of this script under a given interpreter: (vault[, queries file])."""
    return lambda vault, qfile=None: [python, str(SCRIPT), "--_driver", name, "--vault", str(vault),
                                      *(["--queries-file", str(qfile)] if qfile else [])]


# -- setting the tools up --------------------------------------------------------------------------
def _base_env(home: Path, bin_dir: Path | None = None) -> dict:
    """This environment with a private HOME, offline switches and the tool's bin first on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env.update(OFFLINE_ENV, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
               XDG_CACHE_HOME=str(home / ".cache"), XDG_DATA_HOME=str(home / ".local" / "share"))
    if bin_dir is not None:
        env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    home.mkdir(parents=True, exist_ok=True)
    return env


def _venv(python: str, where: Path, packages: tuple[str, ...]) -> Path:
    """A venv at `where` with the packages (reused when it already has exactly them); returns its bin."""
    stamp = where / "peers-installed.txt"
    if stamp.exists() and stamp.read_text() == "\n".join(packages):
        return where / "bin"
    shutil.rmtree(where, ignore_errors=True)
    _run([python, "-m", "venv", str(where)], dict(os.environ), 300)
    started = time.perf_counter()
    _run([str(where / "bin" / "pip"), "install", "-q", *packages], dict(os.environ), INSTALL_TIMEOUT_S)
    print(f"  installed {', '.join(packages)} in {time.perf_counter() - started:.0f} s", flush=True)
    stamp.write_text("\n".join(packages))
    return where / "bin"


def _version(python: Path, dist: str) -> str:
    """An installed distribution's version, seen from the tool's own interpreter."""
    code = f"import importlib.metadata as m; print(m.version({dist!r}))"
    return _run([str(python), "-c", code], dict(os.environ), 60)[1].strip()


def _python_312(explicit: str | None) -> str | None:
    """An interpreter >= 3.12 for basic-memory: --peer-python alone when given, else python3.1x on
    PATH, else pyenv's."""
    found = [explicit] if explicit else [shutil.which(f"python3.{minor}") for minor in range(14, 11, -1)]
    if not explicit:
        found += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[2-9]*/bin/python3")), reverse=True)
    check = "import sys; sys.exit(sys.version_info < (3, 12))"
    for python in filter(None, found):
        with contextlib.suppress(StepFailed):
            _run([python, "-c", check], dict(os.environ), 60)
            return python
    return None


def setup_vaultmem(work: Path) -> Tool:
    """vaultmem from this checkout's environment: Vault(path).refresh() and the installed CLI."""
    import vaultmem

    env = _base_env(work / "home-vaultmem")
    env.update(VAULTMEM_HOME=str(work / "home-vaultmem" / "vaultmem"), VAULTMEM_DEVICE_ID="bench-0001")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    # the drivers and the CLI run the vaultmem this process imported (a worktree on PYTHONPATH), not
    # whichever one is installed: a vault its config.yaml writes must be one they can read
    env["PYTHONPATH"] = str(Path(vaultmem.__file__).resolve().parent.parent)
    cli = Path(sys.executable).parent / "vaultmem"
    base = [str(cli)] if cli.exists() else [sys.executable, "-m", "vaultmem"]
    refresh = _driver_cmd(sys.executable, "vaultmem-refresh")
    return Tool("vaultmem", "vaultmem", f"{vaultmem.__version__} ({_git_commit()})", env,
                state=(".vaultmem/cache", ".vaultmem/devices"),
                index=refresh, refresh=refresh,
                search=lambda v, q: [*base, "recall", q["text"], "--vault", str(v), "--json"],
                warm=_driver_cmd(sys.executable, "vaultmem"))


def _ripgrep(install: bool) -> tuple[str | None, list[str]]:
    """rg's path (installed with apt-get when missing and allowed) and what happened on the way."""
    if shutil.which("rg") or not install:
        return shutil.which("rg"), []
    if not shutil.which("apt-get"):
        return None, ["ripgrep missing and no apt-get"]
    for cmd in (["apt-get", "install", "-y", "-q", "ripgrep"], ["apt-get", "update", "-q"],
                ["apt-get", "install", "-y", "-q", "ripgrep"]):
        with contextlib.suppress(StepFailed):
            _run(cmd, dict(os.environ, DEBIAN_FRONTEND="noninteractive"), 600)
            if shutil.which("rg"):
                return shutil.which("rg"), ["ripgrep installed with apt-get"]
    return None, ["apt-get could not install ripgrep"]


def setup_rg(work: Path, install: bool) -> Tool:
    """ripgrep as a person runs it on a folder of notes (grep -r when rg cannot be had)."""
    rg, notes = _ripgrep(install)
    env = _base_env(work / "home-rg")

    def command(vault: Path, q: dict) -> list[str]:
        patterns = [arg for word in filter(None, [q["text"], *q["tags"]]) for arg in ("-e", word)]
        if rg:
            return [rg, "-l", "-i", "-F", "--no-messages", *patterns, str(vault)]
        return ["grep", "-r", "-l", "-i", "-F", *patterns, str(vault)]

    if rg:
        version = _run([rg, "--version"], env, 60)[1].split()[1]
        return Tool("rg", "ripgrep", version, env, search=command, search_ok=(0, 1), notes=notes)
    version = _run(["grep", "--version"], env, 60)[1].splitlines()[0]
    return Tool("rg", "grep -r", version, env, search=command, search_ok=(0, 1),
                notes=[*notes, "FELL BACK to grep -r"])


def setup_basic_memory(work: Path, venvs: Path, peer_python: str | None) -> Tool:
    """basic-memory in its own venv (Python >= 3.12): `project add` indexes, `reindex` refreshes."""
    python = _python_312(peer_python)
    if python is None:
        return Tool("basic-memory", "basic-memory", "-", {},
                    error=f"basic-memory needs Python >= 3.12: {peer_python or 'none found'} will not do "
                          "(give --peer-python)")
    bin_dir = _venv(python, venvs / "basic-memory", BM_PACKAGES)
    bm = str(bin_dir / "basic-memory")
    env = _base_env(work / "home-basic-memory", bin_dir)
    return Tool("basic-memory", "basic-memory", _version(bin_dir / "python", "basic-memory"), env,
                state=(".basic-memory",),
                index=lambda v: [bm, "project", "add", BM_PROJECT, str(v)],
                refresh=lambda v: [bm, "reindex", "--project", BM_PROJECT],
                search=lambda v, q: [bm, "tool", "search-notes", q["text"], "--project", BM_PROJECT, "--json"],
                warm=_driver_cmd(str(bin_dir / "python"), "basic-memory"),
                notes=[f"Python {_run([python, '--version'], env, 60)[1].split()[-1]} ({python})",
                       "full-text search (keyword); update checks and analytics off"])


def setup_agentcairn(work: Path, venvs: Path) -> Tool:
    """agentcairn BM25-only: `cairn reindex --embedder fake` (no model), recall `--embedder none --no-rerank`."""
    bin_dir = _venv(sys.executable, venvs / "agentcairn", AC_PACKAGES)
    home = work / "home-agentcairn"
    env = _base_env(home, bin_dir)
    _install_fts(bin_dir, home)
    cairn = str(bin_dir / "cairn")
    reindex = lambda v: [cairn, "reindex", str(v), "--embedder", "fake"]
    return Tool("agentcairn", "agentcairn", _version(bin_dir / "python", "agentcairn"), env,
                state=(".agentcairn",), index=reindex, refresh=reindex,
                search=lambda v, q: [cairn, "recall", q["text"], "--vault", str(v), "--embedder", "none",
                                     "--no-rerank", "--json"],
                warm=_driver_cmd(str(bin_dir / "python"), "agentcairn"),
                notes=["BM25 only: index with the hash-based 'fake' embedder, search with --embedder none --no-rerank",
                       "DuckDB fts extension from PyPI duckdb-ext-fts (DuckDB pinned to 1.4.4)",
                       "default embedder offline: " + _default_embedder_error(cairn, env, work)])


def _install_fts(bin_dir: Path, home: Path) -> None:
    """Copy duckdb-ext-fts's extension file where DuckDB looks first (~/.duckdb/extensions)."""
    found = glob.glob(str(bin_dir.parent / "lib" / "python3*" / "site-packages" / "duckdb_ext" / "extensions"))
    if not found:
        raise StepFailed("duckdb-ext-fts installed no extensions folder")
    shutil.copytree(found[0], home / ".duckdb" / "extensions", dirs_exist_ok=True)


def _default_embedder_error(cairn: str, env: dict, work: Path) -> str:
    """What agentcairn's default (fastembed) reindex says offline, on an empty folder."""
    empty = work / "agentcairn-probe"
    empty.mkdir(exist_ok=True)
    try:
        _run([cairn, "reindex", str(empty), "--index", str(work / "agentcairn-probe.duckdb")], env, 300)
    except StepFailed as exc:
        return str(exc).strip().splitlines()[-1][:300]
    return "it ran (a model was found)"


def setup_tools(names: list[str], work: Path, args: argparse.Namespace) -> list[Tool]:
    """Set up each tool asked for; a peer that cannot be set up comes back with its error."""
    venvs = Path(args.venvs) if args.venvs else work / "venvs"
    makers = {"vaultmem": lambda: setup_vaultmem(work), "rg": lambda: setup_rg(work, not args.smoke),
              "basic-memory": lambda: setup_basic_memory(work, venvs, args.peer_python),
              "agentcairn": lambda: setup_agentcairn(work, venvs)}
    tools = []
    for name in names:
        print(f"setting up {name}", flush=True)
        try:
            tools.append(makers[name]())
        except StepFailed as exc:
            tools.append(Tool(name, name, "-", {}, error=f"setup failed: {exc}"))
    return tools


# -- what a tool did to the user's files ----------------------------------------------------------
class Ledger:
    """Hashes every file of a vault copy (outside the tool's state folders) and collects what changed
    between checks; files the benchmark itself writes are accepted, not counted."""

    def __init__(self, root: Path, state: tuple[str, ...]):
        self.root, self.state = root, state
        self.expected = self._scan()
        self.changes: dict[str, str] = {}

    def _scan(self) -> dict[str, tuple[str, int]]:
        """{relative path: (sha256, mode)} of every file outside the state folders."""
        out = {}
        for path in self.root.rglob("*"):
            rel = path.relative_to(self.root).as_posix()
            if path.is_file() and not any(rel == s or rel.startswith(s + "/") for s in self.state):
                out[rel] = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mode)
        return out

    def check(self) -> None:
        """Record the differences from the expected state, then expect what is there now."""
        now = self._scan()
        for rel in now.keys() | self.expected.keys():
            old, new = self.expected.get(rel), now.get(rel)
            if old != new:
                kind = ("new" if old is None else "deleted" if new is None else
                        "changed" if old[0] != new[0] else "mode")
                self.changes.setdefault(rel, kind)
        self.expected = now

    def accept(self, rel: str) -> None:
        """The benchmark wrote this file: expect its current content."""
        path = self.root / rel
        self.expected[rel] = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mode)

    def summary(self) -> dict:
        """Counts by kind (notes are .md files) and a few examples."""
        out = {"touched": len(self.changes), "notes_touched": sum(r.endswith(".md") for r in self.changes)}
        for kind in ("new", "changed", "deleted", "mode"):
            out[kind] = sum(k == kind for k in self.changes.values())
        out["examples"] = [f"{kind}: {rel}" for rel, kind in sorted(self.changes.items())[:5]]
        return out


# -- measuring one tool --------------------------------------------------------------------------
@dataclass
class Plan:
    """What every tool is given: the pristine vault, the queries, the notes to edit."""

    pristine: Path
    queries_file: Path
    cli_queries: list[dict]
    edits: list[str]
    timeout: float


def _edit(vault: Path, rel: str, marker: str) -> None:
    """Append one sentence with a unique word to a note's body."""
    path = vault / rel
    text = path.read_text(encoding="utf-8").rstrip("\n")
    path.write_text(f"{text}\n\nEdited by the benchmark: {marker}.\n", encoding="utf-8")


def _wall(tool: Tool, cmd: list[str], timeout: float, out: dict, figure: str) -> float:
    """A command's wall seconds. Kept in out: the end of its output, and a driver's in-process seconds."""
    ok = tool.search_ok if figure == "cli_search_s" else (0,)
    wall, stdout = _run(cmd, tool.env, timeout, cwd=tool_cwd(tool), ok=ok)
    out.setdefault("output_tail", {})[figure] = stdout.strip()[-300:]
    with contextlib.suppress(ValueError, IndexError, KeyError, TypeError):
        inner = round(_last_json(stdout)["seconds"], 4)
        out.setdefault("inner_s", {}).setdefault(figure, []).append(inner)
    return wall


def tool_cwd(tool: Tool) -> Path:
    """Where a tool's commands run: its private HOME (agentcairn boosts the cwd's project name)."""
    return Path(tool.env["HOME"])


def _refreshes(tool: Tool, vault: Path, plan: Plan, ledger: Ledger, out: dict) -> None:
    """No-change refresh (median of REPEATS), then one-edit refresh (one note edited per run)."""
    if tool.refresh:
        out["refresh_runs_s"] = [_wall(tool, tool.refresh(vault), plan.timeout, out, "refresh_s")
                                 for _ in range(REPEATS)]
        out["refresh_s"] = statistics.median(out["refresh_runs_s"])
    runs = []
    for rel, marker in zip(plan.edits, EDIT_MARKERS):
        ledger.check()
        _edit(vault, rel, marker)
        ledger.accept(rel)
        if tool.refresh:
            runs.append(_wall(tool, tool.refresh(vault), plan.timeout, out, "edit_refresh_s"))
    if runs:
        out["edit_refresh_runs_s"], out["edit_refresh_s"] = runs, statistics.median(runs)


def _searches(tool: Tool, vault: Path, plan: Plan, out: dict) -> None:
    """Cold CLI searches (median), then the warm figures (a driver, or the CLI once per query)."""
    walls = [_wall(tool, tool.search(vault, q), CLI_TIMEOUT_S, out, "cli_search_s") for q in plan.cli_queries]
    out["cli_search_runs_s"], out["cli_search_s"] = walls, statistics.median(walls)
    if tool.warm:
        _, stdout = _run(tool.warm(vault, plan.queries_file), tool.env, plan.timeout, cwd=tool_cwd(tool))
        warm = _last_json(stdout)
    else:
        warm = _cli_warm(tool, vault, plan)
    out.update(warm_p50_ms=_percentile(warm["ms"], 50), warm_p95_ms=_percentile(warm["ms"], 95),
               warm_queries=len(warm["ms"]), warm_empty=warm["empty"], edit_found=warm["marker_found"])


def _cli_warm(tool: Tool, vault: Path, plan: Plan) -> dict:
    """Warm figures for a tool without a resident mode: its command once per query."""
    queries = json.loads(plan.queries_file.read_text(encoding="utf-8"))
    run = lambda q: _run(tool.search(vault, q), tool.env, CLI_TIMEOUT_S, ok=tool.search_ok)
    found = bool(run({"text": EDIT_MARKERS[-1], "tags": []})[1].strip())
    ms, empty = [], 0
    for q in queries:
        wall, stdout = run(q)
        ms.append(wall * 1000)
        empty += not stdout.strip()
    return {"ms": ms, "empty": empty, "marker_found": found}


def measure(tool: Tool, plan: Plan, work: Path) -> dict:
    """Every figure for one tool on its own copy; a failing step is recorded and ends the tool's run."""
    out: dict = {"label": tool.label, "version": tool.version, "notes": tool.notes, "errors": {}}
    if tool.error:
        out["errors"]["setup"] = tool.error
        return out
    vault = work / f"vault-{tool.key}"
    shutil.rmtree(vault, ignore_errors=True)
    shutil.copytree(plan.pristine, vault, symlinks=True)
    ledger = Ledger(vault, tool.state)
    started = time.perf_counter()
    step = "index"
    try:
        if tool.index:
            out["index_s"] = _wall(tool, tool.index(vault), plan.timeout, out, "index_s")
        step = "refresh"
        _refreshes(tool, vault, plan, ledger, out)
        step = "search"
        _searches(tool, vault, plan, out)
    except StepFailed as exc:
        out["errors"][step] = str(exc)
    ledger.check()
    out["files"] = ledger.summary()
    out["files_touched"] = out["files"]["touched"]
    out["total_s"] = time.perf_counter() - started
    print(f"  {tool.key}: done in {out['total_s']:.0f} s" + (f", FAILED at {step}" if out["errors"] else ""),
          flush=True)
    return out


# -- the whole run ---------------------------------------------------------------------------------
def _git_commit() -> str:
    """The checkout's commit, "+dirty" when vaultmem/ has uncommitted changes."""
    try:
        head = _run(["git", "-C", str(SCRIPT.parent), "rev-parse", "--short", "HEAD"], dict(os.environ), 30)[1]
        dirty = _run(["git", "-C", str(SCRIPT.parent.parent), "status", "--porcelain", "vaultmem"],
                     dict(os.environ), 30)[1]
    except StepFailed:
        return "unknown commit"
    return head.strip() + ("+dirty" if dirty.strip() else "")


def build_plan(work: Path, args: argparse.Namespace) -> tuple[Plan, dict]:
    """Generate the pristine vault (no sidecar) and the queries; pick the notes to edit."""
    sys.path.insert(0, str(SCRIPT.parent))
    os.environ.update(VAULTMEM_HOME=str(work / "home-generator"), VAULTMEM_DEVICE_ID="bench-0001")
    from _synth import make_queries, make_vault

    pristine = work / "pristine"
    info = make_vault(pristine, args.notes, seed=args.seed)
    shutil.rmtree(pristine / ".vaultmem" / "cache", ignore_errors=True)  # cold: no sidecar at all
    (pristine / ".vaultmem" / "cache").mkdir()
    queries = make_queries(args.queries, seed=args.seed, ids=info.pop("ids"))
    qfile = work / "queries.json"
    qfile.write_text(json.dumps(queries, ensure_ascii=False), encoding="utf-8")
    cli = [q for q in queries if q["text"]][:REPEATS]
    return Plan(pristine, qfile, cli, _notes_to_edit(pristine), args.timeout), info


def _notes_to_edit(vault: Path) -> list[str]:
    """Active memory notes spread over the folder, one per edit marker."""
    notes = sorted(p for p in (vault / "memories").glob("*.md") if "\nstatus: active\n" in p.read_text("utf-8"))
    step = max(1, len(notes) // len(EDIT_MARKERS))
    return [notes[i * step].relative_to(vault).as_posix() for i in range(len(EDIT_MARKERS))]


def _machine() -> dict:
    """Where and when: Python, cores, load average (other work on the machine skews every figure)."""
    return {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
            "load_avg_start": os.getloadavg(), "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}


def speedups(results: dict) -> dict:
    """For each peer and timed figure: the peer's figure ÷ vaultmem's (how many times faster vaultmem is)."""
    mine = results.get("vaultmem", {})
    out: dict = {}
    for key, res in results.items():
        if key == "vaultmem":
            continue
        out[key] = {f: round(res[f] / mine[f], 2) for f in FIGURES
                    if res.get(f) is not None and mine.get(f)}
    return out


def targets(results: dict, ratios: dict) -> dict:
    """The issue's targets: speed-ups over basic-memory, and no file of the user's touched."""
    bm = ratios.get("basic-memory", {})
    out = {f"{f} >= {bound}x basic-memory": (None if f not in bm else bm[f] >= bound) for f, bound in TARGETS.items()}
    touched = results.get("vaultmem", {}).get("files_touched")
    out["vaultmem touched 0 files"] = None if touched is None else touched == 0
    return out


def _cell(value, figure: str) -> str:
    """A figure as a table cell."""
    if value is None:
        return "—"
    if figure.endswith("_ms"):
        return f"{value:,.1f} ms"
    return f"{value:,.3f} s" if value < 10 else f"{value:,.1f} s"


def print_report(report: dict) -> None:
    """The table of figures, the speed-ups, the targets and every failure."""
    results, keys = report["tools"], list(report["tools"])
    print(f"\n{report['notes']:,} notes (+ entities), {report['queries']} warm queries, seed {report['seed']}, "
          f"load average at start {report['machine']['load_avg_start'][0]:.1f}")
    print(f"{'figure':<16}" + "".join(f"{results[k]['label']:>16}" for k in keys))
    for f in FIGURES:
        print(f"{f:<16}" + "".join(f"{_cell(results[k].get(f), f):>16}" for k in keys))
    print(f"{'files_touched':<16}" + "".join(f"{results[k].get('files_touched', '—')!s:>16}" for k in keys))
    print(f"{'warm_empty':<16}" + "".join(f"{results[k].get('warm_empty', '—')!s:>16}" for k in keys))
    print(f"{'edit found':<16}" + "".join(f"{results[k].get('edit_found', '—')!s:>16}" for k in keys))
    print("\nvaultmem speed-up (peer ÷ vaultmem; > 1 means vaultmem is faster)")
    for peer, ratios in report["speedups"].items():
        print(f"  {results[peer]['label']:<14}" + ", ".join(f"{f} {r:g}x" for f, r in ratios.items()))
    print("\ntargets")
    for name, met in report["targets"].items():
        print(f"  {name:<36}{'n/a' if met is None else 'met' if met else 'MISSED'}")
    for key in keys:
        res = results[key]
        print(f"\n{res['label']} {res['version']}: " + "; ".join(res["notes"] or ["-"]))
        if res.get("files", {}).get("examples"):
            print("  touched: " + ", ".join(res["files"]["examples"]))
        for step, error in res["errors"].items():
            print(f"  FAILED at {step}: {error[:800]}")


def run(args: argparse.Namespace) -> dict:
    """Generate the vault, set every tool up, measure each on its own copy, report."""
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="vaultmem-peers-"))
    work.mkdir(parents=True, exist_ok=True)
    machine = _machine()
    try:
        plan, info = build_plan(work, args)
        tools = setup_tools(args.peers, work, args)
        results = {}
        for tool in tools:
            print(f"measuring {tool.key}", flush=True)
            results[tool.key] = measure(tool, plan, work)
    finally:
        if not (args.keep or args.workdir):
            shutil.rmtree(work, ignore_errors=True)
    machine["load_avg_end"] = os.getloadavg()
    ratios = speedups(results)
    report = {"notes": args.notes, "queries": args.queries, "seed": args.seed, "generator": info,
              "machine": machine, "tools": results, "speedups": ratios, "targets": targets(results, ratios)}
    print_report(report)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return report


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (--_driver and its two options are internal)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--notes", type=int, default=2000, help="memory notes to generate (default 2000)")
    p.add_argument("--queries", type=int, default=200, help="warm queries per tool (default 200)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--peers", default=",".join(ALL_TOOLS), help=f"tools to run (default {','.join(ALL_TOOLS)})")
    p.add_argument("--smoke", action="store_true", help="200 notes, vaultmem and rg only, no installs (CI)")
    p.add_argument("--json", help="write the figures here")
    p.add_argument("--timeout", type=float, default=3600, help="seconds allowed to one index, refresh or warm run")
    p.add_argument("--venvs", help="keep the peers' venvs here and reuse them (default: a throwaway folder)")
    p.add_argument("--peer-python", help="a Python >= 3.12 for basic-memory")
    p.add_argument("--workdir", help="work here and keep it (default: a temporary folder, removed)")
    p.add_argument("--keep", action="store_true", help="keep the temporary work folder")
    p.add_argument("--_driver", choices=sorted(DRIVERS), help=argparse.SUPPRESS)
    p.add_argument("--vault", help=argparse.SUPPRESS)
    p.add_argument("--queries-file", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.smoke:
        args.notes, args.queries, args.peers = 200, 50, "vaultmem,rg"
    args.peers = [name.strip() for name in args.peers.split(",") if name.strip()]
    unknown = set(args.peers) - set(ALL_TOOLS)
    if unknown:
        p.error(f"unknown tools: {', '.join(sorted(unknown))} (known: {', '.join(ALL_TOOLS)})")
    return args


def run_driver(args: argparse.Namespace) -> None:
    """Internal: one driver in this interpreter; prints its JSON on the last line."""
    queries = json.loads(Path(args.queries_file).read_text(encoding="utf-8")) if args.queries_file else []
    print(json.dumps(DRIVERS[args._driver](args.vault, queries, EDIT_MARKERS[-1])))


if __name__ == "__main__":
    parsed = parse_args()
    if parsed._driver:
        run_driver(parsed)
    else:
        run(parsed)
