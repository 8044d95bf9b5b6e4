"""Faults of the store: a killed command never freezes the vault, the index heals itself, a
read-only vault still reads. Most of these run the real CLI in subprocesses and kill them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vaultmem import Vault

REPO = Path(__file__).resolve().parent.parent
# Seconds a subprocess or a wait may take before the test fails: no test here times what it checks (a
# loaded machine must not fail one), so this only catches a hang, at many times what a command takes.
WATCHDOG = 120

# A batch that stops after its workers started: drafts.worker_pool is lowered to a few items, and
# the writer hangs at its first decision, holding the write lock, until it is killed.
HUNG_BATCH = """
import sys, time
import vaultmem.write.drafts as drafts
import vaultmem.write.pipeline as write
drafts.PARALLEL_MIN = 4
def hang(self, *args, **kwargs):
    print("ready", flush=True)
    time.sleep(120)
write.Writer.settle = hang
from vaultmem.surfaces.cli import app
app(["remember", "--batch", sys.argv[1], "--vault", sys.argv[2]])
"""

# Holds the vault's write lock until killed (another writer in the middle of a long batch).
HOLD_LOCK = """
import sys, time
from vaultmem import Vault
vault = Vault(sys.argv[1])
with vault.index.writing():
    print("ready", flush=True)
    time.sleep(120)
