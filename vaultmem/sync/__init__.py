"""sync/: a vault and the world outside it: export and import (exchange), and later git sync, the
merge driver and the watcher.

exchange (an export as JSON lines that restores a vault byte for byte; Hermes' MEMORY.md/USER.md and
Markdown folders imported through the write pipeline). It takes a store.Store and may import write/
(remember_many), store/, notes/ and text/; never recall/, lifecycle/, the facade or a surface.
"""
