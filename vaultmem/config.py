"""The vault's tunables: `.vaultmem/config.yaml` over built-in defaults, every key documented."""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import math
from pathlib import Path
from typing import Any

from .errors import ConfigError

CONFIG_TEMPLATE = """\
# vaultmem configuration: every tunable with its default. Delete a line to fall back to the default.
# This file is meant to be committed with the vault; per-machine state lives outside it.

# Sub-folder of the vault that holds the memory folders ("." = the vault root).
memory_root: .
folders:
  memories: memories      # one memory per note
  entities: entities      # people, projects, customers, ids; `aliases:` for other names
  episodes: episodes      # daily notes YYYY-MM-DD.md: the day's timeline
  inbox: inbox            # low-trust candidates awaiting confirmation
  archive: archive        # forgotten memories (moved, never deleted)
  templates: templates    # Obsidian templates; never indexed

# Frontmatter written by `remember` when the caller gives no value.
defaults:
  type: fact
  score: 5.0
  lifecycle: note
  source: user
  trust: user
  namespace: shared

# The write pipeline (`remember`): duplicates, conflicts, links, staging.
write:
  near_duplicate: 0.9     # likeness (0..1, rapidfuzz ratio) at which a new memory merges into an old one; 1 = off
  merge_types: [contract_id, invoice_id, email, phone]  # same (type, value): one note, statements appended (a URL or ticket id is named by many memories, each its own)
  statement_chars: 280    # ...when the new text is a statement this short (a longer message naming the value is its own memory)
  merge_cap: 600          # ...while the note's text stays within this many characters (then a new note starts)
  supersede_types: [contract_id, phone, email]  # a new value of these for the same entity supersedes the old note
  merge_bonus: 1.0        # a merge sets score = max(old, new) + this (at most 10): restating a fact strengthens it
  reinforce_hours: 24     # ...once in this time: a restatement sooner than this after the last adds only its tags
  link_entities: true     # mentions of known entities (titles, aliases) become [[wikilinks]]
  episodes: true          # each write adds a line to episodes/YYYY-MM-DD.md
  stage_trust: [external] # writes of this trust land in inbox/ as candidates (`vaultmem confirm ID` promotes)
  max_text_chars: 100000  # the longest text a memory may have, in characters: a longer one is refused, nothing written;
                          # of a longer note (written by hand, synced in) the index reads this many; doctor names it

# Half-life of a memory's strength in hours, by `lifecycle` (null = never decays).
half_life_hours:
  task: 24
  note: 30
  event: 168
  preference: 720
  fact: 2400
  permanent: null
  default: 30             # any other lifecycle

# Step 1 of every write: secrets are replaced before the note, the index or a log sees them.
policy:
  action: redact          # what replaces a secret: redact (***) | hash (sha256:<hex>: equal secrets stay matchable)
  detectors: [password, api_key, private_key, bearer_token, id_card, bank_card, connection_string]   # built-in detectors that are on
  patterns: []            # your own rules: - {name: employee_id, regex: 'EMP[0-9]{6}', action: redact}; a (?P<secret>...) group limits what is replaced
  blocked_tags: [password, token, secret]   # tags refused outright (case, full width and a leading # do not matter)
  user_sources: [user, human, me]           # sources whose memories get trust: user
  external_sources: [web, external, "import:*", "http:*", "https:*"]   # trust: external (fnmatch patterns); any other source: agent

ranking:
  fusion: weighted        # weighted (sum of channel x weight) | rrf (reciprocal-rank fusion)
  weights:
    lexical: 1.0          # BM25 over words and CJK 2-/3-grams, normalised to 0..1 per query
    tags: 0.5             # share of the query's tags (and tag-named words) the memory carries
    graph: 0.3            # the memory links to an entity the query names (title or alias)
    contiguity: 0.2       # relevance lent by the memories written next to it in the same episode
    episode: 0.3          # BM25 of the query over the memory's whole episode (session) as one text
    question: -0.2        # the memory ends with a question: it asks more than it tells
    source: 0.3           # the query names the memory's source ("what did Caroline say …")
    strength: 0.15        # effective score / 10: a prior that orders, never a wall
  recency_weight: 0.6     # strength weight when the query asks for what is recent ("latest", "最近", "上次")
  rrf_k: 60
  bm25_k1: 1.2
  bm25_b: auto            # length normalisation 0..1, or auto: 0.3 while memories are alike in length, up to 0.9 as lengths spread
  fuzzy_rescore: 20       # rescore this many top hits with rapidfuzz (typo tolerance); 0 = off
  fuzzy_weight: 0.2
  feedback_weight: 0.25   # lexical adds this x BM25 of the terms that mark the first pass's best memories; 0 = off
  feedback_docs: 3        # pseudo-relevance feedback: how many best memories vote for terms
  feedback_terms: 10      # and how many of their terms (not the query's) are searched
  common_term_ratio: 1.0  # skip query terms found in more than this share of notes when rarer ones exist (1 = never)
  feedback_scale: 3.0     # hindsight feedback: strength x feedback_max_weight ** tanh(net / this), net = useful + confirm - wrong - outdated
  feedback_max_weight: 2.0  # ...so repeated feedback saturates: at most x2, at least x0.5 (1 = feedback off)
  lambda: fixed           # fixed | adaptive: the note/default half-life re-estimated from pin events (vaultmem stats --lambda)
  adaptive_half_life_hours: [6, 8766]  # the adaptive estimate's half-life stays within these hours (6 h .. 1 year)
  limit: 10

extraction:               # typed values, cue phrases and names found by rule when remembering (SPEC §6)
  rules: []               # your value rules, tried before the built-ins, e.g.
                          #   - {type: ticket_id, regex: 'TKT-[0-9]+', context: [工单, ticket]}
                          # context (optional): the rule applies only near one of these words
  cues:                   # extra cue phrases per kind, added to the built-in ones (any case)
    remember: []          # built-in: 记住, 别忘了, 务必, remember this, don't forget …
    later: []             # built-in: 备忘, 回头, note for later …
    always: []            # built-in: 以后都, 从现在起, 每次, from now on, always … (scores as remember)
  importance:             # points of a new memory's score (0..10, clamped): the sum of one of each group
    cue_remember: 5       # an explicit "remember" or "always" cue
    cue_later: 3          # a "note for later" cue
    content_values: 4     # any extracted value: id, number, date, URL, amount …
    content_names: 2      # else: a person or customer named
    content_plain: 1      # else
    first: 2              # first message of the conversation
    last: 1               # last message of the conversation

reinforcement:
  record_access: true     # each recall appends access events for its hits (never edits notes)
  reward: 0.5             # strength added per recorded use
  max_reward: 5.0         # cap of that bonus

gc:                       # `vaultmem gc`: what it archives (never a pinned note; user-trust and permanent ones only when asked)
  threshold: 0.5          # a memory whose effective score (0..10, the strength ranking uses: decayed, with uses and feedback) is below this
  unused_days: 90         # ...and that was neither written nor used (recalled) for this many days

consolidate:              # `vaultmem consolidate`: repeated events or choices become one note (lifecycle/consolidate.py)
  min_repeats: 3          # notes a group needs before it is consolidated (--min)
  types: [event, episode, meeting, choice, decision, preference, fact]   # memory types that count as events or choices (fact: what a plain remember writes)
  coverage: 0.5           # the terms a group's notes all hold (digits aside) must be at least this share of each one's terms
  min_shared: 2           # ...and at least this many terms

working_set:              # long-lived processes (MCP server, Hermes provider): a hot LRU of the memories they wrote or used
  size: 2048              # memories kept; the least recently written or used leave first (recall/workingset.py)
  weight: 0.1             # recall's `working` channel: a candidate in the set gains this (a prior, like strength)

semantic:                 # recall by meaning (docs/semantic.md; the `semantic` extra): off unless asked for
  enabled: false          # true: recall also searches the notes' vectors (recall --semantic / --no-semantic, $VAULTMEM_SEMANTIC)
  weight: 0.5             # the semantic channel's weight: cosine to the query, 1 for the nearest note, 0 from the candidates-th on
  candidates: 100         # the notes nearest the query (that the query may see) join the lexical candidates
  embed_inline: 256       # at most this many notes not yet embedded are embedded by a recall first; the rest by `vaultmem embed`

sync:                     # `vaultmem sync` and the pre-commit hook (`vaultmem hook install`)
  max_deletions: 50       # the hook refuses a commit that deletes more notes than this (a mass deletion)

encryption:               # encrypted notes (README "Encrypted notes"; the `encrypt` extra): text and properties sealed by a passphrase
  namespaces: []          # namespaces whose new memories are written encrypted (e.g. [private]); `vaultmem encrypt --namespace N` adds one

hooks:                    # programs run after a note is created, merged, superseded, forgotten, restored or confirmed (README "Hooks")
  run: []                 # each: - {name: notify, command: 'python3 ~/bin/notify.py', actions: [create, merge]} or - {name: log, entry_point: 'mypkg.hooks:on_write'}
                          # (actions: what it is told of, every action without it); none runs on a device until `vaultmem hooks enable NAME` there
  timeout: 10             # seconds a run may take; then it is killed with its process group and the failure recorded
  queue: 100              # hook runs waiting (each up to 1000 events as JSON lines); past that a run is dropped and recorded

index:
  auto_refresh: true      # rescan changed files before each CLI recall (remember: --refresh)
  sweep_budget: 0.05      # seconds: a one-off read stats every note while that costs no more (README "Freshness")
  sweep_every: 60         # seconds: past the budget, at most one full sweep this often; folders are still looked at
  compact_min: 256        # merge the delta into a new generation past max(compact_min, compact_ratio x notes)
  compact_ratio: 0.02
  lock_timeout: 60        # seconds a writer waits for another one before giving up ($VAULTMEM_LOCK_TIMEOUT)

http:                     # `vaultmem serve` (README "Use it over HTTP"); where it listens is the command's --host and --port
  max_body_bytes: 1048576 # a request body may hold this many bytes (413 beyond)
  max_batch: 1000         # memories one POST /v1/remember/batch may hold (413 beyond)
  rate_per_minute: 600    # requests a token may make a minute, in bursts of up to a tenth of that (429 beyond); 0 = no limit
  cors_origins: []        # web pages' origins that may call it from a browser (e.g. ["http://localhost:3000"]); none: CORS off
"""

