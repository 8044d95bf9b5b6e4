"""On-write hooks (issue 29 item 4): events after the write, failures recorded, never run unless enabled here."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vaultmem import Vault
from vaultmem.errors import ConfigError
from vaultmem.surfaces.cli import app

RECORDER = """\
import json, sys
lines = sys.stdin.read().splitlines()
with open(sys.argv[1], "a") as out:
    out.write(json.dumps([json.loads(line) for line in lines]) + "\\n")
"""


def configure(vault: Vault, hooks: list[str], timeout: float = 10) -> Vault:
    """Name these hooks (flow mappings) in config.yaml, as a pull would bring them, and open the vault again."""
    lines = "".join(f"    - {hook}\n" for hook in hooks)
    (vault.state / "config.yaml").write_text(f"hooks:\n  timeout: {timeout}\n  run:\n{lines}", encoding="utf-8")
    return Vault(vault.root)


def recorder(vault: Vault, tmp_path: Path, name: str = "rec", actions: str = "") -> tuple[str, Path]:
    script, out = tmp_path / "recorder.py", tmp_path / f"{name}.jsonl"
    script.write_text(RECORDER, encoding="utf-8")
    extra = f", actions: [{actions}]" if actions else ""
    return f"{{name: {name}, command: '{sys.executable} {script} {out}'{extra}}}", out


def runs(out: Path) -> list[list[dict]]:
    """The events each run of the recorder got."""
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()] if out.exists() else []


def events(out: Path) -> list[dict]:
    return [ev for run in runs(out) for ev in run]


def test_a_hook_is_told_of_create_merge_supersede_and_forget(vault, tmp_path):
    hook, out = recorder(vault, tmp_path)
    vault = configure(vault, [hook])
    vault.enable_hook("rec")
    made = vault.remember("Alice's email is alice@example.com")
    merged = vault.remember("Alice can be reached at alice@example.com")
    corrected = vault.correct(made.id, "Alice's email is alice@corp.example.org")
    vault.forget(corrected.id, reason="she left")
    assert vault.wait_for_hooks(20)
    seen = [(ev["action"], ev["id"]) for ev in events(out)]
    assert merged.action == "merged"
    assert seen == [("create", made.id), ("merge", made.id), ("supersede", made.id), ("create", corrected.id),
                    ("forget", corrected.id)]
    first = events(out)[0]
    assert set(first) == {"id", "path", "action", "title", "namespace", "time"}  # no body: see README "Hooks"
    assert first["namespace"] == "shared" and first["title"] and first["path"].endswith(".md")
    assert events(out)[-1]["path"].startswith("archive/")


def test_a_hook_pulled_with_the_config_runs_only_once_enabled_here_and_again_after_a_change(vault, tmp_path):
    hook, out = recorder(vault, tmp_path)
    vault = configure(vault, [hook])
    vault.remember("The office wifi is called Meadow")
    assert vault.wait_for_hooks(20)
    assert not out.exists()
    assert [h["state"] for h in vault.hook_list()] == ["not enabled"]
    vault.enable_hook("rec")
    vault.remember("The printer is on the second floor")
    assert vault.wait_for_hooks(20) and len(events(out)) == 1
    changed = configure(vault, [hook.replace(str(out), str(out) + ".other")])  # a remote changed the command
    assert [h["state"] for h in changed.hook_list()] == ["changed since enabled"]
    changed.remember("Lunch is at noon on Fridays")
    assert changed.wait_for_hooks(20)
    assert not Path(str(out) + ".other").exists() and len(events(out)) == 1
    changed.enable_hook("rec")
    changed.remember("The parking garage closes at 22:00")
    assert changed.wait_for_hooks(20) and len(events(Path(str(out) + ".other"))) == 1


def test_a_changed_script_of_the_vault_needs_enabling_again(vault, tmp_path):
    script = vault.root / "hooks" / "notify.py"
    script.parent.mkdir()
    script.write_text(RECORDER, encoding="utf-8")
    vault = configure(vault, [f"{{name: n, command: '{sys.executable} hooks/notify.py {tmp_path / 'n.jsonl'}'}}"])
    vault.enable_hook("n")
    script.write_text(RECORDER + "import os; os.system('echo pwned')\n", encoding="utf-8")  # a pull changed it
    assert [h["state"] for h in vault.hook_list()] == ["changed since enabled"]
    vault.remember("The server room code changes monthly")
    assert vault.wait_for_hooks(20) and not (tmp_path / "n.jsonl").exists()


def test_a_failing_hook_leaves_the_note_and_its_failure_shows_in_stats_doctor_and_list(vault):
    vault = configure(vault, ["{name: bad, command: 'echo broken >&2; exit 1'}"])
    vault.enable_hook("bad")
    made = vault.remember("The backup runs at 03:00")
    assert vault.wait_for_hooks(20)
    assert (vault.root / made.path).exists()
    [hook] = vault.hook_list()
    assert hook["failures"] == 1 and hook["last_failure"]["why"] == "exit 1"
    assert "broken" in hook["last_failure"]["stderr"] and hook["last_failure"]["ids"] == [made.id]
    assert vault.stats()["hooks"] == {"bad": "enabled, 1 failed"}
    assert any("hook bad failed 1 times" in w for w in vault.doctor().warnings)
    logged = list((vault.device_dir).glob("hooks-*.jsonl"))
    assert logged and "exit 1" in logged[0].read_text(encoding="utf-8")


def test_a_hanging_hook_is_killed_with_its_process_group_and_never_delays_the_write(vault, tmp_path):
    child = tmp_path / "child.pid"
    vault = configure(vault, [f"{{name: slow, command: 'sleep 60 & echo $! > {child}; wait'}}"], timeout=1)
    vault.enable_hook("slow")
    made = vault.remember("The release freeze starts on Monday")
    # the remember returned before the hook could have timed out: its failure is recorded only then
    assert vault.hook_list()[0]["failures"] == 0
    assert (vault.root / made.path).exists()
    assert vault.wait_for_hooks(20)
    [hook] = vault.hook_list()
    assert hook["failures"] == 1 and hook["last_failure"]["why"].startswith("timed out after 1 s")
    pid = int(child.read_text())
    with pytest.raises(ProcessLookupError):  # the hook's own child went with its group
        for _ in range(50):
            os.kill(pid, 0)
            time.sleep(0.05)


def test_a_crashing_entry_point_is_recorded_and_a_working_one_gets_each_event(vault, tmp_path, monkeypatch):
    (tmp_path / "myhooks.py").write_text(textwrap.dedent("""\
        seen = []
        def crash(event):
            raise ValueError("no such channel")
        def keep(event):
            seen.append(event)
    """), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    vault = configure(vault, ["{name: crash, entry_point: 'myhooks:crash'}", "{name: keep, entry_point: 'myhooks:keep'}"])
    vault.enable_hook("crash")
    vault.enable_hook("keep")
    made = vault.remember("The standup moved to 09:30")
    assert vault.wait_for_hooks(20)
    assert (vault.root / made.path).exists()
    crash, keep = vault.hook_list()
    assert crash["failures"] == 1 and crash["last_failure"]["why"] == "crashed: ValueError: no such channel"
    assert keep["failures"] == 0
    import myhooks

    assert [ev["id"] for ev in myhooks.seen] == [made.id]


def test_a_batch_is_one_run_per_thousand_events_not_a_process_per_note(vault, tmp_path):
    hook, out = recorder(vault, tmp_path)
    vault = configure(vault, [hook])
    vault.enable_hook("rec")
    results = vault.remember_many([{"text": f"Sensor {n} reads {n * 3} degrees in hall {n % 7}"} for n in range(1500)])
    assert vault.wait_for_hooks(60)
    assert [len(run) for run in runs(out)] == [1000, 500]
    assert {ev["id"] for ev in events(out)} == {r.id for r in results}


def test_actions_choose_what_a_hook_is_told(vault, tmp_path):
    hook, out = recorder(vault, tmp_path, actions="forget")
    vault = configure(vault, [hook])
    vault.enable_hook("rec")
    made = vault.remember("The old VPN endpoint is vpn1")
    vault.forget(made.id, reason="replaced")
    assert vault.wait_for_hooks(20)
    assert [ev["action"] for ev in events(out)] == ["forget"]


@pytest.mark.parametrize("hook", ["{name: x}", "{name: x, command: a, entry_point: 'm:f'}", "{name: x, entry_point: nocolon}",
                                  "{name: x, command: a, actions: [explode]}", "{command: a}"])
def test_a_hook_that_names_no_one_thing_to_run_is_a_config_error(vault, hook):
    with pytest.raises(ConfigError, match="hooks.run"):
        configure(vault, [hook])


def test_a_kill_with_hooks_queued_loses_no_note(vault, tmp_path):
    pids = tmp_path / "pids"
    vault = configure(vault, [f"{{name: slow, command: 'echo $$ >> {pids}; exec sleep 30'}}"], timeout=30)
    vault.enable_hook("slow")
    script = textwrap.dedent(f"""\
        import sys
        from vaultmem import Vault
        v = Vault({str(vault.root)!r})
        for n in range(3):
            print(v.remember(f"Queued note number {{n}} about the garden").id, flush=True)
        sys.stdin.read()
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env={**os.environ})
    try:
        ids = [proc.stdout.readline().strip() for _ in range(3)]
        proc.send_signal(signal.SIGKILL)  # one hook run hanging, two queued: those are lost (at most once)
        proc.wait(10)
    finally:
        proc.kill()
        for pid in pids.read_text().split() if pids.exists() else []:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
    reopened = Vault(vault.root)
    assert all(reopened.get(i) for i in ids) and len(set(ids)) == 3


