"""ProgressSink double shipped with the port: records every typed update (optionally failing, as a broken Slack)."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.contracts.progress import ProgressStage, ProgressUpdate


@dataclass
class RecordingProgress:
    """Records (run_id, update) pairs; with fail=True every update raises after being recorded."""

    fail: bool = False
    updates: list[tuple[str, ProgressUpdate]] = field(default_factory=list)

    async def update(self, run_id: str, update: ProgressUpdate) -> None:
        """Record one update."""
        self.updates.append((run_id, update))
        if self.fail:
            raise RuntimeError("progress sink down")

    @property
    def stages(self) -> list[ProgressStage]:
        """The stages reported, in order."""
        return [u.stage for _, u in self.updates]

    def of(self, stage: ProgressStage) -> list[ProgressUpdate]:
        """The updates of one stage."""
        return [u for _, u in self.updates if u.stage is stage]