HOOK_ACTIONS = ("create", "merge", "supersede", "forget", "restore", "confirm")
HOOK_ENV = "VAULTMEM_HOOK"  # set to the hook's name in its process: vaultmem run there fires no hooks (no loops)
"""What a hook is told about a note (its `actions` pick some)."""
_HOOK_KEYS = {"name", "command", "entry_point", "actions"}  # not `on`: YAML 1.1 reads it as true


def _hook_ok(hook: Any) -> bool:
    """A hook of hooks.run: a name, a command or a `module:function` entry point (one of them), and an `actions` list."""
    if not isinstance(hook, dict) or not set(hook) <= _HOOK_KEYS or not _text(hook.get("name")):
        return False
    runs = [key for key in ("command", "entry_point") if key in hook]
    if len(runs) != 1 or not _text(hook[runs[0]]):
        return False
    if runs == ["entry_point"] and not all(part.strip() for part in hook["entry_point"].partition(":")):
        return False
    on = hook.get("actions", list(HOOK_ACTIONS))
    return isinstance(on, list) and bool(on) and all(action in HOOK_ACTIONS for action in on)


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _hooks_ok(hooks: list) -> bool:
    names = [hook.get("name") for hook in hooks if isinstance(hook, dict)]
    return all(_hook_ok(hook) for hook in hooks) and len(set(names)) == len(names)


