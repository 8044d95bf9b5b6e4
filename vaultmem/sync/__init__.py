"""sync/: a vault and the world outside it: git sync (gitsync: `vaultmem sync`), the memory-aware
merge driver (mergedriver: `vaultmem merge-driver`), export and import (exchange), and the
watcher for hand edits (watch: `vaultmem watch`, `Vault.watch()`; watchdog is imported there only).

exchange takes a store.Store and may import write/ (remember_many), store/, notes/ and text/;
mergedriver works on note bytes alone (notes/, errors); gitsync runs the `git` executable and writes
the vault's git set-up files. Nothing here imports recall/, lifecycle/, the facade or a surface.
"""
