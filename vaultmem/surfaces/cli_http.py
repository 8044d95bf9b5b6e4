"""`vaultmem serve` and `vaultmem token add/list/revoke` (registered by cli.py's last lines)."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from .cli_app import JsonOpt, VaultOpt, app, sub_app
from .console import open_vault, print_json, say


@app.command()
def serve(
    vault: VaultOpt = None,
    host: Annotated[str, typer.Option(metavar="ADDRESS", help="Where to listen: 127.0.0.1 (the default) serves this "
                                                              "machine only; any other address needs a token.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, metavar="PORT", help="The TCP port (0: a free one).")] = 8765,
    source: Annotated[str, typer.Option(metavar="NAME", help="Who memories written without a source are from.")] = "http",
    namespace: Annotated[Optional[str], typer.Option(
        metavar="NAME", help="Without a token (127.0.0.1, a vault with no token): confine requests to this "
                             "agent's namespace (else $VAULTMEM_NAMESPACE).")] = None,
    trust: Annotated[Optional[str], typer.Option(
        metavar="LEVEL", help="Without a token: the most writes are trusted, external, agent or user (default: as "
                              "the vault's policy rates --source; http is agent).")] = None,
    watch: Annotated[bool, typer.Option("--watch/--no-watch", help="Keep the index current while it serves, so a "
                                                                   "hand edit reaches recall and /changes at once.")] = True,
    access_log: Annotated[bool, typer.Option("--access-log", help="Log every request on stderr.")] = False,
    workers: Annotated[int, typer.Option(min=1, max=64, metavar="N", help="Serve from N processes sharing the port "
                                                                         "(each counts its own rate limits).")] = 1,
    stop_after: Annotated[Optional[float], typer.Option(
        "--stop-after", metavar="SECONDS", min=0, help="Stop by itself after this many seconds (default: at Ctrl-C "
                                                       "or SIGTERM).")] = None,
) -> None:
    """Serve the vault over HTTP (JSON; the API is /openapi.json) until Ctrl-C. Needs the 'http' extra.

    Once the vault has a token (vaultmem token add) every request needs one, as `Authorization: Bearer
    TOKEN` or `x-api-key: TOKEN`, and runs as that token: its namespaces, its trust, read or read-write.

    \b
    Example (a free port, stopping by itself after a second; without --stop-after it runs until Ctrl-C):
      vaultmem serve --port 0 --stop-after 1
    """
    from .http import serve as run

    run(vault, host, port, source=source, namespace=namespace, trust=trust, watch=watch, access_log=access_log,
        stop_after=stop_after, workers=workers, on_start=lambda url: say(f"Serving {url}/api/v1 (API: {url}/openapi.json; Ctrl-C stops)",
                                                        err=True))


token_app = sub_app("Tokens for `vaultmem serve`: who may call it, to read or write which namespaces.")
app.add_typer(token_app, name="token")


@token_app.command("add")
def token_add(
    name: Annotated[str, typer.Argument(metavar="NAME", help="What to call it (the audit log names its requests so).")],
    scope: Annotated[str, typer.Option(metavar="SCOPE", help="read, or read-write.")] = "read",
    namespace: Annotated[Optional[list[str]], typer.Option(
        metavar="NAME", help="A namespace it may touch (repeatable); it reads shared as well.")] = None,
    all_namespaces: Annotated[bool, typer.Option("--all-namespaces", help="It may touch every namespace, as "
                                                                          "the vault's owner does.")] = False,
    trust: Annotated[str, typer.Option(metavar="LEVEL", help="The most its writes are trusted: external, agent "
                                                             "or user.")] = "agent",
    vault: VaultOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Make a token and print it, this once (the vault keeps only its hash).

    \b
    Example:
      vaultmem token add phone --namespace agent-a --scope read-write
      vm_
    """
    secret, token = open_vault(vault).add_token(name, scope=scope, namespaces=namespace or [], trust=trust,
                                                all_namespaces=all_namespaces)
    if json_out:
        print_json({"token": secret, **token.to_dict()})
        return
    sys.stdout.write(secret + "\n")  # alone on stdout: `TOKEN=$(vaultmem token add …)`
    say(f"token {token.name}: {token.scope}, namespaces {', '.join(token.namespaces)}, trust {token.trust}. "
        "It is shown only now: keep it where your agent keeps secrets.", err=True)


@token_app.command("list")
def token_list(vault: VaultOpt = None, json_out: JsonOpt = False) -> None:
    """List the live tokens: name, scope, namespaces, trust, when made (never a token or its hash).

    \b
    Example:
      vaultmem token list
    """
    tokens = open_vault(vault).tokens()
    if json_out:
        print_json([t.to_dict() for t in tokens])
        return
    if not tokens:
        say("No tokens: `vaultmem token add NAME --namespace N` makes one.", err=True)
    for t in tokens:
        say(f"{t.name:20}  {t.scope:10}  {','.join(t.namespaces):20}  {t.trust:8}  {t.created}")


@token_app.command("revoke")
def token_revoke(name: Annotated[str, typer.Argument(metavar="NAME", help="The token's name (token list).")],
                 vault: VaultOpt = None, json_out: JsonOpt = False) -> None:
    """End a token: every server of this vault refuses it from its next request.

    \b
    Example:
      vaultmem token revoke phone
    """
    token = open_vault(vault).revoke_token(name)
    if json_out:
        print_json({"revoked": token is not None, "name": name})
    elif token is None:
        say(f"No live token is named {name}: nothing was revoked (vaultmem token list shows them).", err=True)
    else:
        say(f"revoked: {name}")


__all__ = ["serve", "token_add", "token_app", "token_list", "token_revoke"]
