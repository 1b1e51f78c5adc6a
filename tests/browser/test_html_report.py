"""The HTML study report, opened in a real browser (headless Chromium through Playwright).

A small study (DCA against the trusted aggregator over ε, with a dropout rate that makes
DCA abort) is swept, ``privsim report DIR --html`` writes its page, and the page is
checked as a reader sees it: no console error and no request leaving the disk, every
figure drawn with one point per released row of the store, the tables' numbers equal to
the store's (:func:`privsim.studies.load`), the sort on a header click, the hover text
naming the row and its replay command. A screenshot goes to the test's own folder, and to
``docs/figures/html-report.png`` only with ``PRIVSIM_UPDATE_SCREENSHOT=1`` (a test run
never changes a tracked file).

Skipped, with the reason, without Playwright or a Chromium binary (``/usr/bin/chromium``,
Debian's package, or ``$PRIVSIM_CHROMIUM``); no browser is ever downloaded.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import tomli_w

from privsim.cli import main
from privsim.studies import load, load_study
from privsim.studies.sweep import sweep

pytestmark = pytest.mark.browser

sync_api = pytest.importorskip(
    "playwright.sync_api",
    reason="Playwright for Python is not installed (pip install playwright)",
)
CHROMIUM = os.environ.get("PRIVSIM_CHROMIUM", "/usr/bin/chromium")
if not Path(CHROMIUM).is_file():
    pytest.skip(
        f"no Chromium binary at {CHROMIUM} (apt-get install chromium, or set PRIVSIM_CHROMIUM)",
        allow_module_level=True,
    )

LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "figures" / "html-report.png"

BASE = {
    "name": "tiny",
    "baseline": False,
    "population": {"clients": 30, "compute_nodes": 3},
    "data": {"dimension": 4},
    "privacy": {"epsilon": 1.0, "delta": 1e-5},
    "dca": {"tolerated": 4},
    "network": {"encryption": "none", "link": {"latency": {"model": "constant", "value": 0.01}}},
}
# 30% of 30 clients absent is about 9 > T = 4: DCA aborts there, the curator does not.
STUDY = """name = "html-report"
seed = 3
replications = 3
base = "base.toml"

[grid]
"privacy.epsilon" = [0.5, 1.0, 2.0]
"protocol" = ["dca", "trusted_aggregator"]
"faults.absent" = [0.0, 0.3]
"""


@pytest.fixture(scope="module")
def reported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """The swept study's directory and the exit status of ``privsim report --html``."""
    root = tmp_path_factory.mktemp("html")
    (root / "base.toml").write_text(tomli_w.dumps(BASE), encoding="utf-8")
    (root / "study.toml").write_text(STUDY, encoding="utf-8")
    here = Path.cwd()
    os.chdir(root)  # a relative results directory: the page names it as the user typed it
    try:
        sweep(load_study("study.toml"), "results/html-report", progress=None, workers=1)
        status = main(["report", "results/html-report", "--html"])
    finally:
        os.chdir(here)
    return root / "results" / "html-report", status


@pytest.fixture(scope="module")
def study_dir(reported: tuple[Path, int]) -> Path:
    return reported[0]


def test_the_report_command_writes_the_page_and_the_markdown(reported: tuple[Path, int]) -> None:
    # The page is written first, so the browser tests below run even if this fails.
    directory, status = reported
    assert (directory / "report" / "index.html").is_file()
    assert status == 0
    assert (directory / "report" / "summary.md").is_file()


@pytest.fixture(scope="module")
def frame(study_dir: Path) -> Any:
    return load(study_dir)


@pytest.fixture(scope="module")
def opened(study_dir: Path) -> Any:
    """The page open in headless Chromium, with what it logged and requested."""
    page_path = study_dir / "report" / "index.html"
    assert page_path.is_file()
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            problems: list[str] = []
            requests: list[str] = []
            page.on(
                "console",
                lambda m: problems.append(f"{m.type}: {m.text}") if m.type == "error" else None,
            )
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(page_path.as_uri())
            page.wait_for_load_state("load")
            page.wait_for_function(
                "Array.from(document.querySelectorAll('figure.plot .js-plotly-plot'))"
                ".every(d => d._fullLayout !== undefined)"
            )
            yield page, problems, requests
        finally:
            browser.close()


