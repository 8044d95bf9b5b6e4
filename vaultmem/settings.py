"""A vault's settings as typed, frozen objects: `vault.settings.ranking.limit`, never a lookup in
nested dicts that any reader could change for every other.

One NamedTuple per section of config.CONFIG_TEMPLATE, a field per key (tests/test_settings.py holds
them to the template); lists become tuples and mappings FrozenMaps, so no reader can change what
another sees; `section._replace(key=value)` makes a variant. NamedTuples, not frozen dataclasses:
making fifteen frozen dataclasses cost ~14 ms at import, on every CLI command. Built from the mapping
config.load_config merged and checked; a long-lived process changes its own settings with
`Settings.with_values`, checked as config.yaml is (Store.configure).
"""

# No `from __future__ import annotations`: NamedTuple compiles each string annotation (~7 ms here).
import copy
import functools
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from .config import defaults, load_config, merged_over
from .errors import ConfigError


class FrozenMap(Mapping[str, Any]):
    """A read-only table (channel weights, half-lives by lifecycle, a user rule): a Mapping that
    pickles into worker processes and can be hashed."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any] | None = None):
        self._data = dict(data or {})

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        return hash(frozenset(self._data.items()))

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"

    def __reduce__(self) -> tuple:
        return FrozenMap, (self._data,)


# a field whose config.yaml key is no Python name
_KEYS = {"lambda_mode": "lambda"}


class Folders(NamedTuple):
    memories: str
    entities: str
    episodes: str
    inbox: str
    archive: str
    templates: str

    def roles(self) -> dict[str, str]:
        """{role: folder name}, in the template's order."""
        return self._asdict()


class NoteDefaults(NamedTuple):
    type: str
    score: float
    lifecycle: str
    source: str
    trust: str
    namespace: str


class WriteSettings(NamedTuple):
    near_duplicate: float
    merge_types: tuple[str, ...]
    statement_chars: int
    merge_cap: int
    supersede_types: tuple[str, ...]
    merge_bonus: float
    reinforce_hours: float
    link_entities: bool
    episodes: bool
    stage_trust: tuple[str, ...]
    max_text_chars: int


class PolicySettings(NamedTuple):
    action: str
    detectors: tuple[str, ...]
    patterns: tuple[Any, ...]  # FrozenMaps {name, regex, action}, checked by write.policy.Policy
    blocked_tags: tuple[str, ...]
    user_sources: tuple[str, ...]
    external_sources: tuple[str, ...]


class RankingSettings(NamedTuple):
    fusion: str
    weights: FrozenMap  # channel -> weight
    recency_weight: float
    rrf_k: float
    bm25_k1: float
    bm25_b: float | str  # or "auto"
    fuzzy_rescore: int
    fuzzy_weight: float
    feedback_weight: float
    feedback_docs: int
    feedback_terms: int
    common_term_ratio: float
    feedback_scale: float
    feedback_max_weight: float
    lambda_mode: str  # config.yaml: `lambda` (no Python name): fixed | adaptive
    adaptive_half_life_hours: tuple[float, float]
    limit: int


class Cues(NamedTuple):
    remember: tuple[str, ...]
    later: tuple[str, ...]
    always: tuple[str, ...]


class ImportancePoints(NamedTuple):
    cue_remember: float
    cue_later: float
    content_values: float
    content_names: float
    content_plain: float
    first: float
    last: float


class ExtractionSettings(NamedTuple):
    rules: tuple[Any, ...]  # FrozenMaps {type, regex, context}, checked by write.extract.Extractor
    cues: Cues
    importance: ImportancePoints


class ReinforcementSettings(NamedTuple):
    record_access: bool
    reward: float
    max_reward: float


class GcSettings(NamedTuple):
    threshold: float
    unused_days: float


class ConsolidateSettings(NamedTuple):
    min_repeats: int
    types: tuple[str, ...]
    coverage: float
    min_shared: int


class WorkingSetSettings(NamedTuple):
    size: int
    weight: float


class SemanticSettings(NamedTuple):
    enabled: bool
    weight: float
    candidates: int
    embed_inline: int


class SyncSettings(NamedTuple):
    max_deletions: int


class EncryptionSettings(NamedTuple):
    namespaces: tuple[str, ...]


class HookSettings(NamedTuple):
    run: tuple[FrozenMap, ...]  # each {name, command | entry_point, actions?}, checked by config's rule
    timeout: float
    queue: int


class IndexSettings(NamedTuple):
    auto_refresh: bool
    sweep_budget: float
    sweep_every: float
    compact_min: int
    compact_ratio: float
    lock_timeout: float


