"""`python -m vaultmem` and the `vaultmem` console script."""


def main() -> None:
    """Run the CLI."""
    from .cli import app

    app(prog_name="vaultmem")


if __name__ == "__main__":
    main()
