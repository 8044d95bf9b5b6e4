"""notes/: the note format, byte-exact: parse, render and edit a Markdown note with its frontmatter.

note (the Note: parse frontmatter, tags and links), writing (a new note's text; edits of only the
property lines that change), plainyaml (the YAML subset notes are written in), names (the ULID a
note is known by, the readable file name its title becomes), versions (version vectors) and
conflicts (git's conflict blocks, sync tools' copy names). A note
here is text and a path label, never a file: it knows no vault and opens nothing. It may import
text/, vaultmem.errors, PyYAML and markdown-it; never store/ or above, and no file or database module
(names.py imports `os` for `os.urandom` only, an exception the contract names).
"""
