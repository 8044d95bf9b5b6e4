"""The retrieval-only protocol every long-conversation benchmark here shares: vaultmem against bm25s.

A corpus script turns its data into `Conversation`s (turns with ids, questions with gold turn ids and a
question type) and calls `main_for`: one vault and one bm25s index per conversation, the same texts in both,
every question asked of both. Metrics per question: R@k = |gold in top k| / |gold|, Full@k = all gold in the
top k (k = 5, 10), MRR = 1 / rank of the first gold hit in the top 10. A vaultmem note that holds several
turns (a merge) counts as all of them. Ranking settings can be overridden for a run with `--set
section.key=value` (repeatable) or `--config FILE` (YAML), written to the vault's .vaultmem/config.yaml before
ingest. Needs the dev extra (bm25s, PyStemmer).
"""

from __future__ import annotations

import argparse
import copy
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

METRICS = ("R@5", "R@10", "Full@5", "Full@10", "MRR")
SIDE_BY_SIDE = ("R@5", "R@10", "Full@10", "MRR")
TOP_K = 10
BM25S_PARAMS = {"k1": 1.5, "b": 0.75}
CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")


# -- data -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Turn:
    """One message, as the memory text both systems index."""

    dia_id: str
    text: str
    speaker: str
    when: dt.datetime
    episode: str


@dataclass(frozen=True)
class Question:
    """A question, its type (a key of the corpus's type table) and its gold turn ids."""

    category: str
    text: str
    gold: frozenset[str]


@dataclass
class Conversation:
    """One conversation: its turns in order and its questions."""

    sample_id: str
    turns: list[Turn]
    questions: list[Question]

    @property
    def now(self) -> float:
        """The end of the conversation (its last turn's time) as POSIX seconds."""
        return max(t.when for t in self.turns).timestamp()


# -- ranking overrides ----------------------------------------------------------------------------
def parse_overrides(sets: list[str], config_file: Path | None) -> dict:
    """--config's YAML, then each --set section.key=value (a YAML scalar) over it."""
    import yaml

    overrides = yaml.safe_load(config_file.read_text(encoding="utf-8")) or {} if config_file else {}
    for item in sets:
        path, sep, raw = item.partition("=")
        if not sep or not path.strip():
            raise SystemExit(f"--set wants section.key=value, not {item!r}")
        *sections, key = path.strip().split(".")
        target = overrides
        for section in sections:
            target = target.setdefault(section, {})
        target[key] = yaml.safe_load(raw)
    return overrides


