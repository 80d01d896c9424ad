"""Language detection and the choice of parser for a file."""

from __future__ import annotations

from contextfuse.kb import parse_text
from contextfuse.kb.parse_python import PARSER_ID as PYTHON_ID
from contextfuse.kb.parse_python import parse_python
from contextfuse.kb.parse_treesitter import LANGUAGES as TREE_SITTER_LANGUAGES
from contextfuse.kb.parse_treesitter import parser_for
from contextfuse.kb.parsed import ParsedFile
from contextfuse.kb.vendored import is_vendored

__all__ = ["TREE_SITTER_LANGUAGES", "detect", "parse", "planned_parser"]

_EXTENSIONS = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".rst": "rst",
    ".rest": "rst",
    ".txt": "text",
}
_CONFIG = frozenset(
    {".json", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".xml", ".properties", ".lock"}
)
_DOCUMENTS = frozenset({"markdown", "rst", "text"})
_PARSED = frozenset(_EXTENSIONS.values())


def detect(path: str) -> tuple[str, str]:
    """``(language, resource_type)`` of a file from its name.

    Unknown extensions give the extension itself as language (``html``, ``css``).
    """
    name = path.rsplit("/", 1)[-1].lower()
    dot = name.rfind(".")
    extension = name[dot:] if dot > 0 else ""
    language = _EXTENSIONS.get(extension)
    if language is not None:
        return language, "documentation" if language in _DOCUMENTS else "code"
    if extension in _CONFIG:
        return extension[1:], "config"
    language = extension[1:]
    # ``LICENSE.python`` is not Python: an unknown extension never names a parsed language.
    if not language or language in _PARSED:
        language = "text"
    return language, "text"


def planned_parser(language: str, path: str = "") -> str:
    """The parser a file of ``language`` at ``path`` gets now; a stored file with another one
    is parsed again."""
    if _whole(language, path):
        return parse_text.TEXT_ID
    if language == "python":
        return PYTHON_ID
    if language in TREE_SITTER_LANGUAGES:
        parser = parser_for(language)
        return parser.parser_id if parser is not None else parse_text.TEXT_ID
    if language == "markdown":
        return parse_text.MARKDOWN_ID
    if language == "rst":
        return parse_text.RST_ID
    return parse_text.TEXT_ID


def parse(text: str, lines: list[str], language: str, path: str = "") -> ParsedFile:
    """Parse a file with the best parser available; plain text when there is none or it fails.

    A vendored copy of a third-party library (``kb/vendored.py``) is one node, like text.
    """
    if _whole(language, path):
        plain = parse_text.parse_plain(text, lines, language)
        plain.note = "a copy of a third-party library: indexed whole, not split into symbols"
        return plain
    if language == "python":
        parsed = parse_python(text, lines)
        if parsed is not None:
            return parsed
        plain = parse_text.parse_plain(text, lines, language)
        plain.note = "does not parse as Python: indexed as plain text"
        return plain
    if language in TREE_SITTER_LANGUAGES:
        parser = parser_for(language)
        if parser is None:
            return parse_text.parse_plain(text, lines, language)
        try:
            return parser.parse(text, lines)
        except RecursionError:  # nesting deeper than the walk goes: the file is still indexed
            plain = parse_text.parse_plain(text, lines, language)
            plain.note = f"nested too deeply to parse as {language}: indexed as plain text"
            return plain
    if language == "markdown":
        return parse_text.parse_markdown(text, lines)
    if language == "rst" or (language == "text" and parse_text.looks_like_rst(lines)):
        return parse_text.parse_rst(text, lines)
    return parse_text.parse_plain(text, lines, language)


def _whole(language: str, path: str) -> bool:
    """A parsed language's file that is indexed whole all the same: a vendored library."""
    return (language == "python" or language in TREE_SITTER_LANGUAGES) and is_vendored(path)
