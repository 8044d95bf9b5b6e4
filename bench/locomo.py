"""LoCoMo retrieval benchmark: vaultmem's default recall against a bm25s baseline, no LLM.

    python bench/locomo.py                               # all 10 conversations (under a minute)
    python bench/locomo.py --json bench/out/locomo.json  # also write the figures as JSON
    python bench/locomo.py --smoke                       # first conversation, first 30 questions: CI
    python bench/locomo.py --ablation                    # also vaultmem ranking variants (config overrides)
    python bench/locomo.py --misses misses.json          # also vaultmem's misses: question, gold, top 10

Protocol (shared/data/README.md): one memory per dialog turn, "(<session date_time>) <speaker>: <text>"
(+ " [shares <blip_caption>]" for image turns), stamped with its session's date (UTC), one vault
per conversation. Every question of categories 1-4 with evidence is a query; gold = its evidence
dia_ids, repaired ("D8:6; D9:17", "D:11:26", "D30:05") with turns that do not exist dropped.
vaultmem recalls with its default configuration as of the conversation's last session; bm25s
(k1 1.5, b 0.75, English stopwords, Snowball stemmer) ranks the same texts. Metrics per question:
R@k = |gold in top k| / |gold|, Full@k = all gold in top k (k = 5, 10), MRR = 1 / rank of the
first gold hit in the top 10. A vaultmem note holding several identical turns counts as all of them.
Needs the dev extra (bm25s, PyStemmer).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = (REPO / ".." / "shared" / "data" / "locomo10.json").resolve()
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
METRICS = ("R@5", "R@10", "Full@5", "Full@10", "MRR")
TOP_K = 10
SMOKE_QUESTIONS = 30
SESSION_KEY = re.compile(r"session_(\d+)")
DIA_ID = re.compile(r"D:?(\d+):(\d+)")  # also matches the malformed "D:11:26" and "D30:05"
DATE_FORMAT = "%I:%M %p on %d %B, %Y"   # "1:56 pm on 8 May, 2023"
BM25S_PARAMS = {"k1": 1.5, "b": 0.75}
# vaultmem ranking variants for --ablation: name -> overrides written to .vaultmem/config.yaml.
# "+" rows rebuild today's default step by step from the channels of before feedback and the
# question channel (episode relevance is BM25 over the episode in all of them); "-" rows take one
# thing out of the default.
_BEFORE = {"feedback_weight": 0.0, "weights": {"question": 0.0, "contiguity": 0.25}}
VARIANTS: dict[str, dict] = {
    "default": {},
    "+ episode BM25 only": {"ranking": _BEFORE},
    "+ feedback 0.2": {"ranking": {**_BEFORE, "feedback_weight": 0.2}},
    "+ question -0.2": {"ranking": {"feedback_weight": 0.2, "weights": {"contiguity": 0.25}}},
    "- feedback": {"ranking": {"feedback_weight": 0.0}},
    "- question": {"ranking": {"weights": {"question": 0.0}}},
    "- episode": {"ranking": {"weights": {"episode": 0.0}}},
    "- contiguity": {"ranking": {"weights": {"contiguity": 0.0}}},
    "- source": {"ranking": {"weights": {"source": 0.0}}},
    "- strength": {"ranking": {"weights": {"strength": 0.0}}},
    "- fuzzy": {"ranking": {"fuzzy_rescore": 0}},
    "bm25s's k1 1.5, b 0.75": {"ranking": {"bm25_k1": 1.5, "bm25_b": 0.75}},
    "feedback 5 docs": {"ranking": {"feedback_docs": 5}},
    "feedback 20 terms": {"ranking": {"feedback_terms": 20}},
}


# -- data -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Turn:
    """One dialog turn, as the memory text both systems index."""

    dia_id: str
    text: str
    speaker: str
    when: dt.datetime
    episode: str


@dataclass(frozen=True)
class Question:
    """A category 1-4 question and its gold dia_ids."""

    category: int
    text: str
    gold: frozenset[str]


@dataclass
class Conversation:
    """One LoCoMo sample: its turns in order and its questions."""

    sample_id: str
    turns: list[Turn]
    questions: list[Question]

    @property
    def now(self) -> float:
        """The end of the conversation (its last session's time) as POSIX seconds."""
        return max(t.when for t in self.turns).timestamp()


def parse_when(value: str) -> dt.datetime:
    """A session date such as "1:56 pm on 8 May, 2023", taken as UTC."""
    return dt.datetime.strptime(value.strip(), DATE_FORMAT).replace(tzinfo=dt.UTC)


def memory_text(turn: dict, date_time: str) -> str:
    """"(<session date_time>) <speaker>: <text>", plus " [shares <caption>]" for an image turn."""
    text = f"({date_time}) {turn['speaker']}: {turn['text']}"
    return text + f" [shares {turn['blip_caption']}]" if turn.get("blip_caption") else text


def load_turns(sample_id: str, conversation: dict) -> list[Turn]:
    """Every turn of the sessions that exist (date keys can outnumber sessions), session by session."""
    sessions = sorted((int(m.group(1)), key) for key in conversation if (m := SESSION_KEY.fullmatch(key)))
    turns = []
    for number, key in sessions:
        date_time = conversation[f"{key}_date_time"]
        when = parse_when(date_time)
        episode = f"{sample_id}/session_{number}"
        turns.extend(Turn(t["dia_id"], memory_text(t, date_time), t["speaker"], when, episode)
                     for t in conversation[key])
    return turns


def repair_evidence(evidence: list[str], known: set[str]) -> frozenset[str]:
    """Gold dia_ids: joined strings split, malformed ids repaired, ids of missing turns dropped."""
    ids = {f"D{int(session)}:{int(turn)}" for raw in evidence for session, turn in DIA_ID.findall(raw)}
    return frozenset(ids & known)


def load_questions(qa: list[dict], known: set[str]) -> list[Question]:
    """Category 1-4 questions that keep some evidence (4 open-domain ones have none)."""
    questions = [Question(q["category"], q["question"], repair_evidence(q.get("evidence", []), known))
                 for q in qa if q["category"] in CATEGORIES]
    return [q for q in questions if q.gold]


def load(path: Path, conversations: int | None = None, questions: int | None = None) -> list[Conversation]:
    """The first `conversations` samples of locomo10.json, each with at most `questions` questions."""
    samples = json.loads(path.read_text(encoding="utf-8"))[:conversations]
    out = []
    for sample in samples:
        turns = load_turns(sample["sample_id"], sample["conversation"])
        qs = load_questions(sample["qa"], {t.dia_id for t in turns})[:questions]
        out.append(Conversation(sample["sample_id"], turns, qs))
    return out


# -- the two systems: ingest a conversation, then rank dia_id groups for a question ---------------
class VaultmemSystem:
    """One vault per conversation through the public API; a hit stands for every dia_id of its note."""

    def __init__(self, root: Path):
        self.root = root
        self.vault = None
        self.dia_ids: dict[str, frozenset[str]] = {}
        self.now = 0.0

    def ingest(self, conversation: Conversation) -> None:
        """Create the vault and write every turn as an event memory."""
        from vaultmem import Vault

        self.vault = Vault.init(self.root)
        items = [{"text": t.text, "timestamp": t.when.isoformat(), "source": t.speaker, "episode": t.episode,
                  "lifecycle": "event"} for t in conversation.turns]
        results = self.vault.remember_many(items)
        grouped: dict[str, set[str]] = defaultdict(set)
        for turn, result in zip(conversation.turns, results, strict=True):
            grouped[result.id].add(turn.dia_id)  # identical turns share one note
        self.dia_ids = {note: frozenset(ids) for note, ids in grouped.items()}
        self.now = conversation.now

    def configure(self, overrides: dict) -> None:
        """Write ranking overrides to the vault's config.yaml and reopen it."""
        import yaml

        from vaultmem import Vault

        (self.root / ".vaultmem" / "config.yaml").write_text(yaml.safe_dump(overrides), encoding="utf-8")
        self.vault.close()
        self.vault = Vault(self.root)

    def search(self, question: str) -> list[frozenset[str]]:
        """The dia_ids of the top 10 notes, best first."""
        hits = self.vault.recall(question, limit=TOP_K, now=self.now, record_access=False)
        return [self.dia_ids[h.id] for h in hits]

    def close(self) -> None:
        """Release the index connection."""
        if self.vault is not None:
            self.vault.close()


class Bm25sSystem:
    """bm25s over the same turn texts, one index per conversation."""

    def __init__(self):
        import Stemmer

        self.stemmer = Stemmer.Stemmer("english")
        self.model = None
        self.dia_ids: list[frozenset[str]] = []

    def _tokenize(self, texts: list[str], return_ids: bool):
        """Lower-cased word tokens, English stopwords out, Snowball-stemmed (ids for indexing)."""
        import bm25s

        return bm25s.tokenize(texts, stopwords="en", stemmer=self.stemmer, return_ids=return_ids,
                              show_progress=False)

    def ingest(self, conversation: Conversation) -> None:
        """Tokenize and index every turn."""
        import bm25s

        self.model = bm25s.BM25(**BM25S_PARAMS)
        self.model.index(self._tokenize([t.text for t in conversation.turns], True), show_progress=False)
        self.dia_ids = [frozenset([t.dia_id]) for t in conversation.turns]

    def search(self, question: str) -> list[frozenset[str]]:
        """The dia_ids of the top 10 turns, best first."""
        k = min(TOP_K, len(self.dia_ids))
        docs, _ = self.model.retrieve(self._tokenize([question], False), k=k, show_progress=False)
        return [self.dia_ids[int(i)] for i in docs[0]]

    def close(self) -> None:
        """Nothing to release."""


# -- metrics --------------------------------------------------------------------------------------
def score(ranked: list[frozenset[str]], gold: frozenset[str]) -> dict[str, float]:
    """R@5, R@10, Full@5, Full@10 and MRR of one ranked list of dia_id groups."""
    out = {}
    for k in (5, 10):
        found = gold & frozenset().union(*ranked[:k])
        out[f"R@{k}"] = len(found) / len(gold)
        out[f"Full@{k}"] = float(found == gold)
    first = next((rank for rank, ids in enumerate(ranked[:TOP_K], 1) if ids & gold), None)
    out["MRR"] = 1.0 / first if first else 0.0
    return out


@dataclass
class Run:
    """Per-question scores and timings of one system over the whole run."""

    scores: list[tuple[int, dict[str, float]]] = field(default_factory=list)
    ingest_s: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    misses: list[dict] = field(default_factory=list)  # questions with gold outside the top 10

    def ask(self, search: Callable[[str], list[frozenset[str]]], questions: list[Question]) -> None:
        """Time and score every question."""
        for q in questions:
            start = time.perf_counter()
            ranked = search(q.text)
            self.latencies_ms.append((time.perf_counter() - start) * 1000)
            self.scores.append((q.category, score(ranked, q.gold)))
            if self.scores[-1][1]["R@10"] < 1:
                self.misses.append({"category": q.category, "question": q.text, "gold": sorted(q.gold),
                                    "top10": [sorted(ids) for ids in ranked]})

    def quality(self) -> dict:
        """Mean metrics overall and per category."""
        by_category = {str(c): _mean([s for cat, s in self.scores if cat == c])
                       for c in CATEGORIES if any(cat == c for cat, _ in self.scores)}
        return {"overall": _mean([s for _, s in self.scores]), "by_category": by_category}

    def latency(self) -> dict[str, float]:
        """Median and 95th percentile of the recall time per question, in ms."""
        p50, p95 = np.percentile(self.latencies_ms, [50, 95]) if self.latencies_ms else (0.0, 0.0)
        return {"recall_p50_ms": round(float(p50), 3), "recall_p95_ms": round(float(p95), 3)}

    def summary(self) -> dict:
        """Quality plus ingest time and recall latency."""
        return {**self.quality(), "ingest_s": round(self.ingest_s, 3), **self.latency()}


def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
    """Each metric averaged over the rows (questions)."""
    return {m: round(sum(r[m] for r in rows) / len(rows), 4) if rows else 0.0 for m in METRICS}


# -- the run --------------------------------------------------------------------------------------
def run_conversation(conversation: Conversation, runs: dict[str, Run], ablation: dict[str, Run] | None) -> None:
    """Ingest one conversation into both systems, ask its questions, then any ablation variants."""
    with tempfile.TemporaryDirectory(prefix="vaultmem-locomo-") as tmp:
        systems = {"vaultmem": VaultmemSystem(Path(tmp) / "vault"), "bm25s": Bm25sSystem()}
        try:
            for name, system in systems.items():
                start = time.perf_counter()
                system.ingest(conversation)
                runs[name].ingest_s += time.perf_counter() - start
                known = len(runs[name].misses)
                runs[name].ask(system.search, conversation.questions)
                for miss in runs[name].misses[known:]:
                    miss["conversation"] = conversation.sample_id
            if ablation is not None:
                ask_variants(systems["vaultmem"], conversation.questions, ablation)
        finally:
            for system in systems.values():
                system.close()


def ask_variants(system: VaultmemSystem, questions: list[Question], ablation: dict[str, Run]) -> None:
    """Ask the questions again under each ranking variant of the same vault."""
    for variant, overrides in VARIANTS.items():
        system.configure(overrides)
        ablation[variant].ask(system.search, questions)


def evaluate(conversations: list[Conversation], with_ablation: bool) -> dict:
    """Both systems over every conversation; the report as --json writes it."""
    runs = {"vaultmem": Run(), "bm25s": Run()}
    ablation = {name: Run() for name in VARIANTS} if with_ablation else None
    for conversation in conversations:
        start = time.perf_counter()
        run_conversation(conversation, runs, ablation)
        print(f"{conversation.sample_id}: {len(conversation.turns)} turns, {len(conversation.questions)} questions, "
              f"{time.perf_counter() - start:.1f} s", file=sys.stderr)
    report = {name: run.summary() for name, run in runs.items()}
    report["n_questions"] = sum(len(c.questions) for c in conversations)
    report["misses"] = runs["vaultmem"].misses  # main() writes them to --misses, not to --json
    if ablation is not None:
        report["ablation"] = {name: {**run.quality(), **run.latency()} for name, run in ablation.items()}
    return report


# -- output ---------------------------------------------------------------------------------------
def _row(label: str, n: int, metrics: dict[str, float]) -> str:
    """One table line: a label, a count and the metrics."""
    return f"{label:<22}{n:>6}" + "".join(f"{metrics[m]:>9.3f}" for m in METRICS)


def category_counts(conversations: list[Conversation]) -> dict[str, int]:
    """Questions per category ("1".."4")."""
    counts: dict[str, int] = defaultdict(int)
    for question in (q for c in conversations for q in c.questions):
        counts[str(question.category)] += 1
    return counts


def table(report: dict, counts: dict[str, int]) -> str:
    """Per category and overall, for both systems."""
    lines = [f"{'system / category':<22}{'n':>6}" + "".join(f"{m:>9}" for m in METRICS)]
    for name in ("vaultmem", "bm25s"):
        result = report[name]
        for cat, metrics in result["by_category"].items():
            lines.append(_row(f"{name} {cat} {CATEGORIES[int(cat)]}", counts[cat], metrics))
        lines.append(_row(f"{name} overall", report["n_questions"], result["overall"]))
        lines.append(f"{'':<4}ingest {result['ingest_s']:.2f} s, recall p50 {result['recall_p50_ms']:.2f} ms, "
                     f"p95 {result['recall_p95_ms']:.2f} ms")
    return "\n".join(lines)


def ablation_table(variants: dict) -> str:
    """vaultmem variants: overall metrics, R@10 per category and the median recall time."""
    heads = [*METRICS, *(f"R@10 {c}" for c in CATEGORIES), "p50 ms"]
    lines = [f"{'vaultmem variant':<24}" + "".join(f"{h:>9}" for h in heads)]
    for name, result in variants.items():
        values = [*(result["overall"][m] for m in METRICS),
                  *(result["by_category"].get(str(c), {}).get("R@10") for c in CATEGORIES),
                  result["recall_p50_ms"]]
        lines.append(f"{name:<24}" + "".join(f"{v:>9.3f}" if v is not None else f"{'-':>9}" for v in values))
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA,
                        help=f"locomo10.json (default: {DEFAULT_DATA})")
    parser.add_argument("--conversations", type=int, help="only the first N conversations")
    parser.add_argument("--smoke", action="store_true", help=f"first conversation, first {SMOKE_QUESTIONS} questions")
    parser.add_argument("--ablation", action="store_true", help="also run vaultmem ranking variants")
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    parser.add_argument("--misses", type=Path, help="write vaultmem's misses (gold not all in the top 10) here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the tables, write --json; 2 when the data file is missing."""
    args = parse_args(argv)
    if not args.data.is_file():
        print(f"no LoCoMo data at {args.data}", file=sys.stderr)
        return 2
    limit, per_conversation = (1, SMOKE_QUESTIONS) if args.smoke else (args.conversations, None)
    conversations = load(args.data, limit, per_conversation)
    start = time.perf_counter()
    report = evaluate(conversations, args.ablation)
    misses = report.pop("misses")
    if args.misses:
        args.misses.parent.mkdir(parents=True, exist_ok=True)
        args.misses.write_text(json.dumps(misses, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(table(report, category_counts(conversations)))
    print(f"n_questions {report['n_questions']}, run {time.perf_counter() - start:.1f} s")
    if args.ablation:
        print("\n" + ablation_table(report["ablation"]))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
