"""Progress as tasks, the way Slack AI apps show work: one task per tool call, then one per checking stage.

`ProgressState` folds typed ProgressUpdates into tasks; the placeholder edits render it as mrkdwn lines, the stream
sends its changed tasks as `task_update` chunks. Only what the tools did and which stage runs is shown, never draft
text: the state has no field that could hold it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bot.render.limits import clip
from bot.render.mrkdwn import code, escape, section
from core.contracts.evidence import EvidenceStatus
from core.contracts.progress import ProgressStage, ProgressUpdate, ToolProgress
from core.evidence.subjects import plural
from core.release.wording import tool_error_words
from core.tools.registry import current_registry

PLACEHOLDER = "Looking into it…"
TITLE_MAX = 250
OUTPUT_MAX = 200
MAX_TASK_LINES = 8


class TaskStatus(StrEnum):
    """Slack's task states."""

    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    COMPLETE = "complete"
    ERROR = "error"


STAGE_WORDS: dict[ProgressStage, str] = {
    ProgressStage.ROUTING: "Understanding the question",
    ProgressStage.PLANNING: "Deciding what to query",
    ProgressStage.TOOL_STARTED: "Querying the tools",
    ProgressStage.TOOL_FINISHED: "Querying the tools",
    ProgressStage.EVIDENCE_CHECK: "Checking every claim against the tool results",
    ProgressStage.REPAIR: "Repairing the draft's citations (one attempt)",
    ProgressStage.REVIEW: "Independent review of the evidence",
    ProgressStage.RELEASE: "Preparing the answer",
    ProgressStage.CITATION_CHECK: "Checking the answer's runbook citations",
}
READING = "Reading the results and deciding the next step"
# Checking stages shown as tasks of their own, in the order they can happen.
CHECK_STAGES = (ProgressStage.EVIDENCE_CHECK, ProgressStage.REPAIR, ProgressStage.REVIEW, ProgressStage.CITATION_CHECK,
                ProgressStage.RELEASE)
_ICON = {TaskStatus.PENDING: "◻️", TaskStatus.IN_PROGRESS: "⏳", TaskStatus.COMPLETE: "✅", TaskStatus.ERROR: "⚠️"}


@dataclass
class Task:
    """One task as Slack shows it."""

    id: str
    title: str
    status: TaskStatus
    output: str = ""

    def chunk(self) -> dict[str, Any]:
        """The `task_update` chunk for chat.startStream / chat.appendStream."""
        chunk: dict[str, Any] = {"type": "task_update", "id": self.id, "title": self.title, "status": self.status.value}
        if self.output:
            chunk["output"] = self.output
        return chunk


def tool_title(tool: ToolProgress) -> str:
    """'Logs · order-service "HikariPool" ERROR, 22:30-23:30 UTC' (what was queried; never an id)."""
    spec = current_registry().find(tool.tool)
    kind = spec.nouns.kind if spec is not None else f"Unknown tool {tool.tool}"
    return clip(f"{kind} · {tool.subject}" if tool.subject else kind, TITLE_MAX)


def tool_output(tool: ToolProgress) -> tuple[TaskStatus, str]:
    """The task's status and its one-line result: count found, no matches, or why it could not run."""
    if tool.evidence_status is None:
        return TaskStatus.IN_PROGRESS, ""
    if tool.evidence_status is EvidenceStatus.EVIDENCE_FOUND:
        spec = current_registry().find(tool.tool)
        return TaskStatus.COMPLETE, plural(tool.count or 0, spec.nouns.found if spec is not None else "result")
    if tool.evidence_status is EvidenceStatus.NO_EVIDENCE:
        return TaskStatus.COMPLETE, "no matches (not proof of health)"
    return TaskStatus.ERROR, clip(f"could not run: {tool_error_words(tool.error_code)}", OUTPUT_MAX)


@dataclass
class ProgressState:
    """The tasks and the current stage of one run, folded from its updates."""

    run_id: str | None = None
    stage: str = ""
    tasks: dict[str, Task] = field(default_factory=dict)

    def apply(self, run_id: str, update: ProgressUpdate) -> list[Task]:
        """Fold one update in; returns the tasks it created or changed (in order)."""
        self.run_id = run_id
        changed: list[Task] = []
        if update.stage is ProgressStage.PLANNING and (update.tool_calls or 0) > 0:
            self.stage = READING
        else:
            self.stage = STAGE_WORDS[update.stage]
        if update.tool is not None:
            changed.append(self._tool(update.tool))
        if update.stage in CHECK_STAGES:
            changed += self._check(update.stage)
        return changed

    def _tool(self, tool: ToolProgress) -> Task:
        key = f"tool:{tool.tool_call_id}"
        task = self.tasks.get(key)
        if task is None:
            task = self.tasks[key] = Task(id=f"t{len(self.tasks) + 1}", title="", status=TaskStatus.IN_PROGRESS)
        task.title = tool_title(tool)
        task.status, task.output = tool_output(tool)
        return task

    def _check(self, stage: ProgressStage) -> list[Task]:
        changed = []
        for task_key, task in self.tasks.items():
            if task_key.startswith("check:") and task.status is TaskStatus.IN_PROGRESS:
                task.status = TaskStatus.COMPLETE
                changed.append(task)
        key = f"check:{stage.value}"
        current = self.tasks.get(key)
        if current is None:
            current = self.tasks[key] = Task(id=f"t{len(self.tasks) + 1}", title=STAGE_WORDS[stage],
                                             status=TaskStatus.IN_PROGRESS)
        else:
            current.status = TaskStatus.IN_PROGRESS
        changed.append(current)
        return changed

    def open_tasks(self) -> list[Task]:
        """Tasks still shown as running (closed when the final message replaces the progress)."""
        return [t for t in self.tasks.values() if t.status in (TaskStatus.PENDING, TaskStatus.IN_PROGRESS)]

    def lines(self) -> list[str]:
        """The placeholder's mrkdwn: head, stage, the latest tasks (older ones counted)."""
        head = PLACEHOLDER + (f" run {code(self.run_id)}" if self.run_id else "")
        lines = [head]
        if self.stage:
            lines.append(f"_{escape(self.stage)}_")
        tasks = list(self.tasks.values())
        if len(tasks) > MAX_TASK_LINES:
            lines.append(f"… {len(tasks) - MAX_TASK_LINES} earlier steps")
        for task in tasks[-MAX_TASK_LINES:]:
            output = f" — {escape(task.output)}" if task.output else ""
            lines.append(f"{_ICON[task.status]} {escape(task.title)}{output}")
        return lines

    def render(self) -> tuple[str, list[dict[str, Any]]]:
        """(text, blocks) of the placeholder edit."""
        lines = self.lines()
        return lines[0], [section(clip("\n".join(lines), 2900))]