def test_the_hooks_commands(vault, tmp_path):
    hook, out = recorder(vault, tmp_path)
    configure(vault, [hook])
    root = ["--vault", str(vault.root)]
    listed = CliRunner().invoke(app, ["hooks", "list", "--json", *root])
    assert listed.exit_code == 0 and json.loads(listed.output)[0]["state"] == "not enabled"
    assert CliRunner().invoke(app, ["hooks", "enable", "rec", *root]).exit_code == 0
    tested = CliRunner().invoke(app, ["hooks", "test", "rec", "--json", *root])
    assert tested.exit_code == 0 and json.loads(tested.output)["ok"]
    assert [ev["action"] for ev in events(out)] == ["test"]
    disabled = CliRunner().invoke(app, ["hooks", "disable", "rec", "--json", *root])
    assert json.loads(disabled.output) == {"name": "rec", "disabled": True}
    unknown = CliRunner().invoke(app, ["hooks", "enable", "nope", *root])
    assert unknown.exit_code == 1 and "no hook named 'nope'" in unknown.output


def test_a_one_off_cli_remember_runs_its_hooks_before_the_process_ends(vault, tmp_path):
    hook, out = recorder(vault, tmp_path)
    vault = configure(vault, [hook])
    vault.enable_hook("rec")
    done = subprocess.run([sys.executable, "-m", "vaultmem", "remember", "--vault", str(vault.root),
                           "The lab door code is on the whiteboard"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("created:")
    assert [ev["action"] for ev in events(out)] == ["create"]  # the fast path's os._exit waited for its queue
