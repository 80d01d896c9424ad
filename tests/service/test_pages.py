"""The explorer and API docs pages: public, offline, and nothing beyond them without the token."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import httpx
import pytest

import contextfuse.server

STATIC = Path(contextfuse.server.__file__).parent / "static"
CORE = Path(__file__).parents[2] / "core"


@pytest.mark.parametrize("path", ["/", "/docs"])
def test_the_pages_answer_a_browser_without_the_token(guarded_service: str, path: str) -> None:
    response = httpx.get(guarded_service + path)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"


@pytest.mark.parametrize("path", ["/openapi.json", "/healthz", "/v1/strategies", "/redoc"])
def test_the_schema_and_the_data_stay_behind_the_token(guarded_service: str, path: str) -> None:
    assert httpx.get(guarded_service + path).status_code == 401


def test_the_schema_answers_with_the_token(guarded_service: str, service_token: str) -> None:
    headers = {"Authorization": f"Bearer {service_token}"}
    response = httpx.get(guarded_service + "/openapi.json", headers=headers)
    assert "/v1/assemble" in response.json()["paths"]


def test_without_a_token_a_page_asked_by_a_foreign_host_name_is_refused(service: str) -> None:
    response = httpx.get(service + "/", headers={"Host": "rebound.example"})
    assert response.status_code == 403


def test_without_a_token_a_page_asked_by_a_loopback_name_is_served(service: str) -> None:
    assert httpx.get(service + "/docs", headers={"Host": "localhost:1"}).status_code == 200


def test_a_post_to_a_page_path_reaches_the_guarded_api(guarded_service: str) -> None:
    assert httpx.post(guarded_service + "/", json={}).status_code == 401


def test_every_script_and_stylesheet_a_page_names_is_served_from_the_package(
    guarded_service: str,
) -> None:
    for page in ("/", "/docs"):
        html = httpx.get(guarded_service + page).text
        assets = re.findall(r'(?:src|href)="([^"]+)"', html)
        assert all(a.startswith("/") and not a.startswith("//") for a in assets), assets
        for asset in assets:
            assert httpx.get(guarded_service + asset).status_code == 200, asset


def test_the_docs_page_runs_the_vendored_swagger_ui(guarded_service: str) -> None:
    bundle = httpx.get(guarded_service + "/static/vendor/swagger-ui/swagger-ui-bundle.js")
    assert bundle.headers["content-type"] == "text/javascript; charset=utf-8"
    assert "SwaggerUIBundle" in bundle.text


def test_the_pages_may_load_nothing_from_another_origin(guarded_service: str) -> None:
    policy = httpx.get(guarded_service + "/").headers["content-security-policy"]
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == "'self'"
    assert directives["connect-src"] == "'self'"


@pytest.mark.parametrize(
    "path",
    [
        "/static/%2e%2e/app.py",
        "/static/..%2fpages.py",
        "/static/vendor/swagger-ui/LICENSE",
        "/static/missing.js",
        "/static/",
    ],
)
def test_nothing_but_a_packaged_asset_is_served(guarded_service: str, path: str) -> None:
    assert httpx.get(guarded_service + path).status_code == 404


def test_a_head_request_gets_the_headers_and_no_body(guarded_service: str) -> None:
    response = httpx.head(guarded_service + "/")
    assert response.status_code == 200
    assert int(response.headers["content-length"]) > 0
    assert response.content == b""


def test_the_vendored_swagger_ui_carries_its_license() -> None:
    vendor = STATIC / "vendor" / "swagger-ui"
    assert "Apache License" in (vendor / "LICENSE").read_text()
    assert "swagger-ui" in (vendor / "NOTICE").read_text()


@pytest.mark.slow
def test_every_asset_ships_in_the_core_wheel(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "-w",
            str(tmp_path),
            str(CORE),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("contextfuse_core-*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    assets = [p for p in STATIC.rglob("*") if p.is_file()]
    assert assets
    missing = [
        str(p)
        for p in assets
        if f"contextfuse/server/static/{p.relative_to(STATIC)}" not in shipped
    ]
    assert missing == []