# Mappings whose keys a user may extend (a new lifecycle gets its own half-life).
_OPEN_MAPS = {"half_life_hours"}
MAX_CONFIG_BYTES = 256 * 1024  # a shared, committed file: anyone who can push may write it
_MAX_CACHE_BYTES = 4 * MAX_CONFIG_BYTES  # the merged settings as JSON; larger is none of ours
# in the cache's key: another version's defaults make another cache (their length could be equal)
_TEMPLATE_DIGEST = hashlib.blake2b(CONFIG_TEMPLATE.encode("utf-8"), digest_size=8).hexdigest()


# (what a value must be, the test it must pass) for what the type of a default cannot say
_SHARE = ("a number from 0 to 1", lambda v: 0 <= v <= 1)
_NOT_NEGATIVE = ("a number of 0 or more", lambda v: v >= 0)
_COUNT = ("an integer of 0 or more", lambda v: isinstance(v, int) and v >= 0)
# settings that take either of two kinds (a word or a number): examples of each
_EITHER: dict[str, tuple[Any, ...]] = {"ranking.bm25_b": ("auto", 0.5)}
# every other setting only needs its default's type
_RULES: dict[str, tuple[str, Any]] = {
    "ranking.limit": ("a positive integer", lambda v: isinstance(v, int) and v >= 1),
    **dict.fromkeys(["http.max_body_bytes", "http.max_batch"], ("a positive integer", lambda v: isinstance(v, int) and v >= 1)),
    **dict.fromkeys(["working_set.size", "semantic.candidates"], ("a positive integer",
                                                                  lambda v: isinstance(v, int) and v >= 1)),
    "write.max_text_chars": ("a positive integer", lambda v: isinstance(v, int) and v >= 1),
    "consolidate.min_repeats": ("an integer of 2 or more", lambda v: isinstance(v, int) and v >= 2),
    "consolidate.min_shared": ("a positive integer", lambda v: isinstance(v, int) and v >= 1),
    "consolidate.coverage": ("a number above 0, at most 1", lambda v: 0 < v <= 1),
    "ranking.fusion": ("weighted or rrf", lambda v: v in ("weighted", "rrf")),
    "ranking.lambda": ("fixed or adaptive", lambda v: v in ("fixed", "adaptive")),
    "ranking.adaptive_half_life_hours": ("two positive numbers of hours, least first",
                                         lambda v: len(v) == 2 and 0 < v[0] <= v[1]),
    **dict.fromkeys(["ranking.fuzzy_rescore", "ranking.feedback_docs", "ranking.feedback_terms",
                     "write.statement_chars", "write.merge_cap",
                     "index.compact_min", "sync.max_deletions", "http.rate_per_minute", "semantic.embed_inline"], _COUNT),
    **dict.fromkeys(["write.near_duplicate", "ranking.common_term_ratio"], _SHARE),
    "ranking.bm25_b": ("a number from 0 to 1, or auto", lambda v: v == "auto" if isinstance(v, str) else 0 <= v <= 1),
    **dict.fromkeys(["write.merge_bonus", "write.reinforce_hours", "ranking.rrf_k", "ranking.bm25_k1", "reinforcement.reward",
                     "reinforcement.max_reward", "index.compact_ratio", "ranking.feedback_scale",
                     "ranking.feedback_max_weight", "gc.threshold", "gc.unused_days",
                     "working_set.weight", "semantic.weight", "index.sweep_budget", "index.sweep_every"], _NOT_NEGATIVE),
    "half_life_hours.*": ("a number of 0 or more, or null", lambda v: v >= 0),
    "defaults.score": ("a number from 0 to 10", lambda v: 0 <= v <= 10),
    "hooks.run": ("a list of hooks with unique names, each {name, command: TEXT or entry_point: 'module:function', "
                  f"actions: [{', '.join(HOOK_ACTIONS)}]}}", _hooks_ok),
    "hooks.timeout": ("a number of seconds above 0", lambda v: v > 0),
    "hooks.queue": ("a positive integer", lambda v: isinstance(v, int) and v >= 1),
}


