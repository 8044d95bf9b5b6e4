"""Make docs/report.png: the sample vault's `vaultmem report`, opened in headless Chromium.

    python docs/screenshot_report.py            # needs the dev extra (playwright) and Debian's chromium

The sample vault is copied to a temporary folder (the repository's copy is never written), given a few
weeks of use (recalls of some memories, feedback, a pin: the events a month of an agent's work leaves in
the device log, dated in October and November 2026), and reported as of now with `--note` for the current
contract note (and lint run now). The picture in docs/ was made on 2026-12-07.
A CJK font (Debian: fonts-wqy-microhei or fonts-noto-cjk) makes the Chinese titles readable.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
CONTRACT = "客户张三合同编号 CT2024-0876"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


def day(text: str) -> float:
    return dt.datetime.fromisoformat(text + "T10:00:00+08:00").timestamp()


def use(vault, ref: str, *days: str) -> None:
    note = vault.resolve(ref)["id"]
    for when in days:
        vault.record_access([note], now=day(when))


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="vaultmem-docs-"))
    os.environ.update(VAULTMEM_HOME=str(work / "home"), VAULTMEM_DEVICE_ID="laptop-3f2a", TZ="Asia/Shanghai")
    time.tzset()  # the sample vault's user lives in UTC+8: dates as they read them
    from vaultmem import Vault

    target = work / "sample-vault"
    shutil.copytree(REPO / "sample-vault", target, ignore=shutil.ignore_patterns("cache", "devices"))
    vault = Vault(target)
    use(vault, CONTRACT, "2026-10-20", "2026-11-02", "2026-11-18", "2026-11-30")
    vault.feedback(CONTRACT, "useful", now=day("2026-11-05"))
    vault.feedback(CONTRACT, "confirm", now=day("2026-11-25"))
    use(vault, "Prefers concise answers", "2026-10-01", "2026-10-22", "2026-11-12", "2026-12-01")
    use(vault, "Deploy freeze from Nov 10", "2026-11-08", "2026-11-10")
    use(vault, "Don't deploy on Friday afternoon", "2026-10-16", "2026-11-13")
    vault.pin("Timezone is Asia Shanghai", now=day("2026-10-10"))
    vault.feedback("Coffee order", "outdated", now=day("2026-11-20"))
    written = vault.report(work / "out", note=CONTRACT, fresh_lint=True)

    from playwright.sync_api import sync_playwright

    out = REPO / "docs" / "report.png"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium", args=ARGS)
        page = browser.new_page(viewport={"width": 1000, "height": 900}, device_scale_factor=1)
        page.goto(Path(written.path).as_uri(), wait_until="load")
        page.screenshot(path=str(out), full_page=True)
        browser.close()
    shutil.rmtree(work, ignore_errors=True)
    print(f"wrote {out} from {written.bytes:,} bytes of HTML")


if __name__ == "__main__":
    main()
