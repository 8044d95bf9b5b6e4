"""surfaces/: the ways in: the typer CLI (cli), its fast path and shared options (console), the MCP
server (mcp), the HTTP server (http/: FastAPI on uvicorn, `vaultmem serve`; shapes holds the result
shapes both servers publish) and the Hermes Agent provider (hermes/). Thin: each command reads its options, makes one
library call and maps VaultmemError to an exit code or a tool error in one place. They use the public
API only: the `vaultmem` package's names, the Vault facade, vaultmem.errors, vaultmem.config and
vaultmem.settings (a
contract in pyproject.toml: no import of write/, store/, recall/, lifecycle/, sync/, text/ or notes/);
nothing in the core imports them, and only they import typer, rich, mcp or a web framework. vaultmem/__main__.py and vaultmem/hermes.py are the entry points'
fixed addresses (`python -m vaultmem`, the Hermes plugin's `import vaultmem.hermes`) and only forward here.
"""
