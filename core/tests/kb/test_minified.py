"""Minified and generated files are told from hand-written ones by their shape."""

from __future__ import annotations

from pathlib import Path

from contextfuse.kb.files import Candidate, Skip, read_file

HAND_WRITTEN_TS = (
    "/**\n * "
    + " ".join(["Options accepted by the router when a route is registered, see below."] * 20)
    + "\n */\n"
    + "".join(
        f"export function route{i}(path: string): string {{\n  return path;\n}}\n"
        for i in range(10)
    )
)
MINIFIED_JS = "!function(e){" + "var a=e.b||{};a.c=function(d){return d*2};" * 200 + "}(window);\n"


def _read(tmp_path: Path, name: str, text: str) -> object:
    (tmp_path / name).write_text(text, encoding="utf-8")
    return read_file(tmp_path, Candidate(name, len(text.encode()), 0), 1_000_000)


def test_a_hand_written_file_with_one_long_comment_line_is_indexed(tmp_path: Path) -> None:
    assert not isinstance(_read(tmp_path, "router.ts", HAND_WRITTEN_TS), Skip)


def test_a_minified_bundle_without_a_telling_name_is_skipped(tmp_path: Path) -> None:
    found = _read(tmp_path, "bundle.js", MINIFIED_JS)
    assert isinstance(found, Skip) and found.reason.startswith("minified")


def test_a_file_of_short_lines_is_never_taken_for_minified(tmp_path: Path) -> None:
    text = "x = 1\n" * 5000
    assert not isinstance(_read(tmp_path, "consts.py", text), Skip)
