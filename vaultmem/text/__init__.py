"""text/: the pure bottom floor: strings and numbers in, strings and numbers out, no IO.

terms (tokenising, normalising, stemming, fingerprints; the old `text` module, renamed because the folder
took its name), normalise (typed values: dates, amounts), scoring (BM25 and rank fusion over plain arrays),
dedup (near-duplicate keys and restatement tests) and encoding (input checked to be UTF-8 text). It may
import only the standard library's pure modules, numpy, rapidfuzz and vaultmem.errors: no file, socket or
database module (a contract in pyproject.toml checks it), and nothing else of vaultmem.
"""
