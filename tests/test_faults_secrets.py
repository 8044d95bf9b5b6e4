"""No secret reaches disk through any field a write accepts (SPEC §6 step 1), and no error echoes one.

Free text (the body, `title`, `value`) is redacted; an identifier (tag, source, type, namespace,
episode, lifecycle, supersedes, entity name, alias) holding a secret refuses the whole write, naming
the field but never the value. The big test plants distinct secrets through every field of every
write surface and then reads every byte under the vault, index and logs included.
"""

from __future__ import annotations

import json
import random
import string
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vaultmem import Vault
from vaultmem.surfaces.cli import app
from vaultmem.settings import default_settings
from vaultmem.surfaces.console import fast_remember
from vaultmem.errors import PolicyViolation, VaultmemError
from vaultmem.write.policy import Policy

_rng = random.Random(20261129)
_ALNUM = string.ascii_letters + string.digits


def _token(n: int, alphabet: str = _ALNUM) -> str:
    """n random characters holding at least one digit (a token is not a word)."""
    return "".join(_rng.choice(alphabet) for _ in range(n - 1)) + _rng.choice(string.digits)


def _id_card() -> str:
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    head = f"{_rng.randint(110000, 659000)}19{_rng.randint(50, 99)}{_rng.randint(1, 12):02d}" \
           f"{_rng.randint(1, 28):02d}{_rng.randint(100, 999)}"
    return head + "10X98765432"[sum(int(c) * w for c, w in zip(head, weights)) % 11]


def _bank_card() -> str:
    digits = [6, 2, 2, 2] + [_rng.randint(0, 9) for _ in range(14)]
    total = sum((d * 2 - 9 if d * 2 > 9 else d * 2) if i % 2 == 0 else d for i, d in enumerate(reversed(digits)))
    return "".join(map(str, digits)) + str((10 - total % 10) % 10)


def _bare() -> str:
    """A secret recognisable on its own, with no words around it (fits a tag or a name)."""
    kind = _rng.randrange(9)
    return [lambda: "sk-" + _token(40), lambda: "sk_live_" + _token(28), lambda: "AKIA" + _token(16, "ABCDEFGHJKLMNPQRSTUVWXYZ234567"),
            lambda: "ghp_" + _token(36), lambda: "github_pat_" + _token(40), lambda: "xoxb-" + _token(30),
            lambda: "AIza" + _token(35), _id_card, _bank_card][kind]()


# (planted text, the raw secret in it) for free text; every phrasing in the brief appears once
_PHRASED = [
    ("my password is swordfish", "swordfish"),
    ("the password is correcthorsebatterystaple", "correcthorsebatterystaple"),
    ("wifi密码 88888888abc", "88888888abc"),
]


def _phrased() -> tuple[str, str]:
    """A secret stated in words, each phrasing the policy must know."""
    if _PHRASED:
        return _PHRASED.pop()
    pw = _token(12)
    form = _rng.choice(["password: {}", "pw: {}", "passcode is {}", "口令是{}", "密码：{}", "Authorization: Bearer {}",
                        "api_key={}", "postgres://admin:{}@db.internal/app", "token: {}", "我的密码是{}，别忘了"])
    return form.format(pw), pw


class Planted:
    """Every secret planted so far, to look for on disk afterwards."""

    def __init__(self):
        self.secrets: list[str] = []

    def bare(self) -> str:
        secret = _bare()
        self.secrets.append(secret)
        return secret

    def phrase(self) -> tuple[str, str]:
        text, secret = _phrased()
        self.secrets.append(secret)
        return text, secret

    def either(self) -> str:
        """A planted text for an identifier that may hold spaces: stated in words or bare."""
        return self.phrase()[0] if _rng.random() < 0.5 else self.bare()


