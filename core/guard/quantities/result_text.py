"""The lazy search of a call's results: a claim is looked for where its written forms occur in the results' indented
JSON text (one str.find per form), and only the leaf at each occurrence is read. It only ever says yes where the
call's full index (core/guard/quantities/evidence.py) would, so the answer never depends on which path ran.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson

from core.guard.quantities.exact import Check
from core.guard.quantities.extract import extract_at
from core.guard.quantities.leaves import RESULT_KEYS, SKIPPED_FIELDS, is_bare_number, leaf_quantities
from core.guard.quantities.model import Origin, Shown
from core.tools.contract import FieldKind, QuantityKinds

MAX_OCCURRENCES = 48
"""Past this many occurrences of one written form, indexing the whole call is cheaper than reading leaves."""

_LINE_KEY = re.compile(r'\s*"((?:[^"\\]|\\.)*)": ')

Accept = Callable[[Shown], bool]


def _json_key(raw: str) -> str:
    """A key as written in the indented JSON text (between its quotes), decoded: orjson escapes only quotes,
    backslashes and control characters, so a key without a backslash is written as it is."""
    return raw if "\\" not in raw else str(orjson.loads(f'"{raw}"'))


def _text_of(projection: Mapping[str, Any], items_field: str | None = None) -> str:
    results = {k: v for k, v in projection.items() if k in RESULT_KEYS or k == items_field}
    try:
        return orjson.dumps(results, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS, default=str).decode()
    except TypeError:  # an integer beyond 64 bits, which orjson refuses: json writes the same layout, one value a line
        return json.dumps(results, indent=2, ensure_ascii=False, default=str)


class ResultText:
    """A call's results as indented JSON (one value per line, built on first use), searched by written form."""

    def __init__(self, tool_call_id: str, projection: Mapping[str, Any], items_field: str | None,
                 columns: Sequence[Any], kinds: QuantityKinds) -> None:
        self.tool_call_id = tool_call_id
        self.projection = projection
        self.items_field = items_field
        self.columns = columns
        self.kinds = kinds
        self._text: str | None = None
        self._leaves: dict[int, tuple[Shown, ...]] = {}
        """Line start -> the quantities of the (short) leaf on that line."""

    @property
    def text(self) -> str:
        """The results as indented JSON, built on first use."""
        if self._text is None:
            self._text = _text_of(self.projection, self.items_field)
        return self._text

    def find(self, forms: Sequence[str], accept: Accept, standalone: bool, too_many: Callable[[], Shown | None]) -> Shown | None:
        """A result quantity accepted by `accept` at an occurrence of one of the written forms, else None.

        None means only "not found this way": the caller then asks the window and the full index; past
        MAX_OCCURRENCES occurrences of one form the answer is `too_many()` (the full index). `standalone`: the claim
        is a plain number, so occurrences inside a time, date, version or id (after ':', '-', '.', a letter; before
        ':', '-', '.' and a digit) are skipped without reading their leaf (they can never show a plain number)."""
        text = self.text
        size = len(text)
        for form in forms:
            if not form:
                continue
            at, seen = text.find(form), 0
            while at >= 0:
                end = at + len(form)
                before = text[at - 1] if at > 0 else " "
                after = text[end] if end < size else " "
                skip = before.isdigit() or after.isdigit()
                if standalone and not skip:
                    skip = before in ":-.T_" or before.isalpha() or (
                        after in ":-.," and end + 1 < size and text[end + 1].isdigit()
                    )
                if not skip:
                    seen += 1
                    if seen > MAX_OCCURRENCES:
                        return too_many()
                    for shown in self._leaf_at(at):
                        if accept(shown):
                            return shown
                at = text.find(form, at + 1)
        return None

    def find_exact(self, forms: Sequence[str], check: Check) -> bool:
        """Whether a result value writes one of the tokens (see core/guard/quantities/exact.py)."""
        text = self.text
        for form in forms:
            at = text.find(form)
            while at >= 0:
                if check(text, at, at + len(form)):
                    line = text.rfind("\n", 0, at) + 1
                    key = _LINE_KEY.match(text, line)
                    in_value = key is None or key.end() <= at  # in a value, not a key
                    if in_value and (key is None or _json_key(key.group(1)) not in SKIPPED_FIELDS):
                        return True
                at = text.find(form, at + 1)
        return False

    def _leaf_at(self, at: int) -> tuple[Shown, ...]:
        """The quantities of the leaf at text position `at` that may cover it (a long string: just the token there)."""
        text = self.text
        start = text.rfind("\n", 0, at) + 1
        kept = self._leaves.get(start)
        if kept is not None:
            return kept
        end = text.find("\n", at)
        line = text[start : end if end >= 0 else len(text)]
        key_match = _LINE_KEY.match(line)
        if key_match is not None:
            key, raw_at = _json_key(key_match.group(1)), key_match.end()
            if at - start < raw_at:  # the form occurs in the key, not the value
                return ()
        else:
            key, raw_at = self._column_of(start, line), len(line) - len(line.lstrip())
        raw = line[raw_at:].rstrip().rstrip(",")
        if not raw or raw[0] in "{[" or key in SKIPPED_FIELDS:
            return ()
        words = self.kinds.of(key).kind is FieldKind.WORDS
        inner = raw[1:-1]
        if raw[0] == '"' and "\\" not in raw and not words and len(inner) > 35 and not is_bare_number(inner.strip()):
            # a message: read only the token at the occurrence (extract_at tokenises exactly like extract)
            found = extract_at(inner, at - (start + raw_at + 1))
            return tuple(Shown(q, Origin.RESULT, self.tool_call_id, -1, key) for q in found)
        value = orjson.loads(raw)
        if isinstance(value, float) and raw.lstrip("-").isdigit():
            value = int(raw)  # orjson reads an integer beyond 64 bits as a float; the leaf holds the int
        shown = tuple(Shown(q, Origin.RESULT, self.tool_call_id, -1, key) for q in leaf_quantities(value, key, words))
        self._leaves[start] = shown
        return shown

    def _column_of(self, line_start: int, line: str) -> str:
        """The column name of a row cell (a bare array element), from its position in the row."""
        text, indent, position = self.text, len(line) - len(line.lstrip()), 0
        cursor = line_start
        while cursor > 0:
            prev_start = text.rfind("\n", 0, cursor - 1) + 1
            prev = text[prev_start : cursor - 1]
            prev_indent = len(prev) - len(prev.lstrip())
            if prev_indent < indent:
                opener = _LINE_KEY.match(prev)
                if opener is not None:  # a list inside a field: the field names it
                    return _json_key(opener.group(1))
                break
            if prev_indent == indent:
                position += 1
            cursor = prev_start
        if position < len(self.columns):
            return str(self.columns[position])
        return ""
