"""Loading tests/slack_corpus/: Slack's documented payload shapes as data (see its README)."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from tests.paths import REPO_ROOT

CORPUS = REPO_ROOT / "tests" / "slack_corpus"
CONTENT_TYPES = {"json": "application/json", "form": "application/x-www-form-urlencoded",
                 "form_payload": "application/x-www-form-urlencoded"}


@dataclass(frozen=True)
class Case:
    """One documented payload and what the app must do with it."""

    file: str
    name: str
    expect: str
    encoding: str
    body: dict[str, Any]
    session: str | None = None
    listener: str | None = None

    @property
    def id(self) -> str:
        return f"{self.file.removesuffix('.json')}: {self.name}"

    def filled(self, **values: str) -> dict[str, Any]:
        """The body with `{name}` placeholders replaced."""
        text = json.dumps(self.body, ensure_ascii=False)
        for key, value in values.items():
            text = text.replace("{" + key + "}", value)
        filled: dict[str, Any] = json.loads(text)
        return filled

    @property
    def content_type(self) -> str:
        return CONTENT_TYPES[self.encoding]


def encode(body: dict[str, Any], encoding: str) -> str:
    """The request body as Slack posts it."""
    if encoding == "json":
        return json.dumps(body, ensure_ascii=False)
    if encoding == "form":
        return urlencode(body)
    return urlencode({"payload": json.dumps(body, ensure_ascii=False)})


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CORPUS / name).read_text(encoding="utf-8"))
    return data


def documented() -> list[Case]:
    """Every documented case of every file but malformed.json."""
    cases: list[Case] = []
    for path in sorted(CORPUS.glob("*.json")):
        if path.name == "malformed.json":
            continue
        data = _load(path.name)
        assert data.get("references"), f"{path.name} names no reference"
        for raw in data["cases"]:
            cases.append(Case(file=path.name, name=raw["name"], expect=raw["expect"],
                              encoding=raw.get("encoding", data["encoding"]), body=raw["body"],
                              session=raw.get("session"), listener=raw.get("listener")))
    return cases


def malformed() -> list[Case]:
    """Documented cases with one field put outside the documented shape (expect: 400)."""
    by_file: dict[str, list[Case]] = {}
    for case in documented():
        by_file.setdefault(case.file, []).append(case)
    cases: list[Case] = []
    for raw in _load("malformed.json")["cases"]:
        source = by_file[raw["from"][0]][raw["from"][1]]
        body = copy.deepcopy(source.body)
        target: Any = body
        for key in raw["path"][:-1]:
            target = target[key]
        if raw.get("delete"):
            del target[raw["path"][-1]]
        else:
            target[raw["path"][-1]] = raw["value"]
        cases.append(Case(file="malformed.json", name=raw["name"], expect="400", encoding=source.encoding, body=body))
    return cases
