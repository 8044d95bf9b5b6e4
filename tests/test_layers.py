"""The layers are checked, not hoped for: import-linter's contracts in pyproject.toml hold, and break
when a lower layer imports a higher one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# what the `lint-imports` console script runs, with this interpreter (and so this tree's vaultmem)
LINT = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", LINT, "--no-cache"], cwd=root, env=env, capture_output=True,
                          text=True, timeout=120)


def test_the_import_contracts_hold():
    done = lint(REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    shutil.copytree(REPO / "vaultmem", root / "vaultmem", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", root)
    return root


def _add_import(path: Path, line: str) -> None:
    text = path.read_text(encoding="utf-8")
    head, sep, rest = text.partition("from __future__ import annotations\n")
    path.write_text(head + sep + line + "\n" + rest, encoding="utf-8")


def test_a_store_that_imports_the_facade_breaks_the_layers(tmp_path):
    root = _copy(tmp_path)
    _add_import(root / "vaultmem" / "store" / "files.py", "from ..vault import Vault")
    done = lint(root)
    assert done.returncode == 1, done.stdout
    assert "vaultmem.store is not allowed to import vaultmem.vault" in done.stdout


def test_text_that_opens_files_breaks_the_no_io_contract(tmp_path):
    root = _copy(tmp_path)
    _add_import(root / "vaultmem" / "text" / "scoring.py", "import sqlite3")
    done = lint(root)
    assert done.returncode == 1, done.stdout
    assert "vaultmem.text.scoring -> sqlite3" in done.stdout


def test_an_import_inside_a_function_counts(tmp_path):
    root = _copy(tmp_path)
    path = root / "vaultmem" / "notes" / "names.py"
    path.write_text(path.read_text(encoding="utf-8") + "\n\ndef _late():\n    from ..write import pipeline\n",
                    encoding="utf-8")
    done = lint(root)
    assert done.returncode == 1, done.stdout
    assert "vaultmem.notes is not allowed to import vaultmem.write" in done.stdout


def test_every_module_says_what_it_offers_in_all_and_each_name_is_there():
    """Issue 15: `__all__` in every module, naming only what the module defines or imports."""
    import ast
    import importlib

    package = Path(__file__).resolve().parent.parent / "vaultmem"
    missing, wrong = [], []
    for path in sorted(package.rglob("*.py")):
        if path.name in ("__init__.py", "__main__.py"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        listed = [node for node in tree.body if isinstance(node, ast.Assign)
                  and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)]
        name = ".".join(path.relative_to(package.parent).with_suffix("").parts)
        if not listed:
            missing.append(name)
            continue
        if name.startswith("vaultmem.surfaces.mcp"):
            continue  # imports the optional mcp extra
        module = importlib.import_module(name)
        wrong += [f"{name}.{n}" for n in module.__all__ if not hasattr(module, n)]
    assert missing == [] and wrong == []
