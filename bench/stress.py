"""Synthetic recall stress set: the shapes LoCoMo lacks, generated per seed (never stored), vaultmem vs bm25s.

    python bench/stress.py                      # 5 conversations, seeds 0-4 (seconds)
    python bench/stress.py --seed 7 --conversations 10
    python bench/stress.py --set ranking.bm25_b=0.75 --json out.json
    python bench/stress.py --smoke              # one conversation: CI

Each conversation is a user ("Maya") talking with an assistant over dated sessions; every question has gold
turn ids. Kinds of case (the question types of the report):
- short-fact: a short user statement ("My gym locker code is 4471.") among long assistant replies
  (2.5-4k characters) that repeat its words; gold = the statement.
- short-fact-zh: the same in Chinese ("客户张三的合同编号是 CT2024-0876。").
- merge-pile: 25 turns that all name one URL, or one ticket id, each about its own subject; the question
  names the subject and the URL/id; gold = that subject's turn. The report also gives the largest vaultmem
  note after ingest (turns merged into it, characters).
- relative-date: "See you tomorrow at the dentist" and "next Friday" written the day(s) before a date D,
  the gold turn states an event with D written out; the question names D ("27 March, 2022").
- question-gold: the gold turn is the user's own question ("Could you suggest a gift for my nephew's
  graduation?"); the query is a question about what was asked.
- other-speaker: the query names the user ("What did Maya learn about the ferry?"); gold = the assistant's
  answer, among the user's own turns on the same subject.
- fact-in-question: the user states a fact inside a question ("I'm flying to Osaka with my 4-year-old
  daughter in May. Any tips for the flight?"), among user statements and a reply sharing its words; the
  question asks for the fact; gold = that question turn.
Protocol, metrics and the bm25s baseline are those of bench/_retrieval.py; memory text = the message
alone (no date prefix), stamped with its session's date, one episode per session.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import sys
from dataclasses import dataclass, field

from _retrieval import Conversation, Question, Turn, add_run_options, run_and_report

CATEGORIES = {k: k for k in ("short-fact", "short-fact-zh", "merge-pile", "relative-date", "question-gold",
                             "other-speaker", "fact-in-question")}
USER, ASSISTANT = "Maya", "assistant"
LONG_REPLIES = 10  # long assistant replies that share a short fact's words
USER_ASIDES = ["I will tell my sister about the {s} too.", "My friend says the {s} is confusing.",
               "I wrote the {s} on a sticky note and lost it.", "Remind me later about the {s}.",
               "The {s} came up again at lunch today.", "I still have questions about the {s}."]
START = dt.datetime(2022, 1, 3, 9, 0, tzinfo=dt.UTC)

# (topic words, the fact with {x} filled per seed, the question, choices for {x})
FACTS = [
    ("gym locker code", "My gym locker code is {x}.", "What is my gym locker code?", ["4471", "9038", "2265"]),
    ("dentist", "My dentist is Dr. {x} on Elm Street.", "Who is my dentist?", ["Okafor", "Lindqvist", "Moreau"]),
    ("sister born", "My sister was born in {x}.", "When was my sister born?", ["Porto", "Kraków", "Osaka"]),
    ("car drive", "I drive a {x}.", "What car do I drive?", ["green Skoda Octavia", "blue Mazda 3"]),
    ("allergic food", "I am allergic to {x}.", "What food am I allergic to?", ["cashews", "shellfish", "sesame"]),
    ("coffee milk", "I take my coffee with {x}.", "How do I take my coffee?",
     ["oat milk and no sugar", "a dash of cream"]),
    ("fig tree name", "My fig tree is called {x}.", "What is my fig tree called?",
     ["Bartholomew", "Figaro", "Ziggy"]),
    ("bike commute", "I commute by bike along the {x}.", "Which route do I bike to work?",
     ["canal path", "river trail"]),
]
FILLER = ["{w} matters more than most people think, and the details change from case to case.",
          "A common approach to {w} is to start small, keep notes and adjust after a week or two.",
          "Many guides on {w} recommend checking with a professional before making a big change.",
          "If you are unsure about {w}, write down what you already know and what you still need.",
          "People often underestimate how much {w} depends on routine, budget and local rules.",
          "Here is a longer overview of {w}, with the trade-offs you may want to weigh.",
          "In short, {w} is worth a plan: pick one step for today and one for next month."]
FACTS_ZH = [("客户张三的合同编号是 CT2024-{x}。", "张三的合同编号是多少？", "合同 编号 客户 张三"),
            ("服务器告警阈值设为 CPU {x}%。", "服务器的告警阈值是多少？", "服务器 告警 阈值 CPU"),
            ("发票号码是 FP{x}，请报销。", "我的发票号码是什么？", "发票 号码 报销")]
FILLER_ZH = ["关于{w}，通常需要先了解相关规定，再结合实际情况安排下一步。",
             "很多人在处理{w}时会忽略细节，建议把关键信息记录下来，定期核对。",
             "如果你对{w}还有疑问，可以先整理已有资料，再和相关负责人确认。",
             "总的来说，{w}是一件需要耐心的事情，按步骤推进会更稳妥。"]
SUBJECTS = ["database failover", "cache warmup", "log rotation", "certificate renewal", "canary rollout",
            "queue draining", "schema migration", "backup restore", "DNS cutover", "feature flags",
            "load shedding", "secret rotation", "index rebuild", "cron cleanup", "billing export",
            "image pruning", "quota alerts", "replica lag", "session expiry", "audit export",
            "rate limits", "blue-green switch", "disk resize", "kernel patch", "CDN purge"]
EVENTS = ["ran my first half marathon", "signed the lease for the new studio", "adopted a grey cat",
          "passed my driving test", "gave the keynote at the library", "planted the olive tree"]
PLACES = ["dentist", "pharmacy", "climbing gym", "bakery", "tram stop", "museum"]
ASKS = [("a gift", "my nephew's graduation"), ("a recipe", "my book club dinner"),
        ("a hiking route", "my trip to Madeira"), ("a podcast", "my long drive to Leeds"),
        ("a board game", "my parents' anniversary"), ("a plant", "my dark hallway")]
FERRY = [("ferry to Brac", "The ferry to Brac leaves at 7:40 from pier 3."),
         ("night train to Vienna", "The night train to Vienna departs at 22:15 from platform 9."),
         ("museum pass", "The museum pass costs 38 euros and covers six museums."),
         ("visa appointment", "Your visa appointment needs two photos and the bank letter."),
         ("library card", "The library card is free and renews every twelve months.")]


@dataclass
class Builder:
    """Sessions of one conversation as they are generated, then its questions."""

    name: str
    rng: random.Random
    sessions: list[tuple[dt.datetime, list[tuple[str, str]]]] = field(default_factory=list)
    questions: list[tuple[str, str, list[tuple[int, int]]]] = field(default_factory=list)

    def session(self, when: dt.datetime, turns: list[tuple[str, str]]) -> int:
        """Add a session (speaker, text pairs) on a date; its index."""
        self.sessions.append((when, turns))
        return len(self.sessions) - 1

    def ask(self, kind: str, text: str, gold: list[tuple[int, int]]) -> None:
        """A question whose gold turns are (session index, turn index) pairs."""
        self.questions.append((kind, text, gold))

    def long_reply(self, words: str, filler: list[str] = FILLER, size: int = 0) -> str:
        """A long assistant reply, each sentence naming one of the topic's words (2.5-4k characters)."""
        size = size or self.rng.randint(2500, 4000)
        parts: list[str] = []
        while sum(map(len, parts)) < size:
            parts.append(self.rng.choice(filler).format(w=self.rng.choice(words.split())))
        return " ".join(parts) if filler is FILLER else "".join(parts)

    def day(self, offset: int) -> dt.datetime:
        """A time on day `offset` of the conversation."""
        return START + dt.timedelta(days=offset, hours=self.rng.randint(0, 10))

    def conversation(self) -> Conversation:
        """Sessions in date order, turn ids "S<session>:<turn>"."""
        order = sorted(range(len(self.sessions)), key=lambda i: self.sessions[i][0])
        number = {index: n for n, index in enumerate(order, 1)}
        turns = [Turn(f"S{number[i]}:{k}", text, speaker, self.sessions[i][0] + dt.timedelta(minutes=k),
                      f"{self.name}/session_{number[i]}")
                 for i in order for k, (speaker, text) in enumerate(self.sessions[i][1], 1)]
        questions = [Question(kind, text, frozenset(f"S{number[s]}:{k + 1}" for s, k in gold))
                     for kind, text, gold in self.questions]
        return Conversation(self.name, turns, questions)