def _on_disk(root: Path, secrets: list[str]) -> list[str]:
    """The secrets whose raw bytes (as given, or case-folded as an index may store them) are in any file."""
    blobs = [p.read_bytes() for p in root.rglob("*") if p.is_file()]
    return [s for s in secrets if any(s.encode() in blob or s.lower().encode() in blob for blob in blobs)]


ID_FIELDS = ("tags", "source", "type", "namespace", "episode", "lifecycle", "entity", "supersedes")
runner = CliRunner()


def _attempt(planted: Planted, errors: list[str], call, *args, **kwargs) -> None:
    """Run a write; a refusal is fine, but its message must not hold any planted secret."""
    try:
        call(*args, **kwargs)
    except VaultmemError as exc:
        errors.append(str(exc))


def _cli(errors: list[str], *args: str) -> None:
    result = runner.invoke(app, list(args))
    errors.append(result.output + (result.stderr if result.stderr_bytes is not None else ""))


def test_no_planted_secret_reaches_the_disk_through_any_field(vault, tmp_path):
    planted, errors = Planted(), []
    root = str(vault.root)
    vault.remember("The ops runbook lives in the wiki", tags=["ops"])
    # Vault.remember: secrets in the body, in each phrasing and format
    for _ in range(8):
        _attempt(planted, errors, vault.remember, f"note for ops: {planted.phrase()[0]} (rotate monthly)")
    for _ in range(4):
        _attempt(planted, errors, vault.remember, f"deploy key {planted.bare()} for the build box")
    # free-text fields are redacted, identifiers refuse the write
    _attempt(planted, errors, vault.remember, "the vpn box", title=f"vpn {planted.phrase()[0]}")
    _attempt(planted, errors, vault.remember, "the build box", value=planted.bare())
    for name in ID_FIELDS:
        value = [planted.bare()] if name in ("tags", "entity") else planted.either()
        _attempt(planted, errors, vault.remember, f"a memory about {name}", **{name: value})
    # remember_many: the same fields in a batch, one batch per identifier so each is tried
    _attempt(planted, errors, vault.remember_many, [
        {"text": f"batch body {planted.phrase()[0]}"},
        {"text": "batch titled", "title": f"title {planted.phrase()[0]}"},
        {"text": "batch valued", "value": planted.bare(), "type": "fact"},
    ])
    for name in ID_FIELDS:
        value = [planted.bare()] if name in ("tags", "entity") else planted.either()
        _attempt(planted, errors, vault.remember_many, [{"text": "a clean batch item"},
                                                         {"text": f"batch {name}", name: value}])
    # entity notes
    _attempt(planted, errors, vault.add_entity, planted.bare())
    _attempt(planted, errors, vault.add_entity, "Project Atlas", [planted.bare()])
    _attempt(planted, errors, vault.add_entity, "Project Borealis", ["Borealis"], [planted.bare()])
    # the CLI, each option on its own
    for option in ("--tag", "--source", "--type", "--namespace", "--episode", "--lifecycle", "--entity",
                   "--supersedes", "--value"):
        _cli(errors, "remember", f"cli memory {option}", option, planted.bare(), "--vault", root)
    _cli(errors, "remember", f"cli body {planted.phrase()[0]}", "--vault", root)
    _cli(errors, "entity", "add", planted.bare(), "--vault", root)
    _cli(errors, "entity", "add", "Carol Danvers", "--alias", planted.bare(), "--vault", root)
    _cli(errors, "entity", "add", "Dave Lister", "--tag", planted.bare(), "--vault", root)
    batch = tmp_path / "batch.jsonl"
    batch.write_text("\n".join(json.dumps(item, ensure_ascii=False) for item in [
        {"text": "jsonl clean"},
        {"text": "jsonl item", "tags": [planted.bare()], "source": planted.either(), "namespace": planted.bare(),
         "episode": planted.bare(), "type": planted.bare(), "entity": planted.bare(), "title": planted.phrase()[0],
         "value": planted.bare()},
    ]), encoding="utf-8")
    _cli(errors, "remember", "--batch", str(batch), "--vault", root)
    batch.unlink()
    vault.refresh()  # and the index once more, as any later command would

    assert len(set(planted.secrets)) == len(planted.secrets) >= 50
    leaked = _on_disk(vault.root, planted.secrets)
    assert leaked == [], f"{len(leaked)} of {len(planted.secrets)} planted secrets found on disk"
    echoed = [s for s in planted.secrets if any(s in e or s.lower() in e.lower() for e in errors)]
    assert echoed == [], f"{len(echoed)} planted secrets echoed in error messages"


