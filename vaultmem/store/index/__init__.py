"""store/index/: the index sidecar, rebuilt from the notes at any time and never committed.

index (the Index: refresh, catch_up, writing(), lookups), records (a note as an index record: its
terms, keys and fields), sidecar (the SQLite file, its schema and its healing), sqlrows (SQL text
and row shapes), snapshot (the memory-mapped postings recall reads), scan (walking the note
folders) and folderstate (what a refresh found unchanged). It sits inside store/ and may import
the rest of store/ below the Store (files, events, writelock, workers), notes/ and text/.
"""