def _load_yaml(text: str) -> Any:
    import yaml

    from .notes.plainyaml import bounded, shallow

    fast = getattr(yaml, "CSafeLoader", None) if shallow(text) else None  # the C loader is ~30x faster
    return yaml.load(text, Loader=bounded(fast or yaml.SafeLoader))


@functools.cache
def defaults() -> dict[str, Any]:
    """The built-in settings (parsed from CONFIG_TEMPLATE, so the file and the code cannot disagree)."""
    return _load_yaml(CONFIG_TEMPLATE)


def merged_over(over: dict[str, Any], where: str) -> dict[str, Any]:
    """`over` (settings as config.yaml holds them) on top of the defaults, each checked;
    ConfigError naming `where` and the setting."""
    return _merge(defaults(), over, where)


def _merge(base: dict[str, Any], over: dict[str, Any], where: str, section: str = "") -> dict[str, Any]:
    """`over` on top of `base`, each setting checked against its default (ConfigError naming it).
    Only what `over` lacks is copied from `base` (the cached settings lack nothing)."""
    unknown = next((key for key in over if key not in base), None)
    if unknown is not None:
        raise ConfigError(f"{where}: unknown setting {unknown!r}" + (f" in {section}" if section else ""))
    out = {}
    for key, default in base.items():
        name = f"{section}.{key}" if section else key
        value = over.get(key, default)
        if key not in over:
            out[key] = copy.deepcopy(default)
        elif not isinstance(default, dict):
            out[key] = _checked(where, name, default, value, like=_EITHER.get(name, ()))
        elif not isinstance(value, dict):
            raise ConfigError(f"{where}: {name} must be a mapping of settings, not {_shown(value)}")
        elif key in _OPEN_MAPS:  # a new key takes a value like the built-in ones
            out[key] = {**default, **{k: _checked(where, f"{name}.{k}", None, v, f"{name}.*", default.values())
                                      for k, v in value.items()}}
        else:
            out[key] = _merge(default, value, where, name)
    return out


