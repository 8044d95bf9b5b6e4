"""The package's shape (issue 15's measures), read from the source with `ast`, and one traced remember.

    python bench/house.py                          # this checkout
    python bench/house.py --root /tmp/old-tree     # another checkout of vaultmem (e.g. a git worktree)
    python bench/house.py --batch --json out.json  # trace remember_many of 3 items instead

Prints, for --root's vaultmem/ (parsed, never imported): modules and lines per folder; the largest module
and whether all are <= 600 lines; the 10 longest functions and methods and the median and mean length over
all (end_lineno - lineno + 1, docstring included, nested functions on their own).
Then one `Vault.remember` (--batch: `remember_many` of 3 items) runs on a fresh vault in a subprocess with
PYTHONPATH=--root under `sys.setprofile` and `threading.setprofile`: the vaultmem modules whose functions run
in its call tree, in first-call order, until the note's file is moved into place (the first os.replace,
os.link or os.rename onto a .md file) and over the whole call. The top level of a module imported during the
call is left out (and named); worker processes, if a batch started any, are not traced.
It also counts the calls that climb back up the layers (text < notes < store < write < recall, lifecycle,
sync < vault < surfaces; a flat tree's modules are placed where the folders later put them, its vault.py
being the facade): distinct (caller -> callee) function pairs whose callee sits in a higher layer. A callee
that is a lambda or a nested function is a callback the higher layer handed down (`reused(..., lambda: ...)`)
and is counted apart from a climb the lower layer makes on its own (a method of the facade it was given).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _figures import write_figures  # noqa: E402

MODULE_LIMIT = 600
LONGEST = 10
TRACE_TEXT = "Emily Carter signed design contract CT2024-0931 on 2026-09-30; the invoice is due in 30 days."
# issue 15's layers, lowest first; a flat tree's module names (before the folders) mapped to the same
LAYERS = {"text": 0, "notes": 1, "store": 2, "write": 3, "recall": 4, "lifecycle": 4, "sync": 4, "vault": 5,
          "surfaces": 6}
FLAT = {**dict.fromkeys(["text", "normalise", "scoring", "dedup", "times"], 0),
        **dict.fromkeys(["note", "plainyaml", "names"], 1),
        **dict.fromkeys(["files", "events", "writelock", "workers", "heartbeat", "index", "snapshot", "sqlrows",
                         "scan", "records", "sidecar", "folderstate"], 2),
        **dict.fromkeys(["write", "drafts", "pending", "policy", "extract", "links", "episodes", "memorable"], 3),
        **dict.fromkeys(["recall", "catalog", "context", "answer", "lifecycle"], 4),
        "vault": 5, **dict.fromkeys(["cli", "console", "mcp", "hermes"], 6)}
BATCH_TEXTS = ("Deploy freeze for Project Atlas from Nov 10 to Nov 17.",
               "ERR_4031 means the request signature expired; resync the clock.",
               "Emily prefers async reviews over meetings.")


def _functions(tree: ast.AST, path: str) -> list[dict]:
    """Every function and method in a module, with its dotted name (class and enclosing functions first)."""
    found: list[dict] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                found.append({"name": name, "file": path, "lines": child.end_lineno - child.lineno + 1})
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def shape(root: Path) -> dict:
    """Module counts and lines per folder, the largest module and the function lengths of root/vaultmem."""
    package = root / "vaultmem"
    if not package.is_dir():
        raise SystemExit(f"no vaultmem/ package under {root}")
    folders: dict[str, dict] = {}
    modules: list[tuple[int, str]] = []
    functions: list[dict] = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        source = path.read_text(encoding="utf-8")
        lines = len(source.splitlines())
        folder = folders.setdefault(path.parent.relative_to(root).as_posix() + "/", {"modules": 0, "lines": 0})
        folder["modules"] += 1
        folder["lines"] += lines
        modules.append((lines, rel))
        functions.extend(_functions(ast.parse(source, filename=rel), rel))
    lengths = [f["lines"] for f in functions]
    largest = max(modules)
    return {
        "folders": folders,
        "modules": len(modules),
        "lines": sum(n for n, _ in modules),
        "largest_module": {"file": largest[1], "lines": largest[0]},
        "modules_over_limit": [{"file": f, "lines": n} for n, f in sorted(modules, reverse=True) if n > MODULE_LIMIT],
        "all_modules_within_limit": largest[0] <= MODULE_LIMIT,
        "functions": len(functions),
        "longest_functions": sorted(functions, key=lambda f: (-f["lines"], f["file"], f["name"]))[:LONGEST],
        "function_lines_median": statistics.median(lengths),
        "function_lines_mean": round(statistics.fmean(lengths), 2),
    }


class _Tracer:
    """A profile function: the vaultmem modules run while `entry` is on the stack, in first-call order."""

    def __init__(self, package: Path, entry) -> None:
        self.package, self.entry, self.active = package, entry, 0
        self.order: list[str] = []  # the whole call
        self.before_write: list[str] = []  # frozen once a note's file is in place
        self.writes: list[str] = []
        self.imports: set[str] = set()
        self.importing: dict[int, object] = {}  # thread id: the frame of the import's top level it is in
        self.climbs: dict[str, int] = {}  # "caller -> callee" (module:function) up the layers: calls
        self.callbacks: dict[str, int] = {}  # the same, where the callee's module is on the stack above

    def module(self, filename: str) -> str | None:
        if not os.path.isabs(filename):  # <frozen ...>, <string>: no file of the package
            return None
        try:
            rel = Path(filename).resolve().relative_to(self.package)
        except ValueError:
            return None
        return ".".join(("vaultmem", *rel.with_suffix("").parts)).removesuffix(".__init__")

    def __call__(self, frame, event, arg) -> None:
        import threading

        code, thread = frame.f_code, threading.get_ident()
        if event == "return":
            if self.importing.get(thread) is frame:
                del self.importing[thread]
            elif code is self.entry:
                self.active -= 1
            return
        if event != "call" or (code is not self.entry and not self.active) or thread in self.importing:
            return
        self.active += code is self.entry
        module = self.module(code.co_filename)
        if module is None:
            return
        if code.co_name == "<module>":  # an import's top level, not the memory's path
            self.imports.add(module)
            self.importing[thread] = frame
        else:
            self._climb(frame, module)
            if module not in self.order:
                self.order.append(module)
                if not self.writes:
                    self.before_write.append(module)

    def _climb(self, frame, module: str) -> None:
        """Count the call into `frame` if it goes up the layers from its caller."""
        caller = frame.f_back
        below = self.module(caller.f_code.co_filename) if caller is not None else None
        if below is None or _layer(module) is None or _layer(below) is None or _layer(module) <= _layer(below):
            return
        handed = "<lambda>" in frame.f_code.co_qualname or "<locals>" in frame.f_code.co_qualname
        pair = f"{below}:{caller.f_code.co_name} -> {module}:{frame.f_code.co_name}"
        counts = self.callbacks if handed else self.climbs
        counts[pair] = counts.get(pair, 0) + 1

    def watching(self, name: str, root: Path):
        """os.<name> that records a .md target moved into place during the traced call."""
        real = getattr(os, name)

        def moved(src, dst, *args, **kwargs):
            result = real(src, dst, *args, **kwargs)
            if self.active and os.fspath(dst).endswith(".md"):
                self.writes.append(os.path.relpath(os.fspath(dst), root))
            return result

        return moved


def _layer(module: str) -> int | None:
    """The layer of a vaultmem module (None: errors, config, settings, the package itself: below or beside all)."""
    parts = module.split(".")
    if len(parts) < 2:
        return None
    return LAYERS.get(parts[1]) if len(parts) > 2 or parts[1] == "vault" else FLAT.get(parts[1], LAYERS.get(parts[1]))


def _trace_phase(batch: bool) -> None:
    """Run in the subprocess: one remember (or remember_many) under the profiler; print what ran as JSON."""
    import threading
    from unittest import mock

    import vaultmem
    from vaultmem import Vault

    with tempfile.TemporaryDirectory(prefix="vaultmem-house-") as tmp:
        root = Path(tmp) / "vault"
        vault = Vault.init(root)
        tracer = _Tracer(Path(vaultmem.__file__).resolve().parent,
                         (Vault.remember_many if batch else Vault.remember).__code__)
        moves = {name: tracer.watching(name, root) for name in ("replace", "link", "rename")}
        with mock.patch.multiple(os, **moves):
            threading.setprofile(tracer)
            sys.setprofile(tracer)
            try:
                if batch:
                    vault.remember_many([{"text": text, "source": "user"} for text in BATCH_TEXTS])
                else:
                    vault.remember(TRACE_TEXT, source="user")
            finally:
                sys.setprofile(None)
                threading.setprofile(None)
    print(json.dumps({"call": "Vault.remember_many (3 items)" if batch else "Vault.remember",
                      "package": str(tracer.package), "note_files_written": tracer.writes,
                      "modules_before_write": tracer.before_write, "modules_whole_call": tracer.order,
                      "imported_during_call": sorted(tracer.imports),
                      "climbs": tracer.climbs, "callbacks": tracer.callbacks}))


def trace(root: Path, batch: bool) -> dict:
    """Trace one remember of the tree at root in a fresh process (PYTHONPATH=root, temp home, fixed device id)."""
    with tempfile.TemporaryDirectory(prefix="vaultmem-house-home-") as home:
        env = {**os.environ, "PYTHONPATH": str(root), "VAULTMEM_HOME": home, "VAULTMEM_DEVICE_ID": "house-1"}
        cmd = [sys.executable, str(Path(__file__).resolve()), "--_trace"] + (["--batch"] if batch else [])
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"the traced remember failed:\n{done.stderr[-3000:]}")
    traced = json.loads(done.stdout.strip().splitlines()[-1])
    if not Path(traced["package"]).is_relative_to(root.resolve()):
        raise SystemExit(f"the trace imported vaultmem from {traced['package']}, not from {root}")
    return {**traced, "modules_before_write_count": len(traced["modules_before_write"]),
            "modules_whole_call_count": len(traced["modules_whole_call"]),
            "climbs_count": len(traced["climbs"]), "callbacks_count": len(traced["callbacks"])}


def print_figures(figures: dict) -> None:
    print(f"vaultmem under {figures['root']}: {figures['modules']} modules, {figures['lines']} lines")
    for folder, row in figures["folders"].items():
        print(f"  {folder:<28} {row['modules']:>3} modules {row['lines']:>6} lines")
    largest = figures["largest_module"]
    print(f"largest module: {largest['file']} ({largest['lines']} lines); every module <= {MODULE_LIMIT} lines: "
          f"{'yes' if figures['all_modules_within_limit'] else 'no'}")
    for row in figures["modules_over_limit"]:
        print(f"  over {MODULE_LIMIT}: {row['file']} ({row['lines']})")
    print(f"{figures['functions']} functions and methods; lines median {figures['function_lines_median']}, "
          f"mean {figures['function_lines_mean']}; the {LONGEST} longest:")
    for f in figures["longest_functions"]:
        print(f"  {f['lines']:>4}  {f['name']}  ({f['file']})")
    traced = figures["trace"]
    print(f"traced {traced['call']} on a fresh vault (vaultmem from {traced['package']}):")
    print(f"  note files moved into place: {', '.join(traced['note_files_written']) or 'none seen in this process'}")
    print(f"  modules run before the note's file is in place: {traced['modules_before_write_count']}")
    for i, module in enumerate(traced["modules_before_write"], 1):
        print(f"    {i:>2}. {module}")
    rest = traced["modules_whole_call"][traced["modules_before_write_count"]:]
    print(f"  modules in the whole call: {traced['modules_whole_call_count']}"
          + (f" (after the write also: {', '.join(rest)})" if rest else ""))
    if traced["imported_during_call"]:
        print(f"  imported during the call (their top level not counted): {', '.join(traced['imported_during_call'])}")
    print(f"  calls back up the layers: {traced['climbs_count']} distinct caller -> callee pairs"
          f" ({sum(traced['climbs'].values())} calls); callbacks handed down: {traced['callbacks_count']}")
    for pair, n in sorted(traced["climbs"].items()):
        print(f"    {n:>4} x {pair}")
    for pair, n in sorted(traced["callbacks"].items()):
        print(f"    {n:>4} x {pair}  (callback)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=str(Path(__file__).resolve().parent.parent),
                        help="the checkout whose vaultmem/ is measured (default: this one)")
    parser.add_argument("--batch", action="store_true", help="trace remember_many of 3 items instead of remember")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--_trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._trace:
        _trace_phase(args.batch)
        return
    root = Path(args.root).resolve()
    figures = {"root": str(root), **shape(root), "trace": trace(root, args.batch)}
    print_figures(figures)
    write_figures(args.json, figures)


if __name__ == "__main__":
    main()
