"""A venv with the real hermes-agent, built once and cached, for the tests that run Hermes' own code.

The venv holds hermes-agent==HERMES_VERSION and vaultmem's runtime dependencies, not vaultmem
itself: each test puts the checkout under test on PYTHONPATH, so one cached venv serves every
checkout and worktree. It lives in $VAULTMEM_TEST_CACHE (default ~/.cache/vaultmem-tests), keyed by
the Hermes version, the Python version and the dependency list; a file lock makes parallel test
processes build it once, and a `ready` marker written last means a killed build is built again.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

HERMES_VERSION = "0.19.0"
REPO = Path(__file__).resolve().parent.parent


def cache_root() -> Path:
    given = os.environ.get("VAULTMEM_TEST_CACHE", "").strip()
    return Path(given).expanduser() if given else Path.home() / ".cache" / "vaultmem-tests"


def requirements() -> list[str]:
    """hermes-agent pinned, plus vaultmem's own dependencies (read from pyproject.toml)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [f"hermes-agent=={HERMES_VERSION}", *project["dependencies"]]


def venv_dir() -> Path:
    key = hashlib.sha256("\n".join(requirements()).encode()).hexdigest()[:12]
    return cache_root() / f"hermes-{HERMES_VERSION}-py{sys.version_info[0]}{sys.version_info[1]}-{key}"


def hermes_python() -> Path:
    """The venv's interpreter, building the venv first when needed (about a minute, once)."""
    target = venv_dir()
    python = target / "bin" / "python"
    if (target / "ready").exists():
        return python
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building it: wait, then use theirs
        if not (target / "ready").exists():
            _build(target)
    return python


def _build(target: Path) -> None:
    shutil.rmtree(target, ignore_errors=True)  # what a killed build left
    subprocess.run([sys.executable, "-m", "venv", str(target)], check=True)
    subprocess.run([str(target / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    *requirements()], check=True)
    (target / "ready").write_text(" ".join(requirements()) + "\n", encoding="utf-8")


def env_for(hermes_home: Path, **extra: str) -> dict[str, str]:
    """The environment of a Hermes process: its home, this checkout importable, no vault variables
    from the developer's shell."""
    env = {k: v for k, v in os.environ.items() if k not in ("VAULTMEM_VAULT", "OBSIDIAN_VAULT_PATH", "PYTHONPATH")}
    env.update(HERMES_HOME=str(hermes_home), PYTHONPATH=str(REPO), NO_COLOR="1", **extra)
    return env


def run_hermes(hermes_home: Path, *args: str, timeout: float = 180, **extra: str) -> subprocess.CompletedProcess:
    """Run `python ARGS` in the Hermes venv (a script, or `-m hermes_cli.main …`)."""
    return subprocess.run([str(hermes_python()), *args], env=env_for(hermes_home, **extra), capture_output=True,
                          text=True, timeout=timeout, cwd=str(hermes_home))
