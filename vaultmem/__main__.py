"""`python -m vaultmem` and the `vaultmem` console script."""

import sys


def main() -> None:
    """Run the CLI; a plain `recall` takes the fast path that does not import typer."""
    argv = sys.argv[1:]
    if argv[:1] == ["recall"] and not {"--help", "-h"} & set(argv):
        from .console import fast_recall

        code = fast_recall(argv[1:])
        if code is not None:
            sys.exit(code)
    from .cli import app

    app(prog_name="vaultmem")


if __name__ == "__main__":
    main()