def _checked(where: str, name: str, default: Any, value: Any, rule: str = "", like: Any = ()) -> Any:
    """`value`, if it is of the kind of `default` (or of one of `like`) and within its rule."""
    expected, test = _RULES.get(rule or name, (None, None))
    kind = _kind(value)
    shown = value
    fits = kind in ({_kind(d) for d in like} if like else (_kind(default),))
    if fits and kind == "list" and default:  # items like the default's (an empty one says nothing)
        item_kind = _kind(default[0])
        shown = next((item for item in value if _kind(item) != item_kind), value)
        fits = shown is value
    if fits and kind == "number":
        fits = _finite(value)
    if fits and test is not None and value is not None:
        fits = test(value)
    if not fits:
        held = "a list holding " if shown is not value else ""
        raise ConfigError(f"{where}: {name} must be {expected or _described(default, like)}, not {held}{_shown(shown)}")
    return value


_KINDS = {bool: "bool", int: "number", float: "number", str: "text", list: "list", dict: "mapping",
          type(None): "null"}


def _kind(value: Any) -> str:
    """The kind of a setting's value: text, number, bool, list, mapping, null, or a date..."""
    return _KINDS.get(type(value)) or type(value).__name__


_DESCRIBED = {"bool": "true or false", "number": "a number", "text": "text", "list": "a list",
              "mapping": "a mapping of settings", "null": "null"}


