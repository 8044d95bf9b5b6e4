"""`vaultmem embed`: the semantic channel's vectors brought up to date (issue 31). Registered by one import line
at the end of cli.py."""

from __future__ import annotations

from .cli_app import JsonOpt, VaultOpt, app, progress
from .console import open_vault, print_json, say


@app.command()
def embed(vault: VaultOpt = None, json_out: JsonOpt = False) -> None:
    """Embed every memory not embedded yet (or changed since), for recall by meaning (the 'semantic' extra);
    encrypted notes are never embedded. A recall with --semantic embeds a few itself; this does the rest.

    \b
    Example:
      vaultmem embed
      embedded
    """
    v = open_vault(vault)
    v.refresh(wait=False)
    update, close = progress("embedding")
    try:
        done = v.embed(progress=update)
    finally:
        close()
    if json_out:
        print_json(done.to_dict())
    else:
        say(f"embedded {done.embedded} notes ({done.current} already current, {done.encrypted} encrypted "
            "left out).")


__all__ = ["embed"]
