"""`python -m vaultmem` and the `vaultmem` console script."""

import os
import sys


def main() -> None:
    """Run the CLI; a plain `recall` or `remember` takes the fast path that does not import typer."""
    argv = sys.argv[1:]
    if argv[:1] in (["recall"], ["remember"]) and not {"--help", "-h", "--batch"} & set(argv):
        from . import console

        fast = console.fast_recall if argv[0] == "recall" else console.fast_remember
        code = fast(argv[1:])
        if code is not None:
            _leave(code)
    from .cli import app

    app(prog_name="vaultmem")


def _leave(code: int) -> None:
    """End a one-off command without the interpreter's teardown.

    By now every note, day note and log line the command wrote is closed (and synced where it
    must be), and its index transaction committed. What teardown would add is freeing every
    module (~25 ms) and SQLite's checkpoint of its write-ahead log on close (~15-30 ms with its
    syncs): together a fifth of a `remember`. The log stays for the next writer to checkpoint, as
    after any crash, which SQLite is built for.
    """
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
