"""`vaultmem.hermes`: the Hermes Agent memory provider (see vaultmem/surfaces/hermes/)."""

from .surfaces.hermes import VaultmemProvider, install, provider_class, register, status, uninstall

__all__ = ["VaultmemProvider", "install", "provider_class", "register", "status", "uninstall"]