def test_the_page_opens_from_disk_without_errors(opened: Any) -> None:
    page, problems, requests = opened
    assert problems == []
    assert [u for u in requests if not u.startswith(("file:", "data:", "blob:"))] == []
    assert page.title().startswith("html-report")
    study = page.inner_text("#study pre")
    assert 'name = "html-report"' in study and '"faults.absent"' in study


def _expected_points(frame: Any, columns: list[str], where: dict[str, str]) -> int:
    rows = frame[frame["status"] == "released"]
    for column, value in where.items():
        rows = rows[rows[column].astype(str) == value]
    total = 0
    for column in columns:
        values = pd.to_numeric(rows[column], errors="coerce").replace([np.inf, -np.inf], np.nan)
        total += int(values.notna().sum())
    return total


def test_every_figure_draws_one_point_per_released_row(opened: Any, frame: Any) -> None:
    page, _, _ = opened
    figures = page.evaluate(
        """Array.from(document.querySelectorAll('figure.plot')).map(f => ({
            points: Number(f.dataset.points),
            columns: JSON.parse(f.dataset.columns),
            where: JSON.parse(f.dataset.where),
            drawn: f.querySelectorAll('.scatterlayer path.point').length,
        }))"""
    )
    assert len(figures) >= 5
    for fig in figures:
        expected = _expected_points(frame, fig["columns"], fig["where"])
        assert fig["drawn"] == fig["points"] == expected, fig["columns"]
    # the curator always releases, DCA never does at 30% absent: 36 rows, 27 released
    rmse = next(f for f in figures if f["columns"] == ["accuracy.rmse"])
    assert rmse["drawn"] == 27


def _table(page: Any, selector: str) -> list[dict[str, str]]:
    return page.evaluate(
        """sel => {
            const t = document.querySelector(sel);
            const names = Array.from(t.tHead.rows[0].cells).map(c => c.dataset.column);
            return Array.from(t.tBodies[0].rows).map(r =>
                Object.fromEntries(Array.from(r.cells).map((c, i) => [names[i], c.dataset.value])));
        }""",
        selector,
    )


def _cell(frame: Any, row: dict[str, str]) -> Any:
    """The store's rows of the table row's grid cell."""
    mask = np.ones(len(frame), dtype=bool)
    for column, value in row.items():
        if column.startswith("grid."):
            stored = frame[column]
            if pd.api.types.is_numeric_dtype(stored):
                mask &= np.isclose(stored.to_numpy(dtype=float), float(value), rtol=0, atol=0)
            else:
                mask &= (stored.astype(str) == value).to_numpy()
    return frame[mask]


def test_the_summary_tables_hold_the_stores_numbers(opened: Any, frame: Any) -> None:
    page, _, _ = opened
    names = page.evaluate(
        "Array.from(document.querySelectorAll('#summary table')).map(t => t.dataset.table)"
    )
    assert "accuracy.rmse" in names and "privacy.achieved_epsilon" in names
    for metric in names:
        rows = _table(page, f'#summary table[data-table="{metric}"]')
        assert rows
        for row in rows:
            cell = _cell(frame, row)
            released = cell[cell["status"] == "released"]
            values = pd.to_numeric(released[metric], errors="coerce").to_numpy(dtype=float)
            values = values[np.isfinite(values)]
            assert int(row["rows"]) == len(cell)
            assert int(row["released"]) == len(released)
            assert int(row["n"]) == values.size
            if values.size == 0:  # a cell that never released is shown, without numbers
                assert math.isnan(float(row["median"]))
                continue
            # The same doubles from the same rows: medians agree exactly; a mean may
            # differ in its last bits with the order of summation (relative 1e-12).
            assert float(row["median"]) == float(np.median(values))
            assert float(row["mean"]) == pytest.approx(float(np.mean(values)), rel=1e-12)