@pytest.mark.parametrize("field", ["tags", "source", "type", "namespace", "episode", "lifecycle", "entity",
                                   "supersedes"])
def test_an_identifier_holding_a_secret_refuses_the_write_naming_the_field(vault, field):
    secret = "ghp_" + "a1B2c3D4e5" * 4
    value = [secret] if field in ("tags", "entity") else f"ops-{secret}"
    with pytest.raises(PolicyViolation) as caught:
        vault.remember("a memory", **{field: value})
    message = str(caught.value)
    assert field.rstrip("s") in message and "api_key" in message
    assert secret not in message and "ghp_" not in message
    assert not list(vault.root.glob("memories/*.md")) and not list(vault.root.glob("entities/*.md"))


def test_a_secret_in_the_title_or_value_is_redacted_as_in_the_body(vault):
    result = vault.remember("the staging box", title="staging password: Tr0ub4dor&3x", value="sk-" + "Zy9" * 12)
    assert result.action == "created" and result.value == "***"
    assert "Tr0ub4dor" not in result.title and "Tr0ub4dor" not in result.path
    assert sorted(result.redacted) == ["api_key", "password"]


def test_a_batch_whose_entity_name_is_a_secret_fails_before_any_note_is_written(vault):
    items = [{"text": "客户张三 signed", "entity": "Zhang San"}, {"text": "fine", "tags": ["ok"]},
             {"text": "the key holder", "entity": "AKIA" + "Q7" * 8}]
    with pytest.raises(PolicyViolation, match=r"^item 3: entity"):
        vault.remember_many(items)
    written = [p for p in vault.root.rglob("*.md") if ".vaultmem" not in p.parts
               and p.parent.name in ("memories", "entities", "episodes", "inbox")]
    assert written == []


def test_add_entity_refuses_a_secret_name_alias_or_tag_and_writes_nothing(vault):
    for args in (("sk-" + "q1W2e3R4t5" * 3,), ("Eve", ["password=Hunter2Hunter2"]), ("Eve", ["E"], ["xoxb-1234567890-abcdef"])):
        with pytest.raises(PolicyViolation) as caught:
            vault.add_entity(*args)
        assert "Hunter2" not in str(caught.value) and "sk-" not in str(caught.value)
    assert not list(vault.root.glob("entities/*.md"))
    assert vault.add_entity("Eve", ["Evie"])[0] == "created"


def test_a_name_a_cue_finds_but_a_rule_calls_secret_becomes_no_entity_note(vault):
    """A user rule may make a person's name a secret: the cue that introduces it ("customer Li Wei") must
    not turn the redacted name into an entity note (it used to fail: '***' is no file name)."""
    config = vault.root / ".vaultmem" / "config.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace(
        "  patterns: []", "  patterns: [{name: vip, regex: 'Li Wei'}]"), encoding="utf-8")
    result = Vault(vault.root).remember("customer Li Wei called about the invoice")
    assert result.action == "created" and result.redacted == ["vip"]
    assert not list(vault.root.glob("entities/*.md"))
    assert all("Li Wei" not in p.read_text(encoding="utf-8") for p in vault.root.rglob("*.md"))


