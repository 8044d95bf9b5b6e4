"""The report opens in a real browser (issue 30 item 4): headless Chromium draws every chart (SVG with a
size), logs no error, asks for nothing over the network, and a hostile note runs no script.

Skipped only where no Chromium is installed (`.ci/run` installs Debian's `chromium`); Playwright is in
the `dev` extra, so a missing driver fails rather than skips."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .test_report import HOSTILE_ENTITY, HOSTILE_SOURCE, HOSTILE_TITLE, NOW, memory

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (apt-get install chromium)")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


def open_in_chromium(path: str, screenshot: Path | None = None) -> dict:
    """Load the file; what the page logged, asked for and drew."""
    from playwright.sync_api import sync_playwright

    seen: dict = {"console": [], "errors": [], "requests": [], "dialogs": []}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 900})
            page.on("console", lambda m: seen["console"].append((m.type, m.text)))
            page.on("pageerror", lambda e: seen["errors"].append(str(e)))
            page.on("request", lambda r: seen["requests"].append(r.url))
            page.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))
            page.goto(Path(path).as_uri(), wait_until="load")
            seen["svgs"] = page.eval_on_selector_all(
                "svg", "els => els.map(e => { const r = e.getBoundingClientRect();"
                       " return {w: r.width, h: r.height, shapes: e.querySelectorAll("
                       "'polygon, polyline, rect.bar, circle, line.edge').length,"
                       " drawn: [...e.querySelectorAll('polygon.series, polyline.series, rect.bar, circle.node')]"
                       ".filter(s => { const b = s.getBoundingClientRect(); return b.width > 0 && b.height > 0; }).length}; })")
            seen["scripts"] = page.eval_on_selector_all("script", "els => els.length")
            seen["hostile"] = page.eval_on_selector_all("img, [onerror], [onload]", "els => els.length")
            seen["title"] = page.title()
            if screenshot is not None:
                page.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    return seen


def test_the_sample_vaults_report_draws_every_chart_in_chromium(sample, tmp_path):
    sample.record_access([sample.resolve("客户张三合同编号 CT2024-0876")["id"]], now=NOW - 30 * 86400)
    written = sample.report(tmp_path, note="客户张三合同编号 CT2024-0876", now=NOW)
    seen = open_in_chromium(written.path, tmp_path / "report.png")
    assert seen["errors"] == [] and [m for m in seen["console"] if m[0] in ("error", "warning")] == []
    assert all(url.startswith("file://") for url in seen["requests"]), seen["requests"]
    svgs = seen["svgs"]
    assert len(svgs) >= 7  # vault strength, this memory, four distributions, decay's bars, the graph
    assert all(s["w"] > 100 and s["h"] > 50 for s in svgs), svgs
    assert all(s["drawn"] > 0 for s in svgs), svgs  # every chart has a shape with a size on screen
    assert seen["title"] == f"Memory report: {sample.root.name}"
    assert (tmp_path / "report.png").stat().st_size > 50_000


def test_a_hostile_note_runs_nothing_in_the_browser(vault, tmp_path):
    vault.add_entity(HOSTILE_ENTITY)
    note = memory(vault, HOSTILE_TITLE, written=NOW - 3 * 86400, source=HOSTILE_SOURCE,
                  body=f"about [[{HOSTILE_ENTITY}]]")
    vault.record_access([note], now=NOW - 86400)
    seen = open_in_chromium(vault.report(tmp_path, note=note, now=NOW).path)
    assert seen["dialogs"] == [] and seen["errors"] == []
    assert seen["scripts"] == 0 and seen["hostile"] == 0
