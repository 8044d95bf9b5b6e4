"""`python -m vaultmem` and the `vaultmem` console script."""

import os
import sys


def main() -> None:
    """Run the CLI; a plain `recall`, `remember` or `--version` takes the fast path that does not import typer."""
    vault, argv = _global_vault(sys.argv[1:])
    if argv[:1] == ["merge-driver"] and len(argv) == 5 and not {"--help", "-h"} & set(argv):
        from .sync.mergedriver import main as merge_driver

        _leave(merge_driver(argv[1:]))
    from .surfaces import console

    console.one_blas_thread()
    if argv == ["--version"]:
        console.say(console.version_line())
        _leave(0)
    if argv[:1] in (["recall"], ["remember"]) and not {"--help", "-h", "--batch"} & set(argv):
        fast = console.fast_recall if argv[0] == "recall" else console.fast_remember
        code = fast(argv[1:], vault)
        if code is not None:
            _leave(code)
    from .surfaces.cli import app

    try:
        app(prog_name="vaultmem")
    except SystemExit as done:
        _flush_quietly()
        raise done from None


def _global_vault(argv: list[str]) -> tuple[str | None, list[str]]:
    """`vaultmem --vault P COMMAND …` (or -V P, --vault=P): the vault and the rest; (None, argv) otherwise."""
    if argv[:1] in (["--vault"], ["-V"]) and len(argv) > 1:
        return argv[1], argv[2:]
    if argv[:1] and argv[0].startswith("--vault="):
        return argv[0].partition("=")[2], argv[1:]
    return None, argv


def _flush_quietly() -> None:
    """Flush stdout before the interpreter does: a reader that left (`| head -1`) is no error."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        from .surfaces.console import reader_left

        reader_left()
    except (OSError, ValueError, AttributeError):  # closed at start, or a full disk: the exit code stands
        pass


def _leave(code: int) -> None:
    """End a one-off command without the interpreter's teardown.

    By now every note, day note and log line the command wrote is closed (and synced where it
    must be), and its index transaction committed. What teardown would add is freeing every
    module (~25 ms) and SQLite's checkpoint of its write-ahead log on close (~15-30 ms with its
    syncs): together a fifth of a `remember`. The log stays for the next writer to checkpoint, as
    after any crash, which SQLite is built for. The one wait kept: a write's hooks (store/hookqueue.py),
    at most hooks.timeout, so a CLI remember's hooks run; the command's output is already out.
    """
    hooks = sys.modules.get("vaultmem.store.hookqueue")  # loaded with the Store: only a command that opened a vault
    if hooks is not None:
        _flush_quietly()
        hooks.finish_all()
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # started with the stream closed
            continue
        try:
            stream.flush()
        except BrokenPipeError:  # `vaultmem recall … | head -1`: the reader left, nothing is lost
            pass
        except (OSError, ValueError):  # a full disk behind a redirect, a stream closed meanwhile
            code = code or 1
    os._exit(code)


if __name__ == "__main__":
    main()
