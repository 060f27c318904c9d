"""The unit browser of the HTML report (``surveyalign/scoring/html_report.py``), filtered and followed in a real
headless Chromium (Debian packages ``chromium`` and ``chromium-driver``, driven by Selenium)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from surveyalign.scoring import summarize_predictions
from surveyalign.scoring.html_report import unit_rows, write_html_report

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


def _records() -> list[dict]:
    # paper P1: readability (-1 judged +1: diff 2) and structure (+1 judged +1); paper P2: readability parse failure,
    # structure (-2 judged +2: diff 4); paper P3 (moprd): readability (+2 judged +1: diff 1)
    rows = [("P1", "readability", "f1000", -1, 1, "scored"), ("P1", "structure", "f1000", 1, 1, "scored"),
            ("P2", "readability", "f1000", -1, None, "parse_failed"), ("P2", "structure", "f1000", -2, 2, "scored"),
            ("P3", "readability", "moprd", 2, 1, "scored")]
    return [{"unit_id": f"{p}-r1::{d}", "paper_id": p, "review_id": f"{p}-r1", "dimension": d, "source": s,
             "reference": ref, "prediction": pred, "status": st, "rationale": f"judge says {p} {d} <b>bold</b>",
             "reference_rationales": [f"human on {p} {d}", "second snippet"], "consistency": None,
             "error": "no score marker" if pred is None else None}
            for p, d, s, ref, pred, st in rows]


def test_unit_rows_by_hand():
    rows = unit_rows({"J": _records()})
    assert [r["diff"] for r in rows] == ["2", "0", "–", "4", "1"]
    assert rows[0]["prediction"] == "+1" and rows[0]["reference"] == "-1" and rows[2]["error"] == "no score marker"
    assert rows[0]["links"] == [{"dimension": "structure", "anchor": "u-0-1"}] and rows[4]["links"] == []


def _page(tmp_path) -> Path:
    recs = _records()
    summary = summarize_predictions(recs, bootstrap=0)
    path = write_html_report(tmp_path / "report.html", {"J": summary}, {"J": recs})
    text = path.read_text(encoding="utf-8")
    assert "http://" not in text and "https://" not in text  # self-contained: nothing to fetch
    assert "&lt;b&gt;bold&lt;/b&gt;" in text  # rationales are escaped, never markup
    return path


def _browser():
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        pytest.skip("headless Chromium is not installed here (apt-get install chromium chromium-driver); "
                    "the unit browser was not tested in a real browser")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install selenium)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)


def test_unit_browser_filters_in_headless_chromium(tmp_path):
    page = _page(tmp_path)
    driver = _browser()
    try:
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import Select

        driver.get(page.as_uri())

        def visible() -> list[str]:
            return [r.get_attribute("id") for r in driver.find_elements(By.CSS_SELECTOR, "#units tr.unit")
                    if r.is_displayed()]

        count = driver.find_element(By.ID, "unit-count")
        assert visible() == ["u-0-0", "u-0-1", "u-0-2", "u-0-3", "u-0-4"] and count.text == "5 of 5 units"
        Select(driver.find_element(By.ID, "f-dimension")).select_by_value("readability")
        assert visible() == ["u-0-0", "u-0-2", "u-0-4"] and count.text == "3 of 5 units"
        Select(driver.find_element(By.ID, "f-status")).select_by_value("scored")
        assert visible() == ["u-0-0", "u-0-4"]
        Select(driver.find_element(By.ID, "f-diff")).select_by_value("2")
        assert visible() == ["u-0-0"]
        driver.find_element(By.ID, "f-clear").click()
        Select(driver.find_element(By.ID, "f-source")).select_by_value("moprd")
        assert visible() == ["u-0-4"]
        driver.find_element(By.ID, "f-clear").click()
        Select(driver.find_element(By.ID, "f-diff")).select_by_value("4")
        assert visible() == ["u-0-3"]
        driver.find_element(By.ID, "f-clear").click()
        driver.find_element(By.ID, "f-paper").send_keys("P2")
        assert visible() == ["u-0-2", "u-0-3"] and count.text == "2 of 5 units"
        # the judge's rationale sits beside the human snippets, rendered as text
        row = driver.find_element(By.ID, "u-0-3")
        assert "judge says P2 structure <b>bold</b>" in row.get_attribute("textContent")
        assert [li.text for li in row.find_elements(By.CSS_SELECTOR, "ul.snippets li")] == [
            "human on P2 structure", "second snippet"]
        # from P1's readability row to P1's structure row: filters clear, the target is shown and marked
        driver.find_element(By.ID, "f-clear").click()
        Select(driver.find_element(By.ID, "f-dimension")).select_by_value("readability")
        driver.find_element(By.CSS_SELECTOR, "#u-0-0 a.unit-link").click()
        target = driver.find_element(By.ID, "u-0-1")
        assert target.is_displayed() and "focus" in target.get_attribute("class")
        assert driver.execute_script("return location.hash") == "#u-0-1"
        assert count.text == "5 of 5 units"
        assert not driver.get_log("browser") or all(e["level"] != "SEVERE" for e in driver.get_log("browser"))
    finally:
        driver.quit()


def test_ci_installs_chromium_when_it_can():
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text(encoding="utf-8")
    assert "chromium-driver" in ci and "command -v apt-get" in ci
    assert shutil.which("bash")
