"""Vault.memorable: the write pipeline's own extraction decides whether a conversation turn is kept."""

import pytest

KEPT = {
    "Remember: staging uses port 8443": "cue: remember",
    "记住我的工号是 EMP123456": "cue: remember",
    "以后都用中文回答": "cue: always",
    "from now on answer in English": "cue: always",
    "Please remember this, ok?": "cue: remember",    # a cue keeps even a question
    "I prefer tabs over spaces": "preference",
    "我喜欢简短的回答": "preference",
    "The report is due 2026-12-20": "value: deadline",
    "合同明天截止": "value: deadline",
    "Invoices go to billing@example.com": "value: email",
}
SMALL_TALK = ["hi, how are you?", "thanks!", "ok", "lol that is funny", "nice weather today", "今天天气不错",
              "what port does staging use?", "is it due 2026-12-20?", "你喜欢什么颜色？"]


@pytest.mark.parametrize("text,reason", KEPT.items())
def test_what_a_person_asks_to_keep_is_memorable(vault, text, reason):
    assert reason in vault.memorable(text)


@pytest.mark.parametrize("text", SMALL_TALK)
def test_small_talk_and_questions_are_not(vault, text):
    assert vault.memorable(text) == []


def test_the_vaults_own_cue_phrases_count(vault):
    config = vault.state / "config.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("    remember: []", "    remember: [write this down]"),
                      encoding="utf-8")
    from vaultmem import Vault

    assert Vault(vault.root).memorable("write this down: the gate code") == ["cue: remember"]
