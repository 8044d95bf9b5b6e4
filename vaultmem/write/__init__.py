"""write/: the write pipeline, from one memory's text and fields to notes on disk.

pipeline (the Writer: remember/remember_many and the decisions: merge, supersede, create), items
(the fields a caller gives, their check, WriteResult), entities (the entity notes a write makes
sure of first), seen (what a write knows of notes beyond the index), saying (whether a note
already says what a draft says, and the properties a merge compares), drafts
(the pure half: policy -> extract -> importance -> links -> the rendered draft, also run in worker
processes), batch/ (what a write holds on its way to disk, InFlight, and its finish as named
steps; the notes waiting to be written, PendingNotes), policy (secrets and blocked tags), extract
(typed values and cues), userregex (a config regex compiled only when it cannot backtrack without
bound), links (entities and wikilinks), episodes (day notes) and memorable (why a
text is worth keeping). Single writes run through the same Writer, drafts and batch objects. It takes a
store.Store and may import store/, notes/, text/, vaultmem.config, vaultmem.settings and vaultmem.errors; never
recall/, lifecycle/, the facade or a surface.
"""
