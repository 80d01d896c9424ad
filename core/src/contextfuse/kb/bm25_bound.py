"""The best rows of an OR query of common terms without scoring every row: FTS5's ``bm25()``
reproduced for the rows that can rank first.

A node holding one query term only scores less than that term's bound, ``idf * (k1 + 1)``
(the term-frequency factor of BM25 is below ``k1 + 1``). So when the terms are common, the
nodes that hold a rare term or at least two of the common ones (a few thousand, against
every node holding any term: 100,000 and more in a large index) are scored, and those
scoring at least the largest bound of a common term are exactly the best rows, in order:
no other node can reach them, nor tie with them.

The scores are computed as FTS5's ``fts5Bm25Function`` computes them (``ext/fts5/
fts5_aux.c``), from the same figures, with the same operations in the same order, so they are
the same doubles: the row count and token total of the index's averages record, each term's
document count, each row's token count (``fts_docsize``) and its instances per column
(``fts5vocab`` of type ``instance``). Terms that are not plain ASCII words (where the
tokenizer might fold them) and queries that leave most rows as candidates are left to FTS5.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections.abc import Sequence
from itertools import combinations

import numpy as np
import numpy.typing as npt

__all__ = ["bounded_best"]

#: FTS5's bm25 constants.
_K1 = 1.2
_B = 0.75
#: A term in at most this share of the rows is rare: every row holding it is a candidate.
_RARE_SHARE = 0.005
#: Candidates beyond this share of the rows the terms hold: scoring them all costs as much.
_MOST = 0.25
#: What a term is to ``unicode61 tokenchars '_'`` unchanged: one token, itself.
_PLAIN = re.compile(r"[a-z0-9_]+")
#: fts5vocab over the instances of the search table, on the reading connection's temp schema.
_INSTANCES = "temp.fts_instances"


def bounded_best(
    conn: sqlite3.Connection,
    terms: Sequence[str],
    columns: Sequence[str],
    weights: Sequence[float],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]] | None:
    """The best rows of ``"t1" OR "t2" ...`` (not every matching row) as ``(ids, ranks)``,
    ranks being ``bm25(fts, *weights)`` of the table's ``columns`` (lower is better), sorted
    by rank then id. None when this query is better left to FTS5."""
    if len(terms) < 2 or len(set(terms)) != len(terms):
        return None
    if not all(_PLAIN.fullmatch(term) for term in terms):
        return None
    rows, total = _averages(conn, len(columns))
    docs = dict(
        conn.execute(
            f"SELECT term, doc FROM fts_vocab WHERE term IN ({','.join('?' * len(terms))})",
            list(terms),
        ).fetchall()
    )
    hits = [int(docs.get(term, 0)) for term in terms]
    idf = [_idf(rows, hit) for hit in hits]
    bound = [value * (_K1 + 1.0) * (1 + 1e-9) for value in idf]  # above any rounding
    rare = [t for t, hit in zip(terms, hits, strict=True) if 0 < hit <= rows * _RARE_SHARE]
    common = [i for i, hit in enumerate(hits) if hit > rows * _RARE_SHARE]
    if not common:
        return None  # every row is a candidate
    parts = [f'"{t}"' for t in rare]
    parts += [f'("{terms[a]}" AND "{terms[b]}")' for a, b in combinations(common, 2)]
    floor = max(bound[i] for i in common)
    if not parts:
        return None
    candidates_match = " OR ".join(parts)
    (count,) = conn.execute(
        "SELECT count(*) FROM fts WHERE fts MATCH ?", (candidates_match,)
    ).fetchone()
    if count > _MOST * sum(hits):
        return None
    ids = np.array(
        [
            r[0]
            for r in conn.execute("SELECT rowid FROM fts WHERE fts MATCH ?", (candidates_match,))
        ],
        dtype=np.int64,
    )
    if not len(ids):
        return None
    ranks = _ranks(conn, ids, terms, dict(zip(columns, weights, strict=True)), idf, rows, total)
    order = np.lexsort((ids, ranks))
    ids, ranks = ids[order], ranks[order]
    # Rows scoring at least the floor are the best rows; below it another row may come in.
    kept = int(np.searchsorted(ranks, -floor, side="right"))
    return ids[:kept], np.ascontiguousarray(ranks[:kept])


def _ranks(
    conn: sqlite3.Connection,
    ids: npt.NDArray[np.int64],
    terms: Sequence[str],
    weights: dict[str, float],
    idf: Sequence[float],
    rows: int,
    total: int,
) -> npt.NDArray[np.float64]:
    """``bm25()`` of each row of ``ids``, as fts5Bm25Function computes it."""
    listed = json.dumps(ids.tolist())
    position = {int(node): i for i, node in enumerate(ids.tolist())}
    sizes = np.zeros(len(ids), dtype=np.float64)
    for node, blob in conn.execute(
        "SELECT id, sz FROM fts_docsize WHERE id IN (SELECT value FROM json_each(?))", (listed,)
    ):
        sizes[position[node]] = float(sum(_varints(blob)))
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {_INSTANCES} USING fts5vocab(main, fts, instance)"
    )
    weight_of = " ".join(f"WHEN '{name}' THEN {weight!r}" for name, weight in weights.items())
    avgdl = float(total) / float(rows)
    # k1 * (1 - b + b * D / avgdl), evaluated as C evaluates it.
    norm = _K1 * ((1 - _B) + (_B * sizes) / avgdl)
    score = np.zeros(len(ids), dtype=np.float64)
    for term, term_idf in zip(terms, idf, strict=True):
        freq = np.zeros(len(ids), dtype=np.float64)
        for node, weighted in conn.execute(
            f"SELECT doc, sum(CASE col {weight_of} ELSE 1.0 END) FROM {_INSTANCES}"
            " WHERE term = ? AND doc IN (SELECT value FROM json_each(?)) GROUP BY doc",
            (term, listed),
        ):
            freq[position[node]] = weighted
        score = score + term_idf * ((freq * (_K1 + 1.0)) / (freq + norm))
    return -1.0 * score


def _idf(rows: int, hits: int) -> float:
    value = math.log((rows - hits + 0.5) / (hits + 0.5))
    return value if value > 0.0 else 1e-6


def _averages(conn: sqlite3.Connection, columns: int) -> tuple[int, int]:
    """FTS5's row count and token total (of every column), from its averages record."""
    row = conn.execute("SELECT block FROM fts_data WHERE id = 1").fetchone()
    values = _varints(row[0]) if row else []
    if len(values) < 1 + columns:
        raise sqlite3.DatabaseError("the full-text index has no averages record")
    return values[0], sum(values[1 : 1 + columns])


def _varints(blob: bytes) -> list[int]:
    """SQLite varints (big-endian groups of 7 bits, a ninth byte of 8), as FTS5 writes them."""
    values: list[int] = []
    i, size = 0, len(blob)
    while i < size:
        value = 0
        for n in range(9):
            byte = blob[i]
            i += 1
            if n == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        values.append(value)
    return values
