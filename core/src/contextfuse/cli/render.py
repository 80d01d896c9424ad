"""Markdown rendering of a payload for people."""

from __future__ import annotations

from pathlib import PurePosixPath

from contextfuse.models import ContextFragment, ContextPayload

DEPTH_NAMES = {9: "full source", 4: "signatures", 2: "outline", 0: "listing"}

_FENCE_LANG = {
    ".py": "python",
    ".js": "javascript",
    ".ts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".md": "markdown",
    ".rst": "rst",
    ".toml": "toml",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".sh": "bash",
    ".c": "c",
    ".h": "c",
}


def display_path(fragment: ContextFragment) -> str:
    """The path part of a fragment's resource URI (``project://p/a/b.py`` -> ``a/b.py``)."""
    uri = fragment.provenance.resource_uri.split("#", 1)[0]
    if uri.startswith("project://"):
        return uri[len("project://") :].split("/", 1)[-1]
    return uri


def _fence(content: str) -> str:
    longest = run = 0
    for ch in content:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def render_markdown(payload: ContextPayload) -> str:
    """The preamble, then each fragment with its path, line range and depth."""
    out: list[str] = []
    if payload.preamble:
        out += [payload.preamble.rstrip(), ""]
    for fragment in payload.fragments:
        path = display_path(fragment)
        symbol = fragment.uko_node.split("#", 1)[1] if "#" in fragment.uko_node else ""
        where = f" {fragment.provenance.location}" if fragment.provenance.location else ""
        depth = DEPTH_NAMES.get(fragment.detail_depth, f"depth {fragment.detail_depth}")
        title = f"{path}{where}" + (f" `{symbol}`" if symbol else "")
        out.append(f"### {title} ({depth}, {fragment.token_count} tokens)")
        fence = _fence(fragment.content)
        lang = _FENCE_LANG.get(PurePosixPath(path).suffix, "")
        out += [f"{fence}{lang}", fragment.content.rstrip("\n"), fence, ""]
    out.append(
        f"_{len(payload.fragments)} fragments, {payload.total_tokens + payload.preamble_tokens}"
        f" of {payload.budget.available_tokens} tokens; strategies: "
        f"{', '.join(payload.strategies_used) or '-'}; hash {payload.context_hash[:16]}_"
    )
    return "\n".join(out) + "\n"
