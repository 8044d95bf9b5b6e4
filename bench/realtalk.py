"""REALTALK retrieval benchmark: vaultmem's default recall against a bm25s baseline on real chats, no LLM.

    python bench/realtalk.py                                # the 10 chats, 728 questions (about a minute)
    python bench/realtalk.py /path/to/REALTALK/data         # the folder of Chat_*.json files
    python bench/realtalk.py --set ranking.bm25_b=0.75      # a setting overridden for this run (repeatable)
    python bench/realtalk.py --smoke                        # first chat, first 30 questions: CI
    python bench/realtalk.py --json out.json --misses m.json

REALTALK (Lee et al. 2025, github.com/danny911kr/REALTALK, data/Chat_*.json): 21 days of real messaging-app
chats between two people, 10 chats of 410-1548 messages, messages from a few characters to 2k. Its memory
probing questions carry evidence message ids. Protocol as bench/locomo.py: one memory per message,
"(<message date_time>) <speaker>: <clean_text>" (+ " [shares <blip_caption>]" when the message has an image),
stamped with the message's own time (UTC), one episode per session, one vault per chat. Every question with
evidence is a query; gold = its evidence ids, repaired (joined "D5:12;D5:16", ranges "D12:3-D12:5", trailing
dots, "D13:45:D20:19"), ids of messages that do not exist dropped. Types: 1 multi-hop, 2 temporal,
3 commonsense (the REALTALK paper's categories). The data is read from ../shared/data/realtalk beside the
checkout unless a folder is given; a SHA256SUMS file in the folder is checked first, so a changed or truncated
chat stops the run instead of moving the figures.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import re
import sys
from pathlib import Path

from _retrieval import Conversation, Question, Turn, add_run_options, run_and_report

# beside the checkout, as the shared data sits for every clone (shared/data/README.md)
DEFAULT_DATA = (Path(__file__).resolve().parent.parent / ".." / "shared" / "data" / "realtalk").resolve()
SOURCE = "https://github.com/danny911kr/REALTALK (folder data/, files Chat_*.json)"
CATEGORIES = {"1": "multi-hop", "2": "temporal", "3": "commonsense"}
SMOKE_QUESTIONS = 30
SESSION_KEY = re.compile(r"session_(\d+)")
DIA_ID = re.compile(r"D(\d+):(\d+)")
DIA_RANGE = re.compile(r"D(\d+):(\d+)\s*-\s*D(\d+):(\d+)")
DATE_FORMAT = "%d.%m.%Y, %H:%M:%S"  # "29.12.2023, 22:42:04"


def parse_when(value: str) -> dt.datetime:
    """A message time such as "29.12.2023, 22:42:04", taken as UTC."""
    return dt.datetime.strptime(value.strip(), DATE_FORMAT).replace(tzinfo=dt.UTC)


def memory_text(message: dict) -> str:
    """"(<date_time>) <speaker>: <clean_text>", plus " [shares <caption>]" for an image message."""
    text = f"({message['date_time']}) {message['speaker']}: {message['clean_text']}"
    return text + f" [shares {message['blip_caption']}]" if message.get("blip_caption") else text


def load_turns(name: str, chat: dict) -> list[Turn]:
    """Every message of every session, session by session."""
    sessions = sorted((int(m.group(1)), key) for key in chat if (m := SESSION_KEY.fullmatch(key)))
    return [Turn(m["dia_id"], memory_text(m), m["speaker"], parse_when(m["date_time"]), f"{name}/session_{n}")
            for n, key in sessions for m in chat[key]]


def repair_evidence(evidence: list[str], known: set[str]) -> frozenset[str]:
    """Gold ids: joined strings split, same-session ranges expanded, ids of missing messages dropped."""
    ids = set()
    for raw in evidence:
        for a, b, c, d in DIA_RANGE.findall(raw):
            if a == c:
                ids.update(f"D{int(a)}:{i}" for i in range(int(b), int(d) + 1))
        ids.update(f"D{int(s)}:{int(t)}" for s, t in DIA_ID.findall(raw))
    return frozenset(ids & known)


def load(folder: Path, chats: int | None = None, questions: int | None = None) -> list[Conversation]:
    """The first `chats` Chat_<n>_*.json files (in n order), each with at most `questions` questions."""
    files = sorted(folder.glob("Chat_*.json"), key=lambda p: int(p.name.split("_")[1]))[:chats]
    out = []
    for path in files:
        chat = json.loads(path.read_text(encoding="utf-8"))
        turns = load_turns(path.stem, chat)
        known = {t.dia_id for t in turns}
        qs = [Question(str(q["category"]), q["question"], repair_evidence(q.get("evidence", []), known))
              for q in chat["qa"] if str(q.get("category")) in CATEGORIES]
        out.append(Conversation(path.stem, turns, [q for q in qs if q.gold][:questions]))
    return out


def checksum_mismatches(folder: Path) -> list[str]:
    """The files SHA256SUMS in `folder` lists whose sha256 differs or that are missing; [] without the file."""
    sums = folder / "SHA256SUMS"
    if not sums.is_file():
        return []
    bad = []
    for line in sums.read_text(encoding="utf-8").splitlines():
        expected, _, name = line.strip().partition("  ")
        if not name:
            continue
        path = folder / name.lstrip("*")
        if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != expected.lower():
            bad.append(name)
    return bad


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA,
                        help=f"the folder of REALTALK's Chat_*.json (default: {DEFAULT_DATA})")
    parser.add_argument("--chats", type=int, help="only the first N chats")
    parser.add_argument("--smoke", action="store_true", help=f"first chat, first {SMOKE_QUESTIONS} questions")
    add_run_options(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the tables, write --json; 2 when the data is missing."""
    args = parse_args(argv)
    if not any(args.data.glob("Chat_*.json")):
        print(f"no REALTALK data (Chat_*.json) in {args.data}; get it from {SOURCE}", file=sys.stderr)
        return 2
    if bad := checksum_mismatches(args.data):
        print(f"REALTALK files in {args.data} differ from its SHA256SUMS: {', '.join(bad)}; "
              f"get them again from {SOURCE}", file=sys.stderr)
        return 2
    limit, per_chat = (1, SMOKE_QUESTIONS) if args.smoke else (args.chats, None)
    run_and_report(load(args.data, limit, per_chat), args, CATEGORIES)
    return 0


if __name__ == "__main__":
    sys.exit(main())
