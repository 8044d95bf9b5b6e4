"""The directory plugin `vaultmem hermes install` writes into $HERMES_HOME/plugins/vaultmem/.

Hermes 0.19.0 finds a user's memory provider only as such a folder: `__init__.py` (which must name
MemoryProvider or register_memory_provider: Hermes scans its text before importing it) with a
`register(ctx)` hook, and `plugin.yaml`, whose `kind: exclusive` keeps Hermes' general plugin
loader from loading it a second time.
"""

PLUGIN_INIT = '''\
"""vaultmem: long-term memory in an Obsidian/Markdown vault, as a Hermes memory provider.

Written by `vaultmem hermes install` (vaultmem {version}); `vaultmem hermes uninstall` removes it.
The provider itself lives in the vaultmem package; this file makes it a MemoryProvider subclass.
"""

import sys

try:
    import vaultmem.hermes as _vaultmem
except ImportError:  # Hermes runs in another Python environment than the one vaultmem was installed in
    sys.path.append({site!r})
    import vaultmem.hermes as _vaultmem

from agent.memory_provider import MemoryProvider

VaultmemMemoryProvider = _vaultmem.provider_class(MemoryProvider)


def register(ctx):
    """Hermes' plugin hook: ctx.register_memory_provider(the provider)."""
    ctx.register_memory_provider(VaultmemMemoryProvider())
'''

PLUGIN_YAML = '''\
name: vaultmem
version: {version}
description: "vaultmem: memories as Markdown notes in an Obsidian vault; recall, context weaving and direct answers, no LLM"
kind: exclusive
provides_tools:
  - vault_remember
  - vault_recall
  - vault_ask
hooks:
  - on_memory_write
  - on_session_end
  - on_pre_compress
'''


__all__ = ["PLUGIN_INIT", "PLUGIN_YAML"]