class HttpSettings(NamedTuple):
    max_body_bytes: int
    max_batch: int
    rate_per_minute: int
    cors_origins: tuple[str, ...]


class Settings(NamedTuple):
    """A vault's settings: config.yaml over the defaults, checked, frozen (see CONFIG_TEMPLATE)."""

    memory_root: str
    folders: Folders
    defaults: NoteDefaults
    write: WriteSettings
    half_life_hours: FrozenMap  # lifecycle -> hours (None: never decays)
    policy: PolicySettings
    ranking: RankingSettings
    extraction: ExtractionSettings
    reinforcement: ReinforcementSettings
    gc: GcSettings
    consolidate: ConsolidateSettings
    working_set: WorkingSetSettings
    semantic: SemanticSettings
    sync: SyncSettings
    encryption: EncryptionSettings
    hooks: HookSettings
    index: IndexSettings
    http: HttpSettings

    @classmethod
    def from_mapping(cls, merged: Mapping[str, Any]) -> "Settings":
        """The settings of a merged, checked mapping (what load_config returns)."""
        return _built(cls, merged, "")

    def to_mapping(self) -> dict[str, Any]:
        """The mapping these settings came from (config.yaml's keys, lists, plain dicts)."""
        return _plain(self)

    def with_values(self, section: str, **values: Any) -> "Settings":
        """These settings with some of one section's values changed (field names, e.g.
        `with_values("ranking", lambda_mode="adaptive", weights={"question": 0})`), checked as
        config.yaml is. Raises ConfigError for an unknown section or setting or a value not allowed."""
        kind = next((nested for name, _, nested in _fields(Settings) if name == section), None)
        if kind is None:
            raise ConfigError(f"no settings section {section!r}")
        keys = {name: key for name, key, _ in _fields(kind)}
        unknown = next((name for name in values if name not in keys), None)
        if unknown is not None:
            raise ConfigError(f"unknown setting {unknown!r} in {section}")
        mapping = self.to_mapping()
        _deep_update(mapping[section], {keys[name]: value for name, value in values.items()})
        return Settings.from_mapping(merged_over(mapping, "settings"))


@functools.cache
def _fields(cls: type) -> tuple[tuple[str, str, type | None], ...]:
    """(field, its config.yaml key, the section class it holds or None) of each field of a settings class."""
    return tuple((name, _KEYS.get(name, name), cls.__annotations__[name] if cls.__annotations__[name] in _SECTIONS else None)
                 for name in cls._fields)


def _built(cls: type, mapping: Mapping[str, Any], where: str) -> Any:
    """An instance of a settings class from its section's mapping, which must hold exactly its keys."""
    fields = _fields(cls)
    keys = {key for _, key, _ in fields}
    if keys != set(mapping):
        odd = sorted(keys ^ set(mapping))
        raise ConfigError(f"settings{'.' + where if where else ''}: keys {odd} do not match the template")
    return cls(*(_built(nested, mapping[key], f"{where}.{key}".strip(".")) if nested else _frozen(mapping[key])
                 for _, key, nested in fields))


def _frozen(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return FrozenMap({k: _frozen(v) for k, v in value.items()})
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a section
        return {key: _plain(getattr(value, name)) for name, key, _ in _fields(type(value))}
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _deep_update(base: dict[str, Any], over: Mapping[str, Any]) -> None:
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _deep_update(base[key], value)
        else:
            base[key] = copy.deepcopy(value)


# the section classes a field may hold (its annotation is the class)
_SECTIONS = frozenset((Folders, NoteDefaults, WriteSettings, PolicySettings, RankingSettings, Cues, ImportancePoints,
                       ExtractionSettings, ReinforcementSettings, GcSettings, ConsolidateSettings, WorkingSetSettings,
                       SemanticSettings, SyncSettings, EncryptionSettings, HookSettings, IndexSettings, HttpSettings))


@functools.cache
def default_settings() -> Settings:
    """The built-in settings, as a vault without a config.yaml has them."""
    return Settings.from_mapping(defaults())


def load_settings(path: Path, cache: Path | None = None) -> Settings:
    """config.yaml (at path) over the defaults as Settings; see load_config for the cache and errors."""
    if cache is None and not path.exists():
        return default_settings()
    return Settings.from_mapping(load_config(path, cache))


__all__ = ["ConsolidateSettings", "Cues", "EncryptionSettings", "ExtractionSettings", "Folders", "FrozenMap", "GcSettings", "HookSettings", "HttpSettings",
           "ImportancePoints", "IndexSettings", "NoteDefaults", "PolicySettings", "RankingSettings",
           "ReinforcementSettings", "SemanticSettings", "Settings", "SyncSettings", "WorkingSetSettings", "WriteSettings",
           "default_settings", "load_settings"]
