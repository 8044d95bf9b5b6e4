"""store/: a vault on disk: layout, path safety, atomic writes, locks, device logs, and the index.

store (the Store: root, folders, relpath, settings, device, the index, write_text/create_note/edit_note,
audit and access logs; every layer above takes a Store, never the Vault facade), files (atomic
writes, fsync, temp files), events (the per-device JSONL logs), hooks and hookqueue (on-write hooks: whether
this device enabled one, one run of it; the background queue fed by the audit events), writelock (the cross-process write
lock), heartbeat (a running watcher's, which lets reads skip their rescan) and workers (the process pool a refresh and a batch share: it lives here because the index's
scan uses it). index/ is the sidecar. It may import notes/, text/, vaultmem.errors and
vaultmem.config and vaultmem.settings; never write/, recall/, lifecycle/, the facade or a surface.
"""
