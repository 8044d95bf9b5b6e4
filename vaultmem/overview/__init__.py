"""overview/: the vault as a whole, for a person to look at: the Obsidian dashboard and the HTML report.

dashboard (an Obsidian Bases file and a Dataview note, written once and never over a person's edits),
history (a memory's strength over time, replayed from its write and every device's events), figures
(what the report shows: distributions, what decay takes next, the entity graph, lint findings), lint
(the last doctor/lint findings kept for the report), svg (charts as SVG text) and page (the
self-contained HTML file). Everything here reads; only the dashboard's two files and the report are
written. It sits above lifecycle/, recall/ and sync/ (the strength and doctor it shows are theirs) and
below the facade; it imports no surface and no web framework.
"""
