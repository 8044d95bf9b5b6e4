"""LoCoMo retrieval benchmark: vaultmem's default recall against a bm25s baseline, no LLM.

    python bench/locomo.py                               # all 10 conversations (under a minute)
    python bench/locomo.py --json bench/out/locomo.json  # also write the figures as JSON
    python bench/locomo.py --smoke                       # first conversation, first 30 questions: CI
    python bench/locomo.py --ablation                    # also vaultmem ranking variants (config overrides)
    python bench/locomo.py --misses misses.json          # also vaultmem's misses: question, gold, top 10
    python bench/locomo.py --set ranking.bm25_b=0.75     # a setting overridden for this run (repeatable)

Protocol (shared/data/README.md): one memory per dialog turn, "(<session date_time>) <speaker>: <text>"
(+ " [shares <blip_caption>]" for image turns), stamped with its session's date (UTC), one vault
per conversation. Every question of categories 1-4 with evidence is a query; gold = its evidence
dia_ids, repaired ("D8:6; D9:17", "D:11:26", "D30:05") with turns that do not exist dropped.
vaultmem recalls with its default configuration as of the conversation's last session; bm25s
(k1 1.5, b 0.75, English stopwords, Snowball stemmer) ranks the same texts. Metrics per question:
R@k = |gold in top k| / |gold|, Full@k = all gold in top k (k = 5, 10), MRR = 1 / rank of the
first gold hit in the top 10. A vaultmem note holding several identical turns counts as all of them.
The systems, metrics and reports are bench/_retrieval.py's, shared with realtalk.py and stress.py.
Needs the dev extra (bm25s, PyStemmer).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
from pathlib import Path

from _retrieval import Conversation, Question, Turn, add_run_options, run_and_report

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = (REPO / ".." / "shared" / "data" / "locomo10.json").resolve()
CATEGORIES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop"}
SMOKE_QUESTIONS = 30
SESSION_KEY = re.compile(r"session_(\d+)")
DIA_ID = re.compile(r"D:?(\d+):(\d+)")  # also matches the malformed "D:11:26" and "D30:05"
DATE_FORMAT = "%I:%M %p on %d %B, %Y"   # "1:56 pm on 8 May, 2023"
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
    questions = [Question(str(q["category"]), q["question"], repair_evidence(q.get("evidence", []), known))
                 for q in qa if str(q["category"]) in CATEGORIES]
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


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA,
                        help=f"locomo10.json (default: {DEFAULT_DATA})")
    parser.add_argument("--conversations", type=int, help="only the first N conversations")
    parser.add_argument("--smoke", action="store_true", help=f"first conversation, first {SMOKE_QUESTIONS} questions")
    parser.add_argument("--ablation", action="store_true", help="also run vaultmem ranking variants")
    add_run_options(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the tables, write --json; 2 when the data file is missing."""
    args = parse_args(argv)
    if not args.data.is_file():
        print(f"no LoCoMo data at {args.data}", file=sys.stderr)
        return 2
    limit, per_conversation = (1, SMOKE_QUESTIONS) if args.smoke else (args.conversations, None)
    conversations = load(args.data, limit, per_conversation)
    run_and_report(conversations, args, CATEGORIES, VARIANTS if args.ablation else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
