"""PromptLibrary: the one loader of the system prompts in prompts/*.md, with a content hash per prompt."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

PROMPT_TITLES: Mapping[str, str] = MappingProxyType({
    "diagnosis_agent": "# Diagnosis Agent",
    "semantic_guard": "# Semantic Guard",
    "evidence_repair": "# Evidence Repair",
    "intent_router": "# Intent Router",
    "knowledge_answer": "# Knowledge Answer",
})


class PromptError(Exception):
    """A prompt file is missing or does not start with its title."""


class PromptLibrary:
    """Reads every prompt once; `get(name)` gives its text and `hashes()` the sha256 of each for the run record."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self._texts: dict[str, str] = {}
        for name, title in PROMPT_TITLES.items():
            path = self.directory / f"{name}.md"
            if not path.is_file():
                raise PromptError(f"prompt file missing: {path}")
            text = path.read_text(encoding="utf-8")
            first_line = text.splitlines()[0].strip() if text else ""
            if first_line != title:
                raise PromptError(f"{path} must start with the line {title!r}")
            self._texts[name] = text

    def get(self, name: str) -> str:
        """The text of one prompt (system message)."""
        try:
            return self._texts[name]
        except KeyError:
            raise PromptError(f"unknown prompt {name!r}") from None

    def hash(self, name: str) -> str:
        """sha256 hex digest of one prompt's bytes."""
        return hashlib.sha256(self.get(name).encode("utf-8")).hexdigest()

    def hashes(self) -> dict[str, str]:
        """name -> sha256 of every prompt, recorded with each run."""
        return {name: self.hash(name) for name in self._texts}