def test_the_rates_table_holds_the_stores_counts(opened: Any, frame: Any) -> None:
    page, _, _ = opened
    rows = _table(page, 'table[data-table="rates"]')
    assert len(rows) == 12  # 3 ε × 2 protocols × 2 dropout rates
    for row in rows:
        cell = _cell(frame, row)
        released = int((cell["status"] == "released").sum())
        aborted = int((cell["status"] == "aborted").sum())
        assert (int(row["rows"]), int(row["released"]), int(row["aborted"])) == (
            len(cell),
            released,
            aborted,
        )
        assert float(row["abort rate"]) == pytest.approx(aborted / len(cell), rel=1e-12)
        met = cell[(cell["status"] == "released")]["privacy.guarantee_met"].astype(bool)
        rate = float(row["guarantee-met rate"])
        assert (math.isnan(rate) and met.empty) or rate == pytest.approx(met.mean(), rel=1e-12)
    # the design of the study: DCA aborts every run at 30% absent, the curator none
    dca_absent = [
        r for r in rows if r["grid.protocol"] == "dca" and r["grid.faults.absent"] != "0.0"
    ]
    assert dca_absent and all(r["abort rate"] == "1.0" for r in dca_absent)


def test_a_header_click_sorts_the_table(opened: Any) -> None:
    page, _, _ = opened
    table = '#summary table[data-table="accuracy.rmse"]'
    header = page.locator(f'{table} th[data-column="median"]')
    header.click()
    up = [float(r["median"]) for r in _table(page, table)]
    numbers = [v for v in up if not math.isnan(v)]
    assert len(numbers) >= 6
    # numbers in order, cells without a median (never released) last
    assert up[: len(numbers)] == sorted(numbers)
    assert header.get_attribute("aria-sort") == "ascending"
    header.click()
    down = [float(r["median"]) for r in _table(page, table)]
    assert down[: len(numbers)] == sorted(numbers, reverse=True)
    assert all(math.isnan(v) for v in down[len(numbers) :])
    assert header.get_attribute("aria-sort") == "descending"
    # text columns sort as text
    page.locator(f'{table} th[data-column="grid.protocol"]').click()
    protocols = [r["grid.protocol"] for r in _table(page, table)]
    assert protocols == sorted(protocols)


def test_hovering_a_point_names_its_row_seed_and_replay_command(opened: Any, frame: Any) -> None:
    page, _, _ = opened
    point = page.locator("figure.plot").first.locator(".scatterlayer path.point").first
    point.scroll_into_view_if_needed()
    box = point.bounding_box()
    assert box is not None
    # the plot's drag layer lies over the points: move the mouse there, as a reader does
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_selector(".hoverlayer .hovertext", timeout=5000)
    text = page.evaluate(
        "Array.from(document.querySelectorAll('.hoverlayer .hovertext text.nums tspan.line'))"
        ".map(t => t.textContent).join('\\n')"
    )
    row_id = text.split("row ", 1)[1].split()[0]
    stored = frame[frame["row_id"] == row_id]
    assert len(stored) == 1
    assert f"seed {int(stored['seed'].iloc[0])}" in text
    assert f"privsim replay {row_id} --out results/html-report" in text


def test_screenshot(opened: Any, tmp_path: Path) -> None:
    """The first figure with a point's hover text, for docs/explanation/studies.md; and still no error
    after the clicks and hovers of the tests before."""
    page, problems, _ = opened
    page.locator("#figures").scroll_into_view_if_needed()
    page.evaluate("document.querySelector('#figures').scrollIntoView()")
    point = page.locator("figure.plot").first.locator(".scatterlayer path.point").nth(4)
    box = point.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_selector(".hoverlayer .hovertext", timeout=5000)
    shot = (
        SCREENSHOT if os.environ.get("PRIVSIM_UPDATE_SCREENSHOT") == "1" else tmp_path / "shot.png"
    )
    shot.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shot), full_page=False)
    assert shot.stat().st_size > 10_000
    assert problems == []
