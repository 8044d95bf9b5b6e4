"""What every benchmark does with its figures at the end: print them, and write them as JSON when asked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["drop_workdir", "finish", "phase_or_run", "run_options", "smoke_cache", "workdir_options", "write_figures"]


def write_figures(path: str | Path | None, figures: dict[str, Any]) -> None:
    """Write the figures to `path` as indented JSON (its folder made first); nothing when path is None."""
    if path is None:
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(figures, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def smoke_cache(args: Any, prefix: str) -> None:
    """A smoke run builds its vault in a fresh temp folder unless --cache names one (removed by `finish`)."""
    if args.cache is None:
        import tempfile

        args.cache = tempfile.mkdtemp(prefix=prefix)


def finish(args: Any, figures: dict[str, Any], print_table: Any) -> None:
    """Print the figures, write them to --json, and remove a smoke run's cached vault."""
    import shutil

    print_table(figures)
    write_figures(args.json, figures)
    if args.smoke:
        shutil.rmtree(args.cache, ignore_errors=True)


def run_options(parser: Any, cache_name: str, smoke_help: str) -> None:
    """The options every cached-vault benchmark takes: --seed, --cache, --json and --smoke."""
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", help=f"where the vault is built and kept (default /tmp/vaultmem-bench/{cache_name}-N-sSEED)")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--smoke", action="store_true", help=smoke_help)


def workdir_options(parser: Any, smoke_help: str) -> None:
    """The options every benchmark building a throwaway vault takes: --json, --workdir, --keep, --seed, --smoke
    (drop_workdir honours --workdir and --keep)."""
    parser.add_argument("--json", help="write the figures to this JSON file")
    parser.add_argument("--workdir", help="build here instead of a temporary folder (kept afterwards)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--seed", type=int, default=0, help="generator seed")
    parser.add_argument("--smoke", action="store_true", help=smoke_help)


def drop_workdir(args: Any, workdir: Path) -> None:
    """Remove a run's temporary folder, unless --keep or --workdir asked to keep it (then say where it is)."""
    import shutil

    if args.keep or args.workdir:
        print(f"vault kept in {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)


def phase_or_run(args: Any, phases: dict[str, Any], run: Any) -> Any:
    """A benchmark's entry: the measured phase it was started as (--_phase, internal: its figures printed as
    JSON for the parent), else the whole run; returns what run returns."""
    if args._phase:
        print(json.dumps(phases[args._phase](args)))
        return None
    return run(args)
