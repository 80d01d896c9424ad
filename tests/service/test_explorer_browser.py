"""The explorer and the API docs in a real headless Chromium against a real ``contextfuse serve``.

The server runs as a process on loopback, with a bearer token, over a real repository (the
source of the installed ``click`` package, committed to git). The browser is Debian's
``chromium`` driven through ``chromedriver`` by Selenium. Each test asserts that no request
left loopback and that no script failed.

Without Chromium the tests skip, naming the packages to install; with
``CONTEXTFUSE_REQUIRE_BROWSER=1`` (set by ``.ci/run`` once it has installed them) they fail
instead, so CI cannot pass by skipping. ``CONTEXTFUSE_SCREENSHOTS=DIR`` keeps the
screenshots in DIR.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import click
import httpx
import pytest

REQUIRED = os.environ.get("CONTEXTFUSE_REQUIRE_BROWSER") == "1"
CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
TOKEN = "browser-token-0123456789"
QUERY = "how are command line options parsed"
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
# Schemes of requests that reach the network; the others (data:, blob:, chrome:) cannot.
NETWORK_SCHEMES = {"http", "https", "ws", "wss", "ftp"}

if not (CHROMIUM and CHROMEDRIVER) and not REQUIRED:
    pytest.skip(
        "headless Chromium is not installed: apt-get install chromium chromium-driver",
        allow_module_level=True,
    )
if not REQUIRED:
    pytest.importorskip("selenium", reason="selenium is not installed (requirements-dev.txt)")

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def real_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository holding the source of the installed ``click`` package."""
    root = tmp_path_factory.mktemp("explorer") / "click-src"
    shutil.copytree(
        Path(click.__file__).parent, root / "click", ignore=shutil.ignore_patterns("__pycache__")
    )
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "."], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "click"], cwd=root, check=True)
    return root


@pytest.fixture(scope="module")
def server(real_repo: Path, served_process: Callable[..., Any]) -> Iterator[str]:
    env_token = os.environ.get("CONTEXTFUSE_SERVER_TOKEN")
    os.environ["CONTEXTFUSE_SERVER_TOKEN"] = TOKEN  # not on the command line
    try:
        with served_process("serve", "--port", "0", "--project", f"click={real_repo}") as url:
            yield url
    finally:
        if env_token is None:
            del os.environ["CONTEXTFUSE_SERVER_TOKEN"]
        else:
            os.environ["CONTEXTFUSE_SERVER_TOKEN"] = env_token


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    """Headless Chromium with a fresh profile that records every request it makes."""
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1400,1800",
    ):
        options.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="contextfuse-chromium-")
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def page(browser: WebDriver) -> WebDriver:
    """The browser, its logs emptied for the test."""
    browser.get_log("performance")
    browser.get_log("browser")
    return browser


def assert_stayed_local(driver: WebDriver) -> None:
    """Every request since the last check went to loopback, and no script failed."""
    assert offsite_requests(driver) == []
    assert script_errors(driver) == []


def offsite_requests(driver: WebDriver) -> list[str]:
    """URLs of network requests the browser made to anything but loopback."""
    offsite = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] != "Network.requestWillBeSent":
            continue
        url = message["params"]["request"]["url"]
        parts = urlsplit(url)
        if parts.scheme in NETWORK_SCHEMES and parts.hostname not in LOOPBACK:
            offsite.append(url)
    return offsite


def script_errors(driver: WebDriver) -> list[str]:
    """Console errors: failed scripts, refused content (CSP), failed loads; not the 401 that
    makes a page ask for the token."""
    return [
        e["message"]
        for e in driver.get_log("browser")
        if e["level"] == "SEVERE"
        and not (e["source"] == "network" and "(Unauthorized)" in e["message"])
    ]


def wait_for(driver: WebDriver, condition: Callable[[WebDriver], Any], seconds: float = 90) -> Any:
    return WebDriverWait(driver, seconds, poll_frequency=0.1).until(condition)


def give_token(driver: WebDriver, done: Callable[[WebDriver], Any]) -> None:
    """Answer the page's token prompt if it asks (the tab keeps the token), until ``done``."""
    prompt = "#token-form:not([hidden])"
    wait_for(driver, lambda d: done(d) or d.find_elements(By.CSS_SELECTOR, prompt))
    for form in driver.find_elements(By.CSS_SELECTOR, prompt):
        form.find_element(By.TAG_NAME, "input").send_keys(TOKEN)
        form.find_element(By.TAG_NAME, "button").click()
    wait_for(driver, done)


def runs(driver: WebDriver) -> int:
    return int(driver.execute_script("return document.body.dataset.runs || 0"))