def short_facts(b: Builder, day: int) -> int:
    """Short statements among long replies on their topic, in English then in Chinese; the next day."""
    for words, fact, question, choices in FACTS:
        turns = [(USER, f"Quick question about my {words.split()[0]}."), (ASSISTANT, b.long_reply(words))]
        at = len(turns)
        turns += [(USER, fact.format(x=b.rng.choice(choices))), (ASSISTANT, b.long_reply(words))]
        b.ask("short-fact", question, [(b.session(b.day(day), turns), at)])
        for later in range(1, LONG_REPLIES):  # the topic comes back in later sessions, answered at length
            b.session(b.day(day + later), [(USER, "Tell me more, please."),
                                           (ASSISTANT, b.long_reply(words))])
        day += 1
    for fact, question, words in FACTS_ZH:
        turns = [(ASSISTANT, b.long_reply(words, FILLER_ZH, 900)), (USER, fact.format(x=b.rng.randint(1000, 9999)))]
        turns += [(ASSISTANT, b.long_reply(words, FILLER_ZH, 900)) for _ in range(LONG_REPLIES)]
        b.ask("short-fact-zh", question, [(b.session(b.day(day), turns), 1)])
        day += 1
    return day + LONG_REPLIES


def merge_piles(b: Builder, day: int) -> int:
    """25 turns naming one URL and 25 naming one ticket id, three questions on each pile; the next day."""
    url = f"https://wiki.example.org/runbooks/{b.rng.randint(100, 999)}"
    ticket = f"INC-{b.rng.randint(1000, 9999)}"
    for anchor, say in ((url, "The {s} steps are in {a}, section {n}."),
                        (ticket, "For {a} I handled the {s} part this morning, step {n} done.")):
        subjects = b.rng.sample(SUBJECTS, len(SUBJECTS))
        turns = [(USER, say.format(s=s, a=anchor, n=b.rng.randint(2, 9))) for s in subjects]
        index = b.session(b.day(day), turns)
        for k in b.rng.sample(range(len(subjects)), 3):
            b.ask("merge-pile", f"What did I note about {subjects[k]} in {anchor}?", [(index, k)])
        day += 1
    return day