def test_unquoted_words_after_the_text_or_name_are_refused_without_echo(vault):
    for argv in (["remember", "my", "password", "is", "Zq81nnxQ", "--vault", str(vault.root)],
                 ["entity", "add", "Bob", "sk-" + "Zq81nnxQ" * 3, "--vault", str(vault.root)]):
        result = runner.invoke(app, argv)
        assert result.exit_code == 1 and "quote text" in result.output
        assert "Zq81nnxQ" not in result.output
    assert not [p for p in vault.root.rglob("*.md") if p.parent.name in ("memories", "entities")]


MARKER = "hunter2-secret-AKIAQ7Q7Q7Q7Q7Q7Q7Q7"


@pytest.mark.parametrize("args", [
    ["--timestamp", MARKER], ["--tag", MARKER.replace("-", "_")],
    ["--supersedes", "not-there-" + MARKER], ["--source", "ops " + MARKER],
])
def test_cli_errors_never_echo_a_rejected_value(vault, capsys, args):
    """Both the typer CLI and the fast path say what was expected, not what was given."""
    argv = ["remember", "a memory", *args, "--vault", str(vault.root)]
    full = runner.invoke(app, argv)
    assert full.exit_code != 0
    assert "Q7Q7" not in full.output and "hunter2" not in full.output, full.output
    code = fast_remember(argv[1:])
    captured = capsys.readouterr()
    assert code in (1, None)  # None: handed to the full CLI, checked above
    assert "Q7Q7" not in captured.err + captured.out and "hunter2" not in captured.err + captured.out


def test_library_errors_for_bad_values_name_the_expectation_only(vault):
    for fields, expected in (({"timestamp": "sk-" + "k" * 30}, "ISO 8601"), ({"score": "pw:Qx9kL2mQx9kL2m"}, "0 and 10"),
                             ({"tags": {"password": "Qx9kL2m"}}, "list of strings"),
                             ({"position": "kkkkQx9kL2m"}, "first or last")):
        with pytest.raises(VaultmemError, match=expected) as caught:
            vault.remember("a memory", **fields)
        assert "kkkk" not in str(caught.value) and "Qx9kL2m" not in str(caught.value)


PASSWORDS = [
    ("my password is swordfish", "swordfish"),
    ("the password is correcthorsebatterystaple", "correcthorsebatterystaple"),
    ("wifi密码 88888888abc", "88888888abc"),
    ("pw: Zq81nnx", "Zq81nnx"),
    ("PW=Zq81nnx for the box", "Zq81nnx"),
    ("the passcode is 448812", "448812"),
    ("passcode is tangerine", "tangerine"),
    ("口令 kaimen2024", "kaimen2024"),
    ("口令是opensesame", "opensesame"),
    ("密码：mima8888", "mima8888"),
    ("路由器密码 Home2024x", "Home2024x"),
    ("PIN is 4821", "4821"),
    ("my pin: 482913", "482913"),
    ("the PIN code is 7391", "7391"),
    ("our wifi password was bluebird", "bluebird"),
    ("her password is elephant", "elephant"),
]
PROSE = [
    "the password policy changed last week",
    "reset your password at the help desk",
    "密码错误，请重试",
    "the password is required to log in",
    "the password is incorrect",
    "my password is too short",
    "the password is on the fridge",
    "the password is the same as before",
    "your password is expiring soon",
    "the password is not stored anywhere",
    "pin the issue to the board",
    "a pin is stuck in the map",
    "the pw team meets on Monday",
    "密码 错误",
    "口令是什么来着",
    "pin 2024 roadmap",
    "password is optional",
]


@pytest.mark.parametrize(("text", "secret"), PASSWORDS)
def test_plain_password_phrasings_are_redacted(text, secret):
    cleaned, findings = Policy.from_settings(default_settings().policy).clean(text)
    assert secret not in cleaned and [f.kind for f in findings] == ["password"], cleaned


@pytest.mark.parametrize("text", PROSE)
def test_prose_about_passwords_keeps_its_words(text):
    assert Policy.from_settings(default_settings().policy).clean(text) == (text, [])