def open_explorer(driver: WebDriver, server: str, **params: Any) -> None:
    """Load the explorer afresh with a query in its address; wait for the first payload."""
    driver.get("about:blank")
    driver.get(f"{server}/#{urlencode(params)}")
    give_token(driver, lambda d: runs(d) == 1)


def assemble(server: str, budget: int, strategies: list[str] | None = None) -> dict[str, Any]:
    """What a script gets from the API for the request the page makes."""
    body: dict[str, Any] = {"query": QUERY, "project": "click", "budget": budget, "explain": True}
    if strategies:
        body["strategies"] = strategies
    response = httpx.post(
        server + "/v1/assemble",
        json=body,
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=120,
    )
    response.raise_for_status()
    payload: dict[str, Any] = response.json()
    return payload


def treemap_cells(driver: WebDriver, svg: str = "svg#treemap") -> list[dict[str, Any]]:
    """The budget's cells: kind, tokens and area in the drawing's own units."""
    cells: list[dict[str, Any]] = driver.execute_script(
        """
        return [...document.querySelectorAll(arguments[0] + ' g.cell > rect:first-child')].map(
          (r) => ({kind: r.getAttribute('class'), tokens: Number(r.dataset.tokens),
                   area: r.width.baseVal.value * r.height.baseVal.value}));
        """,
        svg,
    )
    return cells


def change_budget(driver: WebDriver, budget: int) -> None:
    field = driver.find_element(By.ID, "budget")
    field.clear()
    field.send_keys(str(budget))
    before = runs(driver)
    driver.find_element(By.ID, "run").click()
    wait_for(driver, lambda d: runs(d) == before + 1)


