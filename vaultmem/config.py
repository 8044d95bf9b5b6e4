"""The vault's tunables: `.vaultmem/config.yaml` over built-in defaults, every key documented."""

from __future__ import annotations

import copy
import functools
import json
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
  merge_types: [contract_id, invoice_id, id, url, email, phone]  # same (type, value): one note, statements appended
  supersede_types: [contract_id, phone, email]  # a new value of these for the same entity supersedes the old note
  merge_bonus: 1.0        # a merge sets score = max(old, new) + this (at most 10): restating a fact strengthens it
  link_entities: true     # mentions of known entities (titles, aliases) become [[wikilinks]]
  episodes: true          # each write adds a line to episodes/YYYY-MM-DD.md
  stage_trust: [external] # writes of this trust land in inbox/ as candidates (`vaultmem confirm ID` promotes)

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
  bm25_b: 0.3             # little length normalisation: memories are short and similar in length
  fuzzy_rescore: 20       # rescore this many top hits with rapidfuzz (typo tolerance); 0 = off
  fuzzy_weight: 0.2
  feedback_weight: 0.25   # lexical adds this x BM25 of the terms that mark the first pass's best memories; 0 = off
  feedback_docs: 3        # pseudo-relevance feedback: how many best memories vote for terms
  feedback_terms: 10      # and how many of their terms (not the query's) are searched
  common_term_ratio: 1.0  # skip query terms found in more than this share of notes when rarer ones exist (1 = never)
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

index:
  auto_refresh: true      # rescan changed files before each CLI recall (remember: --refresh)
  compact_min: 256        # merge the delta into a new generation past max(compact_min, compact_ratio x notes)
  compact_ratio: 0.02
  lock_timeout: 60        # seconds a writer waits for another one before giving up ($VAULTMEM_LOCK_TIMEOUT)
"""

# Mappings whose keys a user may extend (a new lifecycle gets its own half-life).
_OPEN_MAPS = {"half_life_hours"}


def _load_yaml(text: str) -> Any:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C loader is ~30x faster
    return yaml.load(text, Loader=loader)


@functools.cache
def defaults() -> dict[str, Any]:
    """The built-in settings (parsed from CONFIG_TEMPLATE, so the file and the code cannot disagree)."""
    return _load_yaml(CONFIG_TEMPLATE)


def _merge(base: dict[str, Any], over: dict[str, Any], where: str) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if key not in base:
            raise ConfigError(f"{where}: unknown setting {key!r}")
        if not isinstance(base[key], dict):
            out[key] = value
        elif not isinstance(value, dict):
            raise ConfigError(f"{where}: {key!r} must be a mapping")
        elif key in _OPEN_MAPS:
            out[key] = {**base[key], **value}
        else:
            out[key] = _merge(base[key], value, f"{where}: {key}")
    return out


def load_config(path: Path, cache: Path | None = None) -> dict[str, Any]:
    """Read config.yaml over the defaults; a missing file means all defaults.

    With cache (a JSON file in the index folder), the merged settings are reused while
    config.yaml keeps its (mtime, size): importing YAML costs more than a whole recall.
    Raises ConfigError naming the file for invalid YAML or an unknown key.
    """
    try:
        st = path.stat()
    except FileNotFoundError:
        return copy.deepcopy(defaults())
    key = [st.st_mtime_ns, st.st_size, CONFIG_TEMPLATE.__len__()]
    cached = _read_cache(cache, key)
    if cached is not None:
        return cached
    import yaml

    try:
        loaded = _load_yaml(path.read_text(encoding="utf-8")) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})") from None
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path}: must be a mapping of settings")
    config = _merge(defaults(), loaded, str(path))
    _write_cache(cache, key, config)
    return config


def _read_cache(cache: Path | None, key: list) -> dict[str, Any] | None:
    if cache is None:
        return None
    try:
        stored = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return stored.get("config") if isinstance(stored, dict) and stored.get("key") == key else None


def _write_cache(cache: Path | None, key: list, config: dict[str, Any]) -> None:
    if cache is None:
        return
    from .files import atomic_write

    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(cache, json.dumps({"key": key, "config": config}).encode("utf-8"), durable=False)
    except OSError:
        pass  # a read-only vault still works, only slower