def merged(base: dict, over: dict) -> dict:
    """`over` laid on a copy of `base`, mapping by mapping."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


# -- the two systems: ingest a conversation, then rank turn-id groups for a question --------------
class VaultmemSystem:
    """One vault per conversation through the public API; a hit stands for every turn id of its note."""

    def __init__(self, root: Path, overrides: dict | None = None):
        self.root = root
        self.overrides = overrides or {}
        self.vault = None
        self.dia_ids: dict[str, frozenset[str]] = {}
        self.texts: dict[str, set[str]] = defaultdict(set)  # the distinct turn texts each note took in
        self.now = 0.0

    def ingest(self, conversation: Conversation) -> None:
        """Create the vault (with the run's overrides) and write every turn as an event memory."""
        from vaultmem import Vault

        if self.overrides:
            self._write_config(self.overrides)
        self.vault = Vault.init(self.root)
        items = [{"text": t.text, "timestamp": t.when.isoformat(), "source": t.speaker, "episode": t.episode,
                  "lifecycle": "event"} for t in conversation.turns]
        results = self.vault.remember_many(items)
        if self.vault.settings.semantic.enabled:  # as `vaultmem embed` would in the background: recalls then time recall alone
            self.vault.embed()
        grouped: dict[str, set[str]] = defaultdict(set)
        for turn, result in zip(conversation.turns, results, strict=True):
            grouped[result.id].add(turn.dia_id)  # merged or identical turns share one note
            self.texts[result.id].add(turn.text)
        self.dia_ids = {note: frozenset(ids) for note, ids in grouped.items()}
        self.now = conversation.now

    def _write_config(self, overrides: dict) -> None:
        """The vault's config.yaml holding exactly these settings (the defaults fill in the rest)."""
        import yaml

        path = self.root / ".vaultmem" / "config.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(overrides, allow_unicode=True), encoding="utf-8")

    def configure(self, overrides: dict) -> None:
        """Write the run's overrides with these on top to config.yaml and reopen the vault."""
        from vaultmem import Vault

        self._write_config(merged(self.overrides, overrides))
        self.vault.close()
        self.vault = Vault(self.root)

    def largest_note(self) -> dict[str, int]:
        """The note that took in the most distinct turn texts (identical repeats are one memory): how many
        texts, how many turns, and its characters (frontmatter included)."""
        note = max(self.texts, key=lambda n: (len(self.texts[n]), len(self.dia_ids[n])))
        return {"texts": len(self.texts[note]), "turns": len(self.dia_ids[note]),
                "chars": len(self.vault.markdown(note))}

    def search(self, question: str) -> list[frozenset[str]]:
        """The turn ids of the top 10 notes, best first."""
        hits = self.vault.recall(question, limit=TOP_K, now=self.now, record_access=False)
        return [self.dia_ids[h.id] for h in hits]

    def close(self) -> None:
        """Release the index connection."""
        if self.vault is not None:
            self.vault.close()


def split_cjk(text: str) -> str:
    """Each run of CJK characters replaced by its overlapping character bigrams (a lone character kept)."""
    def bigrams(match: re.Match) -> str:
        run = match.group()
        return " " + " ".join(run[i:i + 2] for i in range(max(1, len(run) - 1))) + " "
    return CJK_RUN.sub(bigrams, text)


class Bm25sSystem:
    """bm25s over the same turn texts, one index per conversation; CJK runs split into bigrams."""

    def __init__(self):
        import Stemmer

        self.stemmer = Stemmer.Stemmer("english")
        self.model = None
        self.dia_ids: list[frozenset[str]] = []

    def _tokenize(self, texts: list[str], return_ids: bool):
        """Lower-cased word tokens, English stopwords out, Snowball-stemmed (ids for indexing)."""
        import bm25s

        return bm25s.tokenize([split_cjk(t) for t in texts], stopwords="en", stemmer=self.stemmer,
                              return_ids=return_ids, show_progress=False,
                              token_pattern=r"(?u)\b\w\w+\b|[\u3400-\u9fff]")

    def ingest(self, conversation: Conversation) -> None:
        """Tokenize and index every turn."""
        import bm25s

        self.model = bm25s.BM25(**BM25S_PARAMS)
        self.model.index(self._tokenize([t.text for t in conversation.turns], True), show_progress=False)
        self.dia_ids = [frozenset([t.dia_id]) for t in conversation.turns]

    def search(self, question: str) -> list[frozenset[str]]:
        """The turn ids of the top 10 turns, best first."""
        k = min(TOP_K, len(self.dia_ids))
        docs, _ = self.model.retrieve(self._tokenize([question], False), k=k, show_progress=False)
        return [self.dia_ids[int(i)] for i in docs[0]]

    def close(self) -> None:
        """Nothing to release."""


# -- metrics --------------------------------------------------------------------------------------
def score(ranked: list[frozenset[str]], gold: frozenset[str]) -> dict[str, float]:
    """R@5, R@10, Full@5, Full@10 and MRR of one ranked list of turn-id groups."""
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

    categories: dict[str, str]
    scores: list[tuple[str, dict[str, float]]] = field(default_factory=list)
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
        """Mean metrics overall and per question type (in the corpus's order)."""
        by_category = {c: _mean([s for cat, s in self.scores if cat == c])
                       for c in self.categories if any(cat == c for cat, _ in self.scores)}
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
@dataclass
class Plan:
    """What one run asks: the question types, the run's overrides and any ranking variants."""

    categories: dict[str, str]
    overrides: dict = field(default_factory=dict)
    variants: dict[str, dict] | None = None


def run_conversation(conversation: Conversation, plan: Plan, runs: dict[str, Run],
                     ablation: dict[str, Run] | None, piles: list[dict]) -> None:
    """Ingest one conversation into both systems, ask its questions, then any ablation variants."""
    with tempfile.TemporaryDirectory(prefix="vaultmem-bench-") as tmp:
        systems = {"vaultmem": VaultmemSystem(Path(tmp) / "vault", plan.overrides), "bm25s": Bm25sSystem()}
        try:
            for name, system in systems.items():
                start = time.perf_counter()
                system.ingest(conversation)
                runs[name].ingest_s += time.perf_counter() - start
                known = len(runs[name].misses)
                runs[name].ask(system.search, conversation.questions)
                for miss in runs[name].misses[known:]:
                    miss["conversation"] = conversation.sample_id
            piles.append({"conversation": conversation.sample_id, **systems["vaultmem"].largest_note()})
            for variant, overrides in (plan.variants or {}).items():
                systems["vaultmem"].configure(overrides)
                ablation[variant].ask(systems["vaultmem"].search, conversation.questions)
        finally:
            for system in systems.values():
                system.close()


def evaluate(conversations: list[Conversation], plan: Plan) -> dict:
    """Both systems over every conversation; the report as --json writes it."""
    runs = {"vaultmem": Run(plan.categories), "bm25s": Run(plan.categories)}
    ablation = {name: Run(plan.categories) for name in plan.variants} if plan.variants else None
    piles: list[dict] = []
    for conversation in conversations:
        start = time.perf_counter()
        run_conversation(conversation, plan, runs, ablation, piles)
        print(f"{conversation.sample_id}: {len(conversation.turns)} turns, {len(conversation.questions)} questions, "
              f"{time.perf_counter() - start:.1f} s", file=sys.stderr)
    report = {name: run.summary() for name, run in runs.items()}
    report["n_questions"] = sum(len(c.questions) for c in conversations)
    report["n_by_category"] = category_counts(conversations)
    report["largest_note"] = max(piles, key=lambda p: (p["texts"], p["turns"]))
    report["overrides"] = plan.overrides
    report["misses"] = runs["vaultmem"].misses  # written to --misses, not to --json
    if ablation is not None:
        report["ablation"] = {name: {**run.quality(), **run.latency()} for name, run in ablation.items()}
    return report


def category_counts(conversations: list[Conversation]) -> dict[str, int]:
    """Questions per type."""
    counts: dict[str, int] = defaultdict(int)
    for question in (q for c in conversations for q in c.questions):
        counts[question.category] += 1
    return dict(counts)


# -- output ---------------------------------------------------------------------------------------
def _row(label: str, n: int, metrics: dict[str, float]) -> str:
    """One table line: a label, a count and the metrics."""
    return f"{label:<26}{n:>6}" + "".join(f"{metrics[m]:>9.3f}" for m in METRICS)


def _label(key: str, categories: dict[str, str]) -> str:
    """"1 multi-hop" for a numbered type, the name alone where key and name are one."""
    return f"{key} {categories[key]}" if categories[key] != key else key


def table(report: dict, categories: dict[str, str]) -> str:
    """Per question type and overall, for both systems."""
    counts = report["n_by_category"]
    lines = [f"{'system / type':<26}{'n':>6}" + "".join(f"{m:>9}" for m in METRICS)]
    for name in ("vaultmem", "bm25s"):
        result = report[name]
        for cat, metrics in result["by_category"].items():
            lines.append(_row(f"{name} {_label(cat, categories)}", counts[cat], metrics))
        lines.append(_row(f"{name} overall", report["n_questions"], result["overall"]))
        lines.append(f"{'':<4}ingest {result['ingest_s']:.2f} s, recall p50 {result['recall_p50_ms']:.2f} ms, "
                     f"p95 {result['recall_p95_ms']:.2f} ms")
    return "\n".join(lines)


def side_by_side(report: dict, categories: dict[str, str]) -> str:
    """vaultmem | bm25s | vaultmem - bm25s, per type and overall."""
    heads = [f"{m} {s}" for s in ("vm", "bm25s", "diff") for m in SIDE_BY_SIDE]
    lines = [f"{'type':<26}{'n':>6}" + "".join(f"{h:>14}" for h in heads)]
    rows = [(_label(c, categories), report["n_by_category"][c], c) for c in report["vaultmem"]["by_category"]]
    for label, n, key in [*rows, ("overall", report["n_questions"], None)]:
        vm, bm = (report[s]["overall"] if key is None else report[s]["by_category"][key]
                  for s in ("vaultmem", "bm25s"))
        values = [vm[m] for m in SIDE_BY_SIDE] + [bm[m] for m in SIDE_BY_SIDE] + \
                 [vm[m] - bm[m] for m in SIDE_BY_SIDE]
        lines.append(f"{label:<26}{n:>6}" + "".join(f"{v:>14.3f}" for v in values))
    return "\n".join(lines)


def ablation_table(variants: dict, categories: dict[str, str]) -> str:
    """vaultmem variants: overall metrics, R@10 per type and the median recall time."""
    heads = [*METRICS, *(f"R@10 {c}" for c in categories), "p50 ms"]
    lines = [f"{'vaultmem variant':<24}" + "".join(f"{h:>9}" for h in heads)]
    for name, result in variants.items():
        values = [*(result["overall"][m] for m in METRICS),
                  *(result["by_category"].get(c, {}).get("R@10") for c in categories),
                  result["recall_p50_ms"]]
        lines.append(f"{name:<24}" + "".join(f"{v:>9.3f}" if v is not None else f"{'-':>9}" for v in values))
    return "\n".join(lines)


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """The options every corpus script has: overrides, --json, --misses."""
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override a vaultmem setting for this run, e.g. ranking.bm25_b=0.75 (repeatable)")
    parser.add_argument("--config", type=Path, help="a YAML file of vaultmem settings for this run")
    parser.add_argument("--semantic", action="store_true", help="recall by meaning too (semantic.enabled: true; the "
                        "notes are embedded after ingest, which ingest_s includes)")
    parser.add_argument("--semantic-weights", metavar="W,W,...", help="with --semantic, also these semantic.weight "
                        "variants (asked of the same embedded vault)")
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    parser.add_argument("--misses", type=Path, help="write vaultmem's misses (gold not all in the top 10) here")


def run_and_report(conversations: list[Conversation], args: argparse.Namespace, categories: dict[str, str],
                   variants: dict[str, dict] | None = None) -> dict:
    """Evaluate, print the tables, write --json and --misses; the report."""
    overrides = parse_overrides(args.sets, args.config)
    if args.semantic:
        overrides = merged(overrides, {"semantic": {"enabled": True}})
    if args.semantic and args.semantic_weights:
        variants = {**(variants or {}), **{f"semantic weight {w}": {"semantic": {"weight": float(w)}}
                                           for w in args.semantic_weights.split(",")}}
    plan = Plan(categories, overrides, variants)
    start = time.perf_counter()
    report = evaluate(conversations, plan)
    misses = report.pop("misses")
    if args.misses:
        args.misses.parent.mkdir(parents=True, exist_ok=True)
        args.misses.write_text(json.dumps(misses, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(table(report, categories))
    print("\n" + side_by_side(report, categories))
    pile = report["largest_note"]
    print(f"\nlargest vaultmem note: {pile['texts']} distinct texts ({pile['turns']} turns), {pile['chars']} characters"
          f" ({pile['conversation']})")
    print(f"n_questions {report['n_questions']}, run {time.perf_counter() - start:.1f} s"
          + (f", overrides {json.dumps(plan.overrides)}" if plan.overrides else ""))
    if variants:
        print("\n" + ablation_table(report["ablation"], categories))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return report
