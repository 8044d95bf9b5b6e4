"""The `vaultmem` command's typer app and what every command module shares: the error-mapping
group, the option types built from console.Opt, exit codes, the progress bar and the report printer.

The command modules (cli, cli_<topic>) import this and register their commands on `app`; cli.py
imports them all, so registration flows one way: cli -> cli_<topic> -> cli_app.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Optional

import typer
from typer.core import TyperGroup

from .console import IDS, JSON, RECALL_OPTIONS, REMEMBER_OPTIONS, TAG, VAULT, Opt, error_message, print_json, \
    reader_left, report_error
from ..errors import VaultmemError

EXIT_ERROR = 1
EXIT_PROBLEMS = 3  # doctor found problems
HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}


class _Group(TyperGroup):
    """Turns every error into one line on stderr (a JSON object with --json) and exit code 1, never a
    traceback; bare `vaultmem` (or `vaultmem entity`) prints its help and exits 0, as git does."""

    def parse_args(self, ctx, args):  # noqa: D102
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            typer.echo(ctx.get_help())
            ctx.exit(0)
        return super().parse_args(ctx, args)

    def invoke(self, ctx):  # noqa: D102
        wants_json = JSON.flags[0] in [*getattr(ctx, "_protected_args", ()), *ctx.args]
        try:
            return super().invoke(ctx)
        except BrokenPipeError:  # `vaultmem list | head -1`: the reader has what it wanted
            reader_left()
            raise typer.Exit(0) from None
        except Exception as exc:
            if hasattr(exc, "exit_code"):  # typer/click's own exits, usage errors and aborts
                if wants_json and exc.exit_code == 2 and hasattr(exc, "format_message"):  # a usage error
                    sys.stderr.write(json.dumps({"error": exc.format_message(), "kind": "usage",
                                                 "exit_code": exc.exit_code}, ensure_ascii=False) + "\n")
                    raise typer.Exit(exc.exit_code) from None
                raise
            message = error_message(exc)
            if message is None:
                raise
            report_error(message, exc, wants_json)
            raise typer.Exit(EXIT_ERROR) from None


def sub_app(help_text: str) -> typer.Typer:
    return typer.Typer(cls=_Group, no_args_is_help=True, context_settings=HELP_OPTIONS, rich_markup_mode=None,
                       help=help_text)


app = typer.Typer(cls=_Group, no_args_is_help=True, context_settings=HELP_OPTIONS, rich_markup_mode=None,
                  help="Long-term memory for AI agents in an Obsidian/Markdown vault.\n\n"
                       "The vault is --vault (before or after the command), else $VAULTMEM_VAULT, else "
                       "$OBSIDIAN_VAULT_PATH. Every command has -h, and --json where it prints results; each "
                       "help ends with an example that runs as written on the bundled sample vault "
                       "(export VAULTMEM_VAULT=sample-vault).")


def option(spec: Opt):
    """The typer option of a console.Opt (the fast path builds its argparse twin from the same Opt)."""
    decls = spec.flags
    if spec.negatable:
        decls = (f"{spec.flags[0]}/--no-{spec.flags[0][2:]}", *spec.flags[1:])
    kind = bool if spec.kind is bool else Optional[list[spec.kind]] if spec.many else Optional[spec.kind]
    return Annotated[kind, typer.Option(*decls, help=spec.help, metavar=spec.metavar, min=spec.minimum,
                                        show_default=spec.negatable)]


Rem = {name: option(spec) for name, spec in REMEMBER_OPTIONS.items()}
Rec = {name: option(spec) for name, spec in RECALL_OPTIONS.items()}
VaultOpt = option(VAULT)
JsonOpt = option(JSON)
TagOpt = option(TAG)
IdsOpt = option(IDS)
# Extra arguments are refused by us, not by click, whose message repeats them: an unquoted
# `remember my password is hunter2` must not print the password back
EXTRA_ARGS = {"allow_extra_args": True}


def no_extra(ctx: typer.Context, what: str) -> None:
    if ctx.args:
        raise VaultmemError(f"{len(ctx.args)} unexpected argument(s) after {what}; quote text that has spaces")


def progress(label: str):
    """A rich progress bar on a terminal (stderr), silent otherwise; returns (update(done, total, step), close)."""
    if not sys.stderr.isatty():
        return (lambda done, total, step=None: None), (lambda: None)
    from rich.progress import Progress

    bar = Progress(transient=True)
    task = bar.add_task(label, total=None)
    bar.start()

    def update(done: int, total: int, step: str | None = None) -> None:
        bar.update(task, completed=done, total=total, **({"description": step} if step else {}))

    return update, bar.stop


def show_report(report, json_out: bool, show, failing: int = EXIT_PROBLEMS) -> None:
    """A check's report as JSON (`report.to_dict()`) or as `show` prints it; exit `failing` when it
    is not ok (doctor, lint, repair: 3 for findings; the pre-commit hook: 1, which stops the commit)."""
    if json_out:
        print_json(report.to_dict())
    else:
        show(report)
    if not report.ok:
        raise typer.Exit(failing)


__all__ = ["EXIT_ERROR", "EXIT_PROBLEMS", "EXTRA_ARGS", "HELP_OPTIONS", "IdsOpt", "JsonOpt", "Rec", "Rem",
           "TagOpt", "VaultOpt", "app", "no_extra", "option", "progress", "show_report", "sub_app"]
