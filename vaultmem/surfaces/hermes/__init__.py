"""vaultmem as a Hermes Agent memory provider: the provider, its plugin installer, its settings.

Nothing here imports Hermes: the provider becomes a subclass of Hermes' MemoryProvider only inside
Hermes (`provider_class()`, called by the plugin `vaultmem hermes install` writes).
"""

from .install import install, status, uninstall
from .provider import VaultmemProvider, provider_class, register

__all__ = ["VaultmemProvider", "install", "provider_class", "register", "status", "uninstall"]
