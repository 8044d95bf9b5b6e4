"""recall/: reading memories back: ranking, listing, context and direct answers.

ranking (Query, recall: the channels, their fusion and the short list; the old `recall` module,
renamed because the folder took its name), hindsight (a note's own decay policy, feedback weights,
adaptive λ and what decay suppressed, as arrays for ranking), catalog (get, list, stats, doctor), context (a recall
woven into a prompt's token budget) and answer (ask: the value a note holds). It takes a
store.Store and may import write/ (the extractor a question is parsed with), store/, notes/ and
text/; never lifecycle/, the facade or a surface.
"""

# What a recall reads of one memory's text beyond what the index holds: feedback's voters (expansion), the
# typo rescoring of the short list (ranking) and the values ask looks for (answer) take its beginning, where
# a memory says what it is about. Twice the longest memory of the corpora in bench/ (4,114 characters, a
# stress-set reply), so none of them is cut: a note of write.max_text_chars (100,000) takes 4-25 ms to
# tokenise, and a whole in-process recall at 10,000 notes about 1 ms.
READ_CHARS = 8000