"""


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), **extra}


def cli(*args: str, timeout: float = WATCHDOG, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vaultmem", *args], capture_output=True, text=True,
                          env=_env(**env), timeout=timeout)


def start(script: str, *args: str, **env: str) -> subprocess.Popen:
    """A Python script in a subprocess, once it printed "ready"."""
    proc = subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_env(**env))
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        raise AssertionError(f"helper did not start: {line!r} {proc.stderr.read()}")
    return proc


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def gone(pid: int) -> bool:
    """Whether a process exited (a zombie waiting for its reaper counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def wait_until(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def batch_file(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "batch.jsonl"
    path.write_text("".join(json.dumps({"text": f"Server rack {i} sits in room B{i}"}) + "\n" for i in range(n)),
                    encoding="utf-8")
    return path


# -- 1. a killed batch never freezes the vault ------------------------------------------------------

@pytest.mark.skipif(not Path("/proc/self/task").is_dir() or len(os.sched_getaffinity(0)) < 2,
                    reason="needs Linux /proc and two cores (a batch with worker processes)")
def test_a_killed_batch_leaves_no_worker_and_no_lock_behind(vault, tmp_path):
    batch = start(HUNG_BATCH, str(batch_file(tmp_path, 20)), str(vault.root))
    workers = children(batch.pid)
    assert workers, "the batch started no worker processes"
    try:
        batch.kill()
        batch.wait()
        assert wait_until(lambda: all(gone(w) for w in workers), WATCHDOG), "workers outlived their batch"
        done = cli("remember", "The backup runs at 02:00", "--vault", str(vault.root))
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("created:")
    finally:
        for pid in workers:
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_writer_waiting_for_the_lock_says_so_and_gives_up_after_the_timeout(vault):
    holder = start(HOLD_LOCK, str(vault.root))
    try:
        waited = cli("remember", "The backup runs at 02:00", "--vault", str(vault.root), VAULTMEM_LOCK_TIMEOUT="1.5")
    finally:
        holder.kill()
        holder.wait()
    # it said so after a second of waiting, and gave up after the 1.5 s it was given, not the 60 s default
    # (a writer that never gave up would be stopped by the watchdog)
    assert waited.returncode == 1
    assert f"waiting for another vaultmem writer (pid {holder.pid})" in waited.stderr
    assert f"another vaultmem writer (pid {holder.pid}) held the vault's write lock for 1.5 s" in waited.stderr
    assert not list((vault.root / "memories").glob("*.md"))
    # the holder is gone: its lock went with it
    assert cli("remember", "The backup runs at 02:00", "--vault", str(vault.root)).returncode == 0


class FakeClock:
    """The write lock's clock: sleep() moves it on at once, so a wait costs no time and counts its polls."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps = 0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.sleeps += 1


def test_the_lock_timeout_is_a_setting(vault, monkeypatch):
    from vaultmem.store import writelock
    from vaultmem.store.writelock import LockTimeout

    config = vault.state / "config.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("lock_timeout: 60", "lock_timeout: 0.3"),
                      encoding="utf-8")
    holder = start(HOLD_LOCK, str(vault.root))
    clock = FakeClock()
    monkeypatch.setattr(writelock, "time", clock)
    try:
        with pytest.raises(LockTimeout, match="for 0.3 s"):
            Vault(vault.root).remember("The backup runs at 02:00")
    finally:
        holder.kill()
        holder.wait()
    # it waited the 0.3 s of the setting, not the 60 s default, in a dozen polls of the held lock (the pause
    # between two doubles from 1 ms up to 50 ms), then gave up
    assert 0.3 <= clock.now < 0.35
    assert 0 < clock.sleeps < 20


def test_a_child_forked_by_a_writer_does_not_keep_its_lock(vault):
    # the writer forks a plain child (no pool, nothing that would make it die), then is killed
    forking = HOLD_LOCK.replace('print("ready"', 'child = os.fork()\n    if child == 0:\n        time.sleep(30)\n'
                                '        os._exit(0)\n    print(child, flush=True)\n    print("ready"')
    holder = subprocess.Popen([sys.executable, "-c", "import os\n" + forking, str(vault.root)], stdout=subprocess.PIPE,
                              text=True, env=_env())
    child = int(holder.stdout.readline())
    try:
        assert holder.stdout.readline().strip() == "ready"
        holder.kill()
        holder.wait()
        assert not gone(child)
        done = cli("remember", "The backup runs at 02:00", "--vault", str(vault.root), VAULTMEM_LOCK_TIMEOUT="3")
        assert done.returncode == 0, done.stderr
    finally:
        os.kill(child, signal.SIGKILL)


# -- 6. a read never waits for a writer ------------------------------------------------------------

def test_recall_list_and_show_answer_from_the_index_while_another_writer_holds_the_lock(vault):
    made = vault.remember("The backup runs at 02:00 in rack B", tags=["ops"])
    vault.recall("backup")  # indexed, as after any earlier command
    holder = start(HOLD_LOCK, str(vault.root))
    try:
        # a lock timeout of 0: a command that waited for the writer's lock would fail at its first try
        found = cli("recall", "backup", "--vault", str(vault.root), "--json", VAULTMEM_LOCK_TIMEOUT="0")
        listed = cli("list", "--vault", str(vault.root), "--json", VAULTMEM_LOCK_TIMEOUT="0")
        shown = cli("show", made.id, "--vault", str(vault.root), "--json", VAULTMEM_LOCK_TIMEOUT="0")
    finally:
        holder.kill()
        holder.wait()
    assert [h["id"] for h in json.loads(found.stdout)] == [made.id], found.stderr
    assert [m["id"] for m in json.loads(listed.stdout)] == [made.id], listed.stderr
    assert json.loads(shown.stdout)["id"] == made.id, shown.stderr
    assert "waiting" not in found.stderr + listed.stderr + shown.stderr


# -- 5. the device id is created whole ------------------------------------------------------------

def _first_run(home: str, start, out) -> None:
    from vaultmem.store.events import device_id

    os.environ["VAULTMEM_HOME"] = home
    start.wait()
    try:
        out.put(device_id())
    except Exception as exc:  # noqa: BLE001 - reported to the test
        out.put(f"error: {exc}")


@pytest.mark.skipif(sys.platform != "linux", reason="forks processes")
def test_concurrent_first_runs_agree_on_one_device_id(tmp_path, monkeypatch):
    import multiprocessing

    monkeypatch.delenv("VAULTMEM_DEVICE_ID")
    context = multiprocessing.get_context("fork")
    for round_ in range(20):
        home = str(tmp_path / f"home{round_}")
        start, out = context.Barrier(12), context.Queue()
        procs = [context.Process(target=_first_run, args=(home, start, out)) for _ in range(12)]
        for proc in procs:
            proc.start()
        ids = {out.get(timeout=WATCHDOG) for _ in procs}
        for proc in procs:
            proc.join()
        assert len(ids) == 1 and not next(iter(ids)).startswith("error"), ids
        assert (Path(home) / "device-id").read_text(encoding="utf-8") == f"{ids.pop()}\n"


# -- 2. a killed write's temp files are cleaned up ---------------------------------------------------

def _dead_pid() -> int:
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def test_the_next_refresh_removes_temp_files_of_dead_writers_only(vault):
    dead = vault.folders["memories"] / f".Rack B.md.{_dead_pid()}.a1b2c3.7.tmp"
    dead_day = vault.folders["episodes"] / f".2026-01-02.md.{_dead_pid()}.00ff00.0.tmp"
    live = vault.folders["memories"] / f".Rack C.md.{os.getppid()}.a1b2c3.8.tmp"  # a writer still at work
    person = vault.folders["memories"] / ".draft.tmp"  # not ours
    for path in (dead, dead_day, live, person):
        path.write_bytes(b"")
    done = cli("recall", "rack", "--vault", str(vault.root))
    assert done.returncode == 0, done.stderr
    assert not dead.exists() and not dead_day.exists()
    assert live.exists() and person.exists()


def test_init_makes_git_ignore_temp_files_in_the_note_folders_only(vault, tmp_path):
    if subprocess.run(["git", "--version"], capture_output=True).returncode:
        pytest.skip("no git")
    subprocess.run(["git", "init", "-q", str(vault.root)], check=True)
    temp = vault.folders["inbox"] / f".Rack B.md.{_dead_pid()}.a1b2c3.7.tmp"
    temp.write_bytes(b"")
    note = vault.remember("The backup runs at 02:00")
    ignored = subprocess.run(["git", "-C", str(vault.root), "check-ignore", str(temp),
                              str(vault.root / note.path)], capture_output=True, text=True).stdout.splitlines()
    assert ignored == [str(temp)]
    assert not (vault.root / ".gitignore").exists()


# -- 3. a damaged index heals itself ----------------------------------------------------------------

def _garble_middle(db: Path) -> None:
    """4 KiB of garbage over the page in the middle of the database file (of the sample's index: a
    page of the notes table, which a refresh reads whole)."""
    import sqlite3

    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every page in the file, none in the log
    conn.close()
    size = db.stat().st_size
    with open(db, "r+b") as handle:
        handle.seek(size // 2 // 4096 * 4096)
        handle.write(bytes(range(256)) * 16)


def _indexed_sample(sample) -> tuple[Vault, Path, list[str]]:
    sample.refresh()
    expected = [h.id for h in sample.recall("合同编号", record_access=False)]
    sample.close()  # checkpoints the write-ahead log into the file
    return sample, sample.root / ".vaultmem/cache/index.sqlite", expected


def test_a_database_damaged_mid_file_is_rebuilt_by_the_next_command(sample):
    sample, db, expected = _indexed_sample(sample)
    _garble_middle(db)
    found = cli("recall", "合同编号", "--vault", str(sample.root), "--json")
    assert found.returncode == 0, found.stderr
    assert [h["id"] for h in json.loads(found.stdout)] == expected
    assert found.stderr.count("index damaged") == 1 and "rebuilding from the notes" in found.stderr
    _garble_middle(db)
    checked = cli("doctor", "--vault", str(sample.root))
    assert checked.returncode == 3
    assert "warning: the index was damaged" in checked.stdout
    assert cli("doctor", "--vault", str(sample.root)).returncode == 0  # rebuilt: nothing left to report
    _garble_middle(db)
    assert cli("reindex", "--vault", str(sample.root)).returncode == 0


@pytest.mark.parametrize("victim", ["post_doc.npy", "score.npy", "vocab.json", "terms.bin", "dup_key.bin"])
def test_a_damaged_generation_is_rebuilt_and_doctor_says_so(sample, capsys, victim):
    sample, db, expected = _indexed_sample(sample)
    generation = max(db.parent.glob("gen-*"), key=lambda p: int(p.name[4:]))
    target = generation / victim
    os.truncate(target, target.stat().st_size // 2 - 1)
    report = Vault(sample.root).doctor()
    assert not report.ok and f"the index was damaged ({generation.name}: {victim}" in report.warnings[-1]
    assert "index damaged" in capsys.readouterr().err
    assert Vault(sample.root).doctor().ok  # rebuilt: nothing left to report
    if victim != "dup_key.bin":  # read by recall (dup_key.bin by a write's near-duplicate lookup)
        generation = max(db.parent.glob("gen-*"), key=lambda p: int(p.name[4:]))
        os.truncate(generation / victim, 0)
        assert [h.id for h in Vault(sample.root).recall("合同编号", record_access=False)] == expected
        assert "index damaged" in capsys.readouterr().err


def test_a_process_holding_the_old_index_follows_the_rebuild_another_made(sample):
    sample, db, expected = _indexed_sample(sample)
    sample.recall("合同编号", record_access=False)  # this process has the old file open and loaded
    _garble_middle(db)
    healed = cli("recall", "合同编号", "--vault", str(sample.root))
    assert healed.returncode == 0 and "index damaged" in healed.stderr
    assert [h.id for h in sample.recall("合同编号", record_access=False)] == expected
    made = sample.remember("The quokka enclosure opens at nine")
    seen = cli("recall", "quokka", "--vault", str(sample.root), "--json", "--no-refresh")
    assert [h["id"] for h in json.loads(seen.stdout)] == [made.id]  # written to the new file, not the old one


# -- 4. a read-only vault still reads -------------------------------------------------------------

def _read_only(vault_root: Path) -> list[str] | None:
    """A command prefix that runs with the vault read-only: a read-only bind mount of it (as root,
    where permissions are not enforced), or the vault made unwritable (as anyone else)."""
    if os.geteuid() != 0:
        subprocess.run(["chmod", "-R", "a-w", str(vault_root)], check=True)
        return []
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode:
        return None
    script = 'mount --bind -o ro "$0" "$0" && exec "$@"'
    return ["unshare", "-m", "sh", "-c", script, str(vault_root)]


def test_recall_show_and_list_answer_in_a_read_only_vault(vault):
    made = vault.remember("The backup runs at 02:00 in rack B", tags=["ops"])
    vault.recall("backup")  # an index exists, but it cannot be written to any more
    prefix = _read_only(vault.root)
    if prefix is None:
        pytest.skip("cannot make the vault read-only here (root without unshare)")
    try:
        def run(*args: str) -> subprocess.CompletedProcess:
            return subprocess.run([*prefix, sys.executable, "-m", "vaultmem", *args, "--vault", str(vault.root)],
                                  capture_output=True, text=True, env=_env(), timeout=WATCHDOG)

        found = run("recall", "backup", "--json")
        shown = run("show", made.id, "--json")
        listed = run("list", "--json")
        assert run("remember", "Another fact").returncode == 1  # a write fails, and says so
    finally:
        if os.geteuid() != 0:
            subprocess.run(["chmod", "-R", "u+w", str(vault.root)], check=True)
    assert [h["id"] for h in json.loads(found.stdout)] == [made.id], found.stderr
    assert found.stderr.count("read-only") == 1
    assert json.loads(shown.stdout)["id"] == made.id, shown.stderr
    assert [m["id"] for m in json.loads(listed.stdout)] == [made.id], listed.stderr


def test_a_recall_whose_best_notes_are_not_on_disk_yet_still_answers_in_full(vault):
    """A batch indexes its notes while a worker creates them: the best hits may not exist yet. The
    recall looks further down instead of answering with 0 of 10."""
    vault.remember_many([{"text": f"Rotation drill {n}: the pager rotation moves at noon"} for n in range(40)])
    hits = vault.recall("pager rotation", limit=10)
    for hit in hits:  # the ten best vanish (as if not created yet), unknown to the index
        (vault.root / hit.path).unlink()
    again = vault.recall("pager rotation", limit=10)
    assert len(again) == 10
    assert all((vault.root / hit.path).exists() for hit in again)


def test_one_retry_loop_redoes_a_read_edit_write_while_someone_saves_and_then_gives_up():
    from vaultmem.errors import WriteConflict
    from vaultmem.store.store import CONFLICT_RETRIES, retry_conflicts

    calls = []

    def saved_twice_meanwhile():
        calls.append(1)
        if len(calls) < 3:
            raise WriteConflict("memories/x.md")
        return "written"

    assert retry_conflicts(saved_twice_meanwhile) == "written" and len(calls) == 3
    calls.clear()

    def always_saved():
        calls.append(1)
        raise WriteConflict("memories/x.md", f"changed (attempt {len(calls)})")

    with pytest.raises(WriteConflict, match=f"attempt {CONFLICT_RETRIES}"):
        retry_conflicts(always_saved)
    assert len(calls) == CONFLICT_RETRIES
