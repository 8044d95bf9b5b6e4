"""write/: the write pipeline, from one memory's text and fields to notes on disk.

pipeline (the Writer: remember/remember_many, merge, supersede, create, finish), drafts (the
pure half: policy -> extract -> importance -> links -> the rendered draft, also run in worker
processes), pending (notes written ahead and indexed early in a batch), policy (secrets and
blocked tags), extract (typed values and cues), links (entities and wikilinks), episodes (day
notes) and memorable (why a text is worth keeping). The batch/ subfolder the issue sketches is
not made yet: today single writes run through the same Writer, drafts and pending, so splitting
them out waits for the write path's one in-flight shape (issue 15 item 3). It takes a
store.Store and may import store/, notes/, text/, vaultmem.config and vaultmem.errors; never
recall/, lifecycle/, the facade or a surface.
"""
