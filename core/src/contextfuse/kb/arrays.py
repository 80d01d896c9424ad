"""Arrays derived from the index, kept in files that every process maps instead of rebuilding.

The vector matrix and the graph's edge arrays are built from SQLite rows: 0.1-0.3 s for a
project of 20,000 nodes, paid again by every command-line process. Here each set of arrays
is written once, raw, to ``<index dir>/arrays/``; a later process maps the file (no copy: the
operating system's page cache shares its pages between processes) in well under a
millisecond.

A file is named for the index's content generation (``contextfuse.kb.generation``), read in
the same read snapshot as the rows it was built from, so it describes exactly one state of
the index: once nodes, edges or vectors change, the index has a new generation and the file
is never read again (the next writer of that set of arrays deletes it). A file that is not
complete (a process killed mid-write leaves only its temporary file) or not ours is rebuilt.
An index directory that cannot be written only costs the speed-up.

File layout: ``MAGIC``, the header's length (8 bytes, little-endian), the header (JSON: each
array's dtype, shape and offset), then the arrays, each at a 64-byte aligned offset.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import mmap
import os
import sqlite3
import struct
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from contextfuse.kb import generation
from contextfuse.kb.store import Database

__all__ = ["ARRAYS_DIR", "PackedStrings", "load_arrays", "pack_strings"]

#: Folder of the index directory holding the files.
ARRAYS_DIR = "arrays"
MAGIC = b"CFARRAY1"
_ALIGN = 64
_ABANDONED_S = 600.0  # a temporary file this old belongs to no running writer

Arrays = dict[str, npt.NDArray[Any]]
Builder = Callable[[sqlite3.Connection], Mapping[str, npt.NDArray[Any]]]


class PackedStrings(Sequence[str]):
    """Strings stored as one UTF-8 buffer and their end offsets; decoded one at a time.

    The vector search needs the URIs of its best rows only: decoding 20,000 URIs for each
    process would cost more than mapping the matrix.
    """

    def __init__(self, data: npt.NDArray[np.uint8], ends: npt.NDArray[np.int64]) -> None:
        self._data = memoryview(data)  # type: ignore[arg-type]  # numpy arrays are buffers
        self._ends = ends

    def __len__(self) -> int:
        return len(self._ends)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        i = int(index)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(index)
        # Offsets are read from the mapped array as asked: a list of every offset would cost
        # a fresh process more (600,000 strings: tens of milliseconds) than its few lookups.
        start = int(self._ends[i - 1]) if i else 0
        return str(self._data[start : int(self._ends[i])], "utf-8", "surrogateescape")

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(len(self)))

    def take(self, indices: Sequence[int] | npt.NDArray[np.integer[Any]]) -> list[str]:
        """The strings at ``indices``, their offsets read in one pass (a search's hundreds of
        rows: one by one, the offsets' conversions cost more than the decoding)."""
        rows = np.asarray(indices, dtype=np.int64).reshape(-1)
        size = len(self)
        if rows.size and not (-size <= int(rows.min()) and int(rows.max()) < size):
            raise IndexError(f"indices out of range for {size} strings")
        rows = np.where(rows < 0, rows + size, rows)
        stops = self._ends[rows]
        starts = np.where(rows > 0, self._ends[rows - 1], 0)  # rows - 1 of row 0 is unused
        data = self._data
        return [
            str(data[start:stop], "utf-8", "surrogateescape")
            for start, stop in zip(starts.tolist(), stops.tolist(), strict=True)
        ]


def pack_strings(values: Sequence[str]) -> Arrays:
    """``{"data", "ends"}`` arrays that :class:`PackedStrings` reads back."""
    encoded = [v.encode("utf-8", "surrogateescape") for v in values]
    ends = np.cumsum([len(b) for b in encoded], dtype=np.int64)
    return {"data": np.frombuffer(b"".join(encoded), dtype=np.uint8), "ends": ends}


def load_arrays(db: Database, name: str, build: Builder) -> tuple[str, Arrays]:
    """The arrays called ``name`` for the index as it is now, and the generation they match.

    Mapped from their file when one exists for the current generation; else built with
    ``build(conn)`` inside one read snapshot and written for the next process.
    """
    with db.snapshot() as conn:
        key = generation.cache_key(conn)
        if generation.current(conn) is None:  # an old index: no file can be trusted
            return key, dict(build(conn))
        directory = db.path.parent / ARRAYS_DIR
        path = directory / f"{_slug(name)}.{key}.arr"
        mapped = _read(path)
        if mapped is not None:
            return key, mapped
        arrays = dict(build(conn))
        _write(directory, path, arrays)
        return key, arrays


def _slug(name: str) -> str:
    """A file-name-safe, stable stand-in for ``name`` (e.g. a model name with slashes)."""
    readable = "".join(c if c.isalnum() else "-" for c in name)[:40]
    return f"{readable}-{hashlib.sha256(name.encode()).hexdigest()[:12]}"


def _read(path: Path) -> Arrays | None:
    try:
        with open(path, "rb") as fh:
            mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):  # missing, or empty
        return None
    try:
        if mapped[: len(MAGIC)] != MAGIC:
            return None
        (length,) = struct.unpack_from("<Q", mapped, len(MAGIC))
        start = len(MAGIC) + 8
        header = json.loads(bytes(mapped[start : start + length]))
        base = _aligned(start + length)
        arrays: Arrays = {}
        for key, spec in header.items():
            dtype = np.dtype(spec["dtype"])
            shape = tuple(int(n) for n in spec["shape"])
            count = int(np.prod(shape, dtype=np.int64))
            offset = base + int(spec["offset"])
            if offset + count * dtype.itemsize > len(mapped):
                return None
            array = np.frombuffer(mapped, dtype=dtype, count=count, offset=offset)
            arrays[key] = array.reshape(shape)
        return arrays
    except (ValueError, KeyError, TypeError, struct.error):
        return None


