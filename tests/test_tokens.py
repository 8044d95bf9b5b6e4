"""HTTP tokens (issue 29 item 2): made once, kept only as a hash, found in constant time, revoked at
once in every process, each naming its scope, namespaces and trust."""

from __future__ import annotations

import hashlib
import json

import pytest

from vaultmem import Caller, OwnerOnly, Vault, VaultmemError
from vaultmem.errors import InvalidValue, MissingArgument


def _logged(vault: Vault) -> str:
    return "".join(p.read_text(encoding="utf-8") for p in (vault.root / ".vaultmem").rglob("*") if p.is_file()
                   and p.suffix in (".jsonl", ".yaml", ".json"))


def test_a_token_is_shown_once_and_kept_only_as_its_hash(vault):
    secret, token = vault.add_token("phone", scope="read", namespaces=["agent-a"])
    assert secret.startswith("vm_") and len(secret) >= 43
    kept = _logged(vault)
    assert secret not in kept and hashlib.sha256(secret.encode()).hexdigest() in kept
    assert (token.name, token.scope, token.namespaces, token.trust) == ("phone", "read", ("agent-a",), "agent")
    assert vault.token_for(secret) == token
    assert vault.token_for(secret + "x") is None and vault.token_for("") is None
    assert [t.to_dict() for t in vault.tokens()] == [token.to_dict()]
    assert "sha256" not in json.dumps(token.to_dict()) and secret not in json.dumps(token.to_dict())


def test_tokens_are_random_and_two_of_one_name_cannot_live(vault):
    first, _ = vault.add_token("a", namespaces=["x"])
    second, _ = vault.add_token("b", namespaces=["x"])
    assert first != second
    with pytest.raises(VaultmemError, match="exists: revoke it first"):
        vault.add_token("a", namespaces=["x"])


def test_a_revoke_counts_in_another_process_from_its_next_lookup(vault):
    secret, _ = vault.add_token("ci", scope="read-write", namespaces=["ci"])
    server = Vault(vault.root)  # another process's view of the same vault
    assert server.token_for(secret).writes
    vault.revoke_token("ci")
    assert server.token_for(secret) is None and server.tokens() == []
    again, _ = vault.add_token("ci", namespaces=["ci"])  # the name is free again, for a new token
    assert server.token_for(again) is not None and server.token_for(secret) is None
    assert vault.revoke_token("nobody") is None  # nothing to revoke: idempotent, and nothing logged


def test_a_token_must_name_its_namespaces_or_say_it_holds_them_all(vault):
    with pytest.raises(MissingArgument) as missing:
        vault.add_token("vague")
    assert missing.value.names == ("namespaces", "all_namespaces")
    with pytest.raises(InvalidValue, match="not both"):
        vault.add_token("both", namespaces=["a"], all_namespaces=True)
    secret, owner = vault.add_token("owner", all_namespaces=True, trust="user", scope="read-write")
    assert owner.namespaces == ("*",)
    assert owner.caller() == Caller(namespace=None, trust="user", name="owner")
    assert vault.token_for(secret).caller().confined is False
    _, two = vault.add_token("two", namespaces=["a", "b", "a"])
    assert two.caller() == Caller(namespace=("a", "b"), trust="agent", name="two")


@pytest.mark.parametrize("fields", [{"name": ""}, {"name": "has space"}, {"name": "x" * 65}, {"scope": "write"},
                                    {"trust": "root"}, {"namespaces": ["*"]}, {"namespaces": [" "]}])
def test_a_bad_field_makes_no_token(vault, fields):
    given = {"name": "ok", "namespaces": ["a"], **fields}
    with pytest.raises(VaultmemError):
        vault.add_token(given.pop("name"), **given)
    assert vault.tokens() == []


def test_a_broken_log_line_is_skipped_not_fatal(vault):
    secret, _ = vault.add_token("kept", namespaces=["a"])
    log = next((vault.root / ".vaultmem" / "devices").rglob("tokens-*.jsonl"))
    with log.open("a", encoding="utf-8") as handle:
        handle.write('{"event": "token-add", "name": "half"\nnot json\n{"event": "token-add", "name": "bad", "ts": 1}\n')
    assert [t.name for t in Vault(vault.root).tokens()] == ["kept"]
    assert Vault(vault.root).token_for(secret).name == "kept"


def test_tokens_are_the_owners_business(vault):
    alice = vault.as_caller(Caller(namespace="alice"))
    for call in (lambda: alice.add_token("mine", namespaces=["alice"]), alice.tokens, lambda: alice.token_for("x"),
                 lambda: alice.revoke_token("x")):
        with pytest.raises(OwnerOnly):
            call()