def relative_dates(b: Builder, day: int) -> int:
    """Relative dates said before a day D, the event on D told later; the next free day."""
    for event, place in zip(b.rng.sample(EVENTS, 4), b.rng.sample(PLACES, 4), strict=True):
        target = START + dt.timedelta(days=day + 7)
        target += dt.timedelta(days=(4 - target.weekday()) % 7)  # a Friday: "next Friday" said on the Sunday before
        b.session(target - dt.timedelta(days=1), [(USER, f"See you tomorrow at the {place}!"),
                                                  (ASSISTANT, "See you tomorrow, enjoy the evening.")])
        b.session(target - dt.timedelta(days=5), [(USER, f"Let's meet next Friday at the {place}.")])
        b.session(target + dt.timedelta(days=3), [(USER, f"I paid {target.day} euros for the {target.year} "
                                                   f"{place} calendar, {target:%B} is my favourite page.")])
        said = f"I {event} on {target.day} {target:%B}, {target.year}."
        gold = b.session(target + dt.timedelta(days=20), [(USER, "Some news from last month."), (USER, said)])
        b.ask("relative-date", f"What did I do on {target.day} {target:%B}, {target.year}?", [(gold, 1)])
        day += 9
    return day


def question_gold(b: Builder, day: int) -> int:
    """The user's own questions as gold, each answered at length; the next day."""
    for thing, occasion in b.rng.sample(ASKS, 5):
        words = f"{thing.split()[-1]} {occasion.split()[-1]}"
        turns = [(USER, f"Could you suggest {thing} for {occasion}?"),
                 *((ASSISTANT, b.long_reply(words)) for _ in range(LONG_REPLIES // 2)),
                 (USER, f"Thanks, the {thing.split()[-1]} ideas help.")]
        b.ask("question-gold", f"What did I ask you to suggest for {occasion}?", [(b.session(b.day(day), turns), 0)])
        day += 1
    return day


def fact_questions(b: Builder, day: int) -> int:
    """Facts the user states inside a question, among statements and replies that share their words; the
    next day. (A penalty for every text that ends in "?" buries these.)"""
    for trip, question in zip(b.rng.sample(TRIPS, 6), b.rng.sample(TRIP_QUESTIONS, 6), strict=True):
        city, month = trip
        age = b.rng.randint(2, 9)
        turns = [(USER, f"I'm flying to {city} with my {age}-year-old daughter in {month}. Any tips for the flight?"),
                 (ASSISTANT, b.long_reply("flight daughter tips")),
                 *((USER, say.format(c=city)) for say in TRIP_ASIDES)]
        b.ask("fact-in-question", question.format(c=city, m=month), [(b.session(b.day(day), turns), 0)])
        day += 1
    return day


def other_speaker(b: Builder, day: int) -> int:
    """The assistant's answers as gold among the user's turns on the subject; the next day."""
    for subject, answer in FERRY:
        turns = [(USER, f"I keep forgetting the details of the {subject}."),
                 (USER, f"Is the {subject} worth it, or should I skip it?"), (ASSISTANT, answer),
                 *((USER, say.format(s=subject)) for say in USER_ASIDES)]
        b.ask("other-speaker", f"What did {USER} learn about the {subject}?", [(b.session(b.day(day), turns), 2)])
        day += 1
    return day


TRIPS = [("Osaka", "May"), ("Lisbon", "June"), ("Denver", "March"), ("Hanoi", "October"), ("Oslo", "July"),
         ("Cairo", "April"), ("Perth", "August"), ("Quebec", "December")]
TRIP_QUESTIONS = ["How old is my daughter, who is flying to {c} with me?",
                  "When am I flying to {c} with my daughter?",
                  "Who is flying with me to {c}?",
                  "Where am I flying with my daughter in {m}?",
                  "What trip to {c} did I plan with my daughter?",
                  "Which month is the flight to {c} with my daughter?",
                  "What did I say about flying to {c}?"]
TRIP_ASIDES = ["My daughter loves window seats on a flight.", "A friend flew to {c} last year with her daughter.",
               "The flight to {c} has a stopover, my daughter says.", "I booked the {c} hotel near the station.",
               "My daughter packed her own bag for the flight."]


def generate(seed: int) -> Conversation:
    """One conversation of every kind of case, deterministic for the seed; blocks in a shuffled order."""
    b = Builder(f"stress-{seed}", random.Random(seed))
    day = 0
    blocks = [short_facts, merge_piles, relative_dates, question_gold, other_speaker, fact_questions]
    for block in b.rng.sample(blocks, len(blocks)):
        day = block(b, day)
    return b.conversation()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0, help="the first conversation's seed (default 0)")
    parser.add_argument("--conversations", type=int, default=5, help="how many, seeds seed.. (default 5)")
    parser.add_argument("--smoke", action="store_true", help="one conversation")
    add_run_options(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Generate the set, run both systems, print the tables, write --json."""
    args = parse_args(argv)
    count = 1 if args.smoke else args.conversations
    run_and_report([generate(args.seed + i) for i in range(count)], args, CATEGORIES)
    return 0


if __name__ == "__main__":
    sys.exit(main())
