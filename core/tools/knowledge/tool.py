"""lookup_knowledge over a folder of Markdown runbooks, ranked with an in-memory SQLite FTS5 index (BM25)."""

from __future__ import annotations

import asyncio
import re
import sqlite3
import threading
from pathlib import Path
from typing import Any

from core.contracts.evidence import RawResult
from core.errors import ToolFailure
from core.tools.item_bounds import ItemBounds, bound_items
from core.tools.knowledge.args import NAME, KnowledgeArgs
from core.tools.knowledge.blocks import Block, split_blocks

# Words (letters/digits, Unicode) are the only thing taken from user text; each is quoted for FTS5,
# so no operator, column filter or unbalanced quote in the query can produce a syntax error.
_WORD = re.compile(r"\w+", re.UNICODE)
_MAX_TERMS = 32
# Heading matches weigh more than body matches (bm25 column weights: doc, heading, text).
_BM25 = "bm25(blocks, 0.0, 4.0, 1.0)"

Signature = tuple[tuple[str, int, int], ...]


def fts_query(text: str) -> str | None:
    """An FTS5 MATCH expression OR-ing the quoted words of the text; None when it has no words."""
    words: list[str] = []
    for word in _WORD.findall(text.lower()):
        if word not in words:
            words.append(word)
    if not words:
        return None
    return " OR ".join(f'"{w}"' for w in words[:_MAX_TERMS])


class KnowledgeIndex:
    """A lazily built, thread-safe FTS5 index of a folder's Markdown blocks, rebuilt when files change."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._signature: Signature | None = None

    def _files(self) -> list[Path]:
        if self._root.is_file():
            return [self._root]
        return sorted(p for p in self._root.rglob("*.md") if p.is_file())

    def _signature_of(self, files: list[Path]) -> Signature:
        sig = []
        for path in files:
            stat = path.stat()
            sig.append((str(path), stat.st_mtime_ns, stat.st_size))
        return tuple(sig)

    def _doc_name(self, path: Path) -> str:
        if self._root.is_file():
            return path.name
        return path.relative_to(self._root).as_posix()

    def _build(self, files: list[Path]) -> sqlite3.Connection:
        db = sqlite3.connect(":memory:", check_same_thread=False)
        db.execute("CREATE VIRTUAL TABLE blocks USING fts5(doc UNINDEXED, heading, text, tokenize='porter unicode61')")
        rows: list[Block] = []
        for path in files:
            rows.extend(split_blocks(self._doc_name(path), path.read_text(encoding="utf-8", errors="replace")))
        db.executemany("INSERT INTO blocks(doc, heading, text) VALUES (?, ?, ?)", [(b.doc, b.heading, b.text) for b in rows])
        return db

    def search(self, query: str, top_k: int) -> tuple[list[dict[str, Any]], int, int]:
        """Top blocks for the query, the number of matching blocks, and the number of indexed documents."""
        if not self._root.exists():
            raise ToolFailure("KNOWLEDGE_PATH_MISSING", f"The knowledge folder '{self._root.name}' does not exist on the server.")
        match = fts_query(query)
        with self._lock:
            files = self._files()
            try:
                signature = self._signature_of(files)
            except OSError as exc:  # a file vanished between listing and stat: treat the folder as changed
                raise ToolFailure("KNOWLEDGE_UNREADABLE", "The runbook folder changed during the lookup; retry.") from exc
            if self._db is None or signature != self._signature:
                if self._db is not None:
                    self._db.close()
                try:
                    self._db = self._build(files)
                except OSError as exc:
                    self._db, self._signature = None, None
                    raise ToolFailure("KNOWLEDGE_UNREADABLE", "A runbook file could not be read on the server.") from exc
                self._signature = signature
            if match is None:
                return [], 0, len(files)
            total = self._db.execute("SELECT count(*) FROM blocks WHERE blocks MATCH ?", (match,)).fetchone()[0]
            rows = self._db.execute(
                f"SELECT doc, heading, text, {_BM25} AS rank FROM blocks WHERE blocks MATCH ? ORDER BY rank LIMIT ?",
                (match, top_k),
            ).fetchall()
        items = [{"doc": d, "heading": h, "text": t, "score": round(-float(r), 4)} for d, h, t, r in rows]
        return items, int(total), len(files)

    def close(self) -> None:
        """Release the in-memory index."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
                self._signature = None


class KnowledgeTool:
    """The lookup_knowledge tool: BM25-ranked runbook sections."""

    name = NAME
    args_model: type[KnowledgeArgs] = KnowledgeArgs

    def __init__(self, path: Path, bounds: ItemBounds | None = None) -> None:
        self._index = KnowledgeIndex(Path(path))
        self._bounds = bounds or ItemBounds()

    async def run(self, args: KnowledgeArgs) -> RawResult:
        """Rank the runbook sections for the query and return the top_k (each block and the result byte-bounded)."""
        found, total, docs = await asyncio.to_thread(self._index.search, args.query, args.top_k)
        items, cut = bound_items(found, self._bounds)
        return RawResult(
            items=items,
            total_count=total,
            effective_arguments={"query": args.query, "top_k": args.top_k},
            notes={"documents_indexed": docs, "ranking": "sqlite fts5 bm25, higher score is better", **cut},
        )

    def close(self) -> None:
        """Release the index."""
        self._index.close()
