"""Speed of the semantic channel's parts (issue 31): embedding 1,000 short notes with the bundled model, and exact
search over 10k int8 rows with the query embedding timed apart. Run: python bench/semantic_speed.py"""
import resource, time, numpy as np, tempfile, os
from vaultmem.store.index.vectors import Vectors
from vaultmem.recall import semantic
words = "the a my we went to park school dog coffee work meeting trip friend sister bought started painting music book".split()
rng = np.random.default_rng(1)
notes = [(f"n{i}", "memory", " ".join(rng.choice(words, 14))) for i in range(1000)]
d = tempfile.mkdtemp()
v = Vectors(d)
t = time.perf_counter(); semantic.embed_notes(v, notes); t = time.perf_counter() - t
print(f"embed 1000 notes (14 words): {t:.1f} s = {1000/t:.0f} notes/s; RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024:.0f} MB")
rows = rng.normal(size=(10000, 384)).astype(np.float32); rows /= np.linalg.norm(rows, axis=1, keepdims=True)
v2 = Vectors(tempfile.mkdtemp()); v2.add([f"m{i}" for i in range(10000)], ["h"]*10000, rows)
for n in (10000,):
    q = semantic.query_vector("my daughter's school")
    ts=[]
    for _ in range(50):
        t=time.perf_counter(); v2.search(q, 50); ts.append(time.perf_counter()-t)
    tq=[]
    for _ in range(20):
        t=time.perf_counter(); semantic.query_vector("my daughter's school"); tq.append(time.perf_counter()-t)
    print(f"exact search 10k int8 rows p50 {np.median(ts)*1000:.2f} ms; query embedding p50 {np.median(tq)*1000:.1f} ms; segment on disk {sum(os.path.getsize(os.path.join(v2.folder,f)) for f in os.listdir(v2.folder))/1e6:.1f} MB")
