"""recall/: reading memories back: ranking, listing, context and direct answers.

ranking (Query, recall: the channels, their fusion and the short list; the old `recall` module,
renamed because the folder took its name), hindsight (a note's own decay policy, feedback weights,
adaptive λ and what decay suppressed, as arrays for ranking), catalog (get, list, stats, doctor), context (a recall
woven into a prompt's token budget) and answer (ask: the value a note holds). It takes a
store.Store and may import write/ (the extractor a question is parsed with), store/, notes/ and
text/; never lifecycle/, the facade or a surface.
"""
