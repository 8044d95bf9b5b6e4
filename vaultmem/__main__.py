"""`python -m vaultmem` and the `vaultmem` console script."""

import sys


def main() -> None:
    """Run the CLI; a plain `recall` or `remember` takes the fast path that does not import typer."""
    argv = sys.argv[1:]
    if argv[:1] in (["recall"], ["remember"]) and not {"--help", "-h", "--batch"} & set(argv):
        from . import console

        fast = console.fast_recall if argv[0] == "recall" else console.fast_remember
        code = fast(argv[1:])
        if code is not None:
            sys.exit(code)
    from .cli import app

    app(prog_name="vaultmem")


if __name__ == "__main__":
    main()
