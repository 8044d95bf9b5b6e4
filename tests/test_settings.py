"""Typed, frozen settings (vaultmem.settings): the template's keys as fields, read-only, changed per process
only through a checked Vault.configure."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import pytest

from vaultmem import Vault
from vaultmem.config import defaults
from vaultmem.errors import ConfigError, PolicyViolation
from vaultmem.settings import FrozenMap, Settings, default_settings, load_settings

PACKAGE = Path(__file__).resolve().parents[1] / "vaultmem"


def test_the_settings_classes_hold_exactly_the_templates_keys():
    assert default_settings().to_mapping() == defaults()
    with pytest.raises(ConfigError, match="do not match the template"):
        Settings.from_mapping({**defaults(), "ranking": {**defaults()["ranking"], "speed": 1}})


def test_settings_cannot_be_changed_in_place():
    settings = default_settings()
    with pytest.raises(AttributeError):
        settings.ranking.limit = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        settings.ranking.weights["lexical"] = 9  # type: ignore[index]
    assert isinstance(settings.write.merge_types, tuple) and isinstance(settings.half_life_hours, FrozenMap)


def test_settings_cross_into_a_worker_process_intact():
    settings = default_settings().with_values("policy", patterns=[{"name": "emp", "regex": "EMP[0-9]+"}])
    again = pickle.loads(pickle.dumps(settings))
    assert again == settings and again.policy.patterns[0]["regex"] == "EMP[0-9]+"
    assert hash(again.ranking) == hash(settings.ranking)


def test_config_yaml_reads_into_typed_fields(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("ranking:\n  lambda: adaptive\n  weights:\n    question: 0\nhalf_life_hours:\n  sprint: 336\n",
                    encoding="utf-8")
    settings = load_settings(path)
    assert settings.ranking.lambda_mode == "adaptive"  # `lambda` is no Python name
    assert settings.ranking.weights["question"] == 0 and settings.ranking.weights["lexical"] == 1.0
    assert settings.half_life_hours["sprint"] == 336 and settings.half_life_hours["task"] == 24


def test_configure_changes_this_process_only_and_rebuilds_what_came_from_the_settings(vault):
    config_yaml = (vault.state / "config.yaml").read_bytes()
    vault.remember("Rotated the staging PIN on Monday", tags=["pin"])  # builds the policy once
    vault.configure("policy", blocked_tags=["password", "pin"])
    with pytest.raises(PolicyViolation, match="'pin'"):
        vault.remember("The PIN is in the safe", tags=["pin"])
    assert vault.settings.policy.blocked_tags == ("password", "pin")
    assert (vault.state / "config.yaml").read_bytes() == config_yaml
    assert Vault(vault.root).settings.policy.blocked_tags == ("password", "token", "secret")


def test_configure_checks_values_as_config_yaml_does(vault):
    before = vault.settings
    with pytest.raises(ConfigError, match="ranking.limit must be a positive integer, not 0"):
        vault.configure("ranking", limit=0)
    with pytest.raises(ConfigError, match="unknown setting 'speed' in ranking"):
        vault.configure("ranking", speed=2)
    with pytest.raises(ConfigError, match="no settings section 'rankings'"):
        vault.configure("rankings", limit=3)
    with pytest.raises(ConfigError, match="config.yaml"):
        vault.configure("folders", memories="elsewhere")
    assert vault.settings is before
    assert vault.configure("ranking", weights={"question": 0}).ranking.weights["tags"] == 0.5  # the rest kept


def test_the_package_reads_settings_through_the_typed_objects():
    """No `config["section"]["key"]` lookups left: a typo there was a KeyError at run time, here it is an
    AttributeError a type checker sees, and no reader can change another's settings."""
    lookups = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "config.py" and path.parent == PACKAGE:
            continue  # the file's own merging and checks
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\bconfig\[[\"']|\.config\[", line):
                lookups.append(f"{path.relative_to(PACKAGE)}:{number}")
    assert lookups == []
