"""Secret detectors measured on the same planted set: found, missed, false alarms, speed.

The planted set (``tests/fixtures/planted_secrets.py``) holds fake credentials of every kind
the index must keep out: shell ``export``s, a webhook URL, ``key=value`` connection strings,
compose and Kubernetes env entries, ``.envrc``/``.env`` files, cloud and service tokens,
a private key, a JWT, a URL password. A value counts as found when the detector's output no
longer contains it (contextfuse) or when a reported secret covers it (detect-secrets).

False alarms are counted on real code nobody here wrote: the files of a folder given with
``--clean`` (e.g. an unpacked PyPI sdist), where every redaction or report is a false alarm
unless it is a real secret (the report prints them to check by eye).

    pip install detect-secrets
    pip download --no-deps --no-binary :all: flask==3.0.3 -d /tmp/sd
    tar xzf /tmp/sd/flask-3.0.3.tar.gz -C /tmp/sd
    python bench/bench_secrets.py --clean /tmp/sd/flask-3.0.3
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from contextfuse.kb import secrets

_FIXTURE = Path(__file__).parents[1] / "tests" / "fixtures" / "planted_secrets.py"


def _planted() -> Any:
    spec = importlib.util.spec_from_file_location("planted_secrets", _FIXTURE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def contextfuse_found(path: str, text: str) -> set[str]:
    """Values no longer in the text after redaction, or all of them for a skipped file."""
    if secrets.secret_file_reason(path):
        return {"<whole file>"}
    return {"<redacted>"} if secrets.redact(text, path).total else set()


def _covers(reported: str, value: str) -> bool:
    """A report covers a planted value when it holds it (or a long part of it)."""
    return bool(reported) and (value in reported or (len(reported) >= 8 and reported in value))


def detect_secrets_reports(path: Path) -> list[Any]:
    from detect_secrets.core.scan import scan_file
    from detect_secrets.settings import default_settings

    with default_settings():
        return list(scan_file(str(path)))


def measure_planted(planted: Any) -> None:
    ours = theirs = total = 0
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for rel, (content, values) in {**planted.PLANTED, **planted.HISTORY_ONLY}.items():
            target = Path(tmp) / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
            skipped = secrets.secret_file_reason(rel) is not None
            redacted = content if skipped else secrets.redact(content, rel).text
            reports = detect_secrets_reports(target)
            reported = " ".join(str(r.secret_value or "") for r in reports)
            for value in values:
                total += 1
                mine = skipped or value not in redacted
                other = any(_covers(str(r.secret_value or ""), value) for r in reports)
                ours += mine
                theirs += other
                rows.append((rel, value[:24], mine, other, reported[:40]))
    for rel, value, mine, other, _ in rows:
        print(
            f"{rel:24} {value:26} contextfuse={'found' if mine else 'MISSED':6} "
            f"detect-secrets={'found' if other else 'MISSED'}"
        )
    print(f"planted values: {total}; contextfuse found {ours}; detect-secrets found {theirs}")


def measure_clean(root: Path) -> None:
    files = [p for p in root.rglob("*") if p.is_file() and p.stat().st_size < 1_000_000]
    texts = {}
    for p in files:
        try:
            texts[p] = p.read_text("utf-8")
        except (UnicodeDecodeError, OSError):
            continue
    started = time.perf_counter()
    ours = []
    for p, text in texts.items():
        rel = p.relative_to(root).as_posix()
        found = secrets.redact(text, rel)
        if found.total:
            ours.append((rel, dict(found.counts)))
    ours_s = time.perf_counter() - started
    started = time.perf_counter()
    theirs = []
    for p in texts:
        for report in detect_secrets_reports(p):
            theirs.append(
                (p.relative_to(root).as_posix(), report.type, str(report.secret_value)[:30])
            )
    theirs_s = time.perf_counter() - started
    print(f"clean corpus: {len(texts)} text files, {sum(map(len, texts.values())):,} characters")
    print(f"contextfuse: {len(ours)} redactions in {ours_s:.2f} s")
    for item in ours[:20]:
        print("   ", item)
    ratio = theirs_s / max(ours_s, 1e-9)
    print(f"detect-secrets: {len(theirs)} reports in {theirs_s:.2f} s ({ratio:.0f}x the time)")
    for item in theirs[:20]:
        print("   ", item)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clean", type=Path, help="a folder of real code with no secrets")
    args = parser.parse_args()
    measure_planted(_planted())
    if args.clean:
        measure_clean(args.clean)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
