"""Sync between machines through git: the memory-aware merge driver today; `vaultmem sync`, the watcher for
hand edits and export/import belong here too. This layer may import the note format and the errors, never a
surface (the CLI, MCP, Hermes)."""