def screenshot(driver: WebDriver, path: Path, name: str) -> Path:
    target = path / name
    assert driver.save_screenshot(str(target))
    keep = os.environ.get("CONTEXTFUSE_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(target, Path(keep) / name)
    return target


def _labels(driver: WebDriver) -> list[dict[str, str]]:
    labels: list[dict[str, str]] = driver.execute_script(
        "return [...document.querySelectorAll('svg#treemap rect.file')]"
        ".map((r) => ({label: r.dataset.label}));"
    )
    return labels


def test_the_treemap_areas_add_up_to_the_payloads_tokens(page: WebDriver, server: str) -> None:
    # An assembly touches the files it shows (their tier is part of the score), so the page's
    # request and the one below could differ in the preamble's omitted list: touch them first.
    assemble(server, 6000)
    open_explorer(page, server, project="click", q=QUERY, budget=6000)
    payload = assemble(server, 6000)
    cells = treemap_cells(page)
    whole = sum(c["area"] for c in cells)
    files = [c for c in cells if c["kind"] == "file"]
    overview = sum(c["area"] for c in cells if c["kind"] == "overview")
    assert sum(c["tokens"] for c in files) == payload["total_tokens"]
    assert sum(c["area"] for c in files) / whole * 6000 == pytest.approx(
        payload["total_tokens"], rel=1e-3
    )
    assert overview / whole * 6000 == pytest.approx(payload["preamble_tokens"], rel=1e-3)
    files_shown = {c["label"] for c in _labels(page)}
    files_sent = {f["provenance"]["resource_uri"].split("/", 3)[3] for f in payload["fragments"]}
    assert files_shown == files_sent
    assert_stayed_local(page)


def test_a_fragments_detail_shows_why_its_depth_and_its_numbered_source(
    page: WebDriver, server: str, tmp_path: Path
) -> None:
    open_explorer(page, server, project="click", q=QUERY, budget=6000)
    payload = assemble(server, 6000)
    first = payload["fragments"][0]
    why = payload["explanation"]["fragments"][0]
    page.find_elements(By.CSS_SELECTOR, "tr.fragment-row")[0].click()
    detail = wait_for(page, lambda d: d.find_element(By.CSS_SELECTOR, "tr.detail-row"))
    assert detail.find_element(By.CSS_SELECTOR, ".depth-reason").text == why["depth_reason"]
    strategies = [chip.text for chip in detail.find_elements(By.CSS_SELECTOR, ".chip")]
    assert strategies == [f"{name}: rank {why['ranks'][name]}" for name in why["strategies"]]
    numbers = [n.text for n in detail.find_elements(By.CSS_SELECTOR, "pre.source .ln")]
    first_line, last_line = first["provenance"]["location"][1:].split("-L")
    if first["detail_depth"] == 9:
        assert numbers[0] == first_line and numbers[-1] == last_line
    assert len(numbers) == len(first["content"].rstrip("\n").split("\n"))
    screenshot(page, tmp_path, "explorer.png")
    assert_stayed_local(page)


def test_a_budget_change_redraws_the_picture(page: WebDriver, server: str) -> None:
    open_explorer(page, server, project="click", q=QUERY, budget=6000)
    before = treemap_cells(page)
    change_budget(page, 2500)
    payload = assemble(server, 2500)
    after = treemap_cells(page)
    assert after != before
    whole = sum(c["area"] for c in after)
    files = sum(c["area"] for c in after if c["kind"] == "file")
    assert files / whole * 2500 == pytest.approx(payload["total_tokens"], rel=1e-3)
    assert page.find_element(By.ID, "used-tokens").get_attribute("data-tokens") == str(
        payload["total_tokens"] + payload["preamble_tokens"]
    )
    assert_stayed_local(page)


def test_two_payloads_side_by_side_show_what_each_added_and_dropped(
    page: WebDriver, server: str, tmp_path: Path
) -> None:
    open_explorer(page, server, project="click", q=QUERY, budget=6000)
    page.find_element(By.ID, "pin").click()
    change_budget(page, 2500)
    a, b = assemble(server, 6000), assemble(server, 2500)
    nodes_a = {f["uko_node"] for f in a["fragments"]}
    nodes_b = {f["uko_node"] for f in b["fragments"]}
    shown = {
        run: len(page.find_elements(By.CSS_SELECTOR, f"#compare-{run.lower()} ul.diff li"))
        for run in ("A", "B")
    }
    depth_a = {f["uko_node"]: f["detail_depth"] for f in a["fragments"]}
    changed = sum(
        1
        for f in b["fragments"]
        if depth_a.get(f["uko_node"], f["detail_depth"]) != f["detail_depth"]
    )
    assert shown == {"A": len(nodes_a - nodes_b) + changed, "B": len(nodes_b - nodes_a) + changed}
    assert treemap_cells(page, "#compare-a svg") and treemap_cells(page, "#compare-b svg")
    page.find_elements(By.CSS_SELECTOR, "tr.fragment-row")[0].click()
    assert screenshot(page, tmp_path, "explorer-compare.png").stat().st_size > 20_000
    assert_stayed_local(page)


def test_a_saved_payload_shows_the_reasons_and_depth_choosers_the_server_gives(
    page: WebDriver, server: str, tmp_path: Path
) -> None:
    payload = assemble(server, 2500)
    explanation = payload["explanation"]
    assert explanation["omitted"]  # 2,500 tokens leave some of click's code out
    explanation["fragments"][0]["depth_by"] = "DefaultDepthResolver"
    reasons = ["did not fit", "below the cut", "deduplicated", "redacted", "fragment cap"]
    for n, entry in enumerate(explanation["omitted"]):
        entry["reason"] = reasons[n % len(reasons)]
    saved = tmp_path / "payload.json"
    saved.write_text(json.dumps(payload))
    open_explorer(page, server, project="click", q=QUERY, budget=6000)
    page.find_element(By.ID, "load").send_keys(str(saved))
    wait_for(page, lambda d: runs(d) == 2)
    shown = page.find_element(By.ID, "by-reason").text
    assert all(r in shown for r in reasons[: len(explanation["omitted"])])
    page.find_elements(By.CSS_SELECTOR, "tr.fragment-row")[0].click()
    detail = wait_for(page, lambda d: d.find_element(By.CSS_SELECTOR, "tr.detail-row"))
    assert "depth chosen by\nDefaultDepthResolver" in detail.text
    assert (
        sum(c["tokens"] for c in treemap_cells(page) if c["kind"] == "file")
        == (payload["total_tokens"])
    )
    assert_stayed_local(page)


def test_a_file_that_is_not_a_payload_is_refused_in_one_line(
    page: WebDriver, server: str, tmp_path: Path
) -> None:
    saved = tmp_path / "notes.json"
    saved.write_text('{"hello": 1}')
    open_explorer(page, server, project="click", q=QUERY, budget=6000)
    page.find_element(By.ID, "load").send_keys(str(saved))
    status = wait_for(page, lambda d: d.find_element(By.CSS_SELECTOR, "#status.error"))
    assert (
        status.text == "Could not read notes.json: not a payload: it needs fragments and a budget"
    )
    assert runs(page) == 1
    assert_stayed_local(page)


def test_the_api_docs_render_the_protected_schema_offline(
    page: WebDriver, server: str, tmp_path: Path
) -> None:
    page.get("about:blank")
    page.get(server + "/docs")
    give_token(page, lambda d: d.find_elements(By.CSS_SELECTOR, ".opblock-summary-path"))
    operations = page.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")
    paths = {op.get_attribute("data-path") for op in operations}
    assert {"/v1/assemble", "/v1/compact", "/v1/strategies", "/healthz"} <= paths
    screenshot(page, tmp_path, "api-docs.png")
    assert_stayed_local(page)
