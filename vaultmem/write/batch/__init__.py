"""write/batch/: what a write holds between the Writer's decisions and the disk.

inflight (InFlight: the one object for a write's in-flight state, single or batch, and `finish`
as named steps), pending (PendingNotes: notes waiting to be written, created by a worker and
indexed early in a large batch; edits replayed over a person's save) and names (FreeNames: the file
names reserved for them). A single `remember` runs
through the same objects with nothing waiting long. It may import store/, notes/, text/ and the
write modules below the Writer (episodes); never write.pipeline, recall/, lifecycle/, the
facade or a surface.
"""
