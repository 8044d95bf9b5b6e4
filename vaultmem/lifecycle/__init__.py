"""lifecycle/: the life of a memory after it is written.

status (confirm: a candidate from the inbox into memories; forget: a memory into the archive);
feedback (verdicts, corrections, pins: events in the device log and one-line edits); gc and
consolidation will live here too. It takes a store.Store and may import write/
(WriteResult, numbered names), store/, notes/ and text/; never recall/, the facade or a surface.
"""