def _described(default: Any, like: Any = ()) -> str:
    """What a setting with this default (or these) must be, in words."""
    if isinstance(default, list) and default:
        return f"a list of {_DESCRIBED[_kind(default[0])]}"
    kinds = sorted({_kind(d) for d in like}) if like else [_kind(default)]
    return " or ".join(_DESCRIBED.get(k, k) for k in kinds)


def _finite(number: int | float) -> bool:
    """Whether a number is one arithmetic can use (an int of 400 digits is none: float() overflows)."""
    try:
        return math.isfinite(number)
    except OverflowError:
        return False


def _shown(value: Any) -> str:
    """A value as a message names it, short."""
    if isinstance(value, (list, dict)):
        return "a list" if isinstance(value, list) else "a mapping"
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def load_config(path: Path, cache: Path | None = None) -> dict[str, Any]:
    """Read config.yaml over the defaults; a missing file means all defaults.

    With cache (a JSON file in the index folder), the merged settings are reused while
    config.yaml keeps its (mtime, size): importing YAML costs more than a whole recall.
    Raises ConfigError naming the file (and the setting or line) for a file over
    MAX_CONFIG_BYTES, invalid YAML, an unknown setting or a value its default does not allow.
    """
    try:
        st = path.stat()
    except FileNotFoundError:
        return copy.deepcopy(defaults())
    key = [st.st_mtime_ns, st.st_size, _TEMPLATE_DIGEST]
    cached = _read_cache(cache, key)
    if cached is not None:
        return cached
    config = _merge(defaults(), _read_settings(path), str(path))
    _write_cache(cache, key, config)
    return config


def _read_settings(path: Path) -> dict[str, Any]:
    """The mapping config.yaml holds, read with a bound on its size and on its YAML."""
    import yaml

    from .notes.plainyaml import error_at

    with open(path, "rb") as handle:
        data = handle.read(MAX_CONFIG_BYTES + 1)  # a bound on what is read, not on what stat says
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_CONFIG_BYTES // 1024} KiB; a config.yaml is a few KiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    try:
        loaded = _load_yaml(text) or {}
    except yaml.YAMLError as exc:
        problem, line = error_at(exc, text)
        raise ConfigError(f"{path}{'' if line is None else f', line {line + 1}'}: not valid YAML: {problem}") from None
    except RecursionError:
        raise ConfigError(f"{path}: not valid YAML: values nested too deep") from None
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path}: must be a mapping of settings")
    return loaded


def _read_cache(cache: Path | None, key: list) -> dict[str, Any] | None:
    """The cached settings, if the cache was written for this config.yaml and is whole: never one
    too large to be ours (it would be read into memory first), nor one whose digest is wrong.

    Checking the settings themselves would need the defaults, so YAML (~35 ms) on every command.
    """
    if cache is None:
        return None
    try:
        if cache.stat().st_size > _MAX_CACHE_BYTES:
            return None
        stored = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not (isinstance(stored, dict) and stored.get("key") == key and isinstance(stored.get("config"), dict)):
        return None
    return stored["config"] if stored.get("digest") == _digest(key, stored["config"]) else None


def _write_cache(cache: Path | None, key: list, config: dict[str, Any]) -> None:
    if cache is None:
        return
    from .store.files import atomic_write

    entry = {"key": key, "digest": _digest(key, config), "config": config}
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(cache, json.dumps(entry).encode("utf-8"), durable=False)
    except OSError:
        pass  # a read-only vault still works, only slower


def _digest(key: list, config: dict[str, Any]) -> str:
    """What a whole cache entry for these settings holds; a damaged or foreign one differs."""
    return hashlib.blake2b(json.dumps([key, config]).encode("utf-8"), digest_size=16).hexdigest()



__all__ = ["CONFIG_TEMPLATE", "HOOK_ACTIONS", "HOOK_ENV", "MAX_CONFIG_BYTES", "defaults", "load_config", "merged_over"]