def _write(directory: Path, path: Path, arrays: Mapping[str, npt.NDArray[Any]]) -> None:
    header: dict[str, dict[str, Any]] = {}
    offset = 0  # from the first aligned byte after the header
    for key, array in arrays.items():
        header[key] = {"dtype": array.dtype.str, "shape": list(array.shape), "offset": offset}
        offset = _aligned(offset + array.nbytes)
    text = json.dumps(header).encode()
    base = _aligned(len(MAGIC) + 8 + len(text))
    tmp = directory / f".{path.name}.{os.getpid()}.tmp"
    try:
        directory.mkdir(exist_ok=True)
        with open(tmp, "wb") as fh:
            fh.write(MAGIC + struct.pack("<Q", len(text)) + text)
            for key, array in arrays.items():
                fh.seek(base + header[key]["offset"])
                fh.write(np.ascontiguousarray(array).tobytes())
            fh.truncate(base + offset)
            fh.flush()
            os.fsync(fh.fileno())  # complete on disk before it gets the name readers look for
        os.replace(tmp, path)
    except OSError:  # a read-only index directory, a full disk: only the speed-up is lost
        with contextlib.suppress(OSError):
            tmp.unlink()
        return
    _remove_stale(directory, path)


def _aligned(offset: int) -> int:
    return -(-offset // _ALIGN) * _ALIGN


def _remove_stale(directory: Path, kept: Path) -> None:
    """Delete every array file of another generation, whatever its name (a set no longer
    asked for, such as a removed model's vectors, would otherwise stay for good; a process
    mapping one keeps its pages), and temporary files that a killed writer left behind."""
    generation = kept.name.split(".")[1]
    abandoned = time.time() - _ABANDONED_S
    with contextlib.suppress(OSError):
        for entry in os.scandir(directory):
            parts = entry.name.split(".")
            old = len(parts) == 3 and parts[2] == "arr" and parts[1] != generation
            if old or (entry.name.endswith(".tmp") and _mtime(entry) < abandoned):
                with contextlib.suppress(OSError):
                    os.remove(entry.path)


def _mtime(entry: os.DirEntry[str]) -> float:
    try:
        return entry.stat().st_mtime
    except OSError:
        return float("inf")
