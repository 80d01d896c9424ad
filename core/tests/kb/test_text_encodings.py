"""Files in other encodings than UTF-8 are indexed as the text they hold: by the encoding
they declare (coding cookie, XML, HTML, CSS), as UTF-16/UTF-32 by their byte-order mark or
their bytes; binary files stay skipped."""

from __future__ import annotations

import codecs
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from contextfuse.backends import BackendSet
from contextfuse.kb import IndexStats
from contextfuse.tokenizer import default_tokenizer

P = "project://enc/"

LATIN1_PY = (
    "# -*- coding: latin-1 -*-\n"
    "def café_total(prix):\n"
    '    """Le prix du café, taxes comprises: 5 € près."""\n'
    "    return prix * 1.2\n"
)
FILES: dict[str, bytes] = {
    "latin1.py": LATIN1_PY.replace("€", "E").encode("latin-1"),
    "legacy.rb": "# encoding: iso-8859-15\nPRICE = 'Größe kostet 5 €'\n".encode("iso-8859-15"),
    "page.html": (
        '<!DOCTYPE html>\n<html><head><meta charset="windows-1252"></head>\n'
        "<body><p>Crème brûlée für 5 €</p></body></html>\n"
    ).encode("cp1252"),
    "data.xml": (
        '<?xml version="1.0" encoding="ISO-8859-1"?>\n<menu><item>Smørrebrød</item></menu>\n'
    ).encode("latin-1"),
    "style.css": '@charset "ISO-8859-15";\n.price::after { content: "€ Zürich"; }\n'.encode(
        "iso-8859-15"
    ),
    "notes16.txt": codecs.BOM_UTF16_LE
    + "Notizen über Ångström\nzweite Zeile\n".encode("utf-16-le"),
    "notes16be.txt": "Big-endian Übung ohne Marke\nnoch eine Zeile\n".encode("utf-16-be"),
    "notes32.txt": codecs.BOM_UTF32_BE + "Quadruple größe émoji 🎉\n".encode("utf-32-be"),
    "wrong_cookie.py": b"# coding: no-such-codec\nNAME = 'caf\xc3\xa9 ok'\n",
    "lying_cookie.py": b"# coding: ascii\nNAME = 'caf\xc3\xa9 utf8'\n",
    "numbers.dat": struct.pack("<600h", *range(600)),
    "logo.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, IndexStats]:
    from contextfuse.kb import index

    root = tmp_path_factory.mktemp("encodings") / "enc"
    root.mkdir()
    for name, data in FILES.items():
        (root / name).write_bytes(data)
    return root, index(root, contributors=[])


@pytest.fixture(scope="module")
def kb(built: tuple[Path, IndexStats]) -> Iterator[BackendSet]:
    from contextfuse.kb import open_backends

    backends = open_backends(built[0])
    yield backends
    backends.nodes.close()


def whole(kb: BackendSet, path: str) -> str:
    uri = P + path
    return kb.nodes.get_renderings([uri], [9])[uri][9].content


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("latin1.py", "Le prix du café, taxes comprises"),
        ("legacy.rb", "Größe kostet 5 €"),
        ("page.html", "Crème brûlée für 5 €"),
        ("data.xml", "<item>Smørrebrød</item>"),
        ("style.css", 'content: "€ Zürich"'),
        ("notes16.txt", "Notizen über Ångström\nzweite Zeile"),
        ("notes16be.txt", "Big-endian Übung ohne Marke"),
        ("notes32.txt", "Quadruple größe émoji 🎉"),
    ],
)
def test_a_file_is_indexed_as_the_text_its_encoding_gives(
    kb: BackendSet, path: str, expected: str
) -> None:
    text = whole(kb, path)
    assert expected in text
    assert "\ufffd" not in text and "\x00" not in text


def test_a_byte_order_mark_is_not_part_of_the_text(kb: BackendSet) -> None:
    assert whole(kb, "notes16.txt").startswith("Notizen")
    assert whole(kb, "notes32.txt").startswith("Quadruple")


def test_symbols_and_their_renderings_are_of_the_decoded_text(kb: BackendSet) -> None:
    uri = P + "latin1.py#café_total"
    renderings = kb.nodes.get_renderings([uri])[uri]
    assert "def café_total(prix):" in renderings[9].content
    assert "Le prix du café" in renderings[4].content  # signatures with the docstring
    tokenizer = default_tokenizer()
    for rendering in renderings.values():
        assert rendering.token_count == tokenizer.count(rendering.content)


def test_decoded_words_are_searchable(kb: BackendSet) -> None:
    assert kb.text is not None
    assert P + "notes16.txt" in {hit.uri for hit in kb.text.search("Notizen", limit=5)}
    assert P + "notes32.txt" in {hit.uri for hit in kb.text.search("Quadruple", limit=5)}


def test_an_unusable_or_wrong_declaration_falls_back_to_utf8(kb: BackendSet) -> None:
    assert "NAME = 'café ok'" in whole(kb, "wrong_cookie.py")
    assert "NAME = 'café utf8'" in whole(kb, "lying_cookie.py")


def test_binary_files_stay_skipped(built: tuple[Path, IndexStats]) -> None:
    reasons = dict(built[1].skipped_files)
    assert reasons["logo.png"] == "binary"
    assert reasons["numbers.dat"] == "binary"
