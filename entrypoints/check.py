"""`diagbot check` and the start-up refusal of `diagbot serve`: every check at once, one line each."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from core.health.catalog import config_checks
from core.health.result import CheckResult, Level, fatal, run_checks
from core.settings import Settings

if TYPE_CHECKING:
    from core.llm.probe import AgentShape

log = logging.getLogger("diagbot.check")

Print = Callable[[str], None]


async def run_all(settings: Settings, *, serving: bool, events: bool = True) -> list[CheckResult]:
    """The Slack checks and the core's, run concurrently (a few seconds at most)."""
    from bot.slack_checks import slack_checks  # the Slack SDK is only needed here and by serve

    return await run_checks([*slack_checks(settings, serving=serving, events=events),
                             *config_checks(settings, serving=serving)])


def summary(results: Sequence[CheckResult]) -> str:
    """'N fatal, M warnings' over the results."""
    warnings = sum(r.level is Level.WARN for r in results)
    return f"{len(fatal(results))} fatal, {warnings} warning{'s' if warnings != 1 else ''}"


async def check_command(settings: Settings, out: Print = print, *, probe_model: bool = False) -> int:
    """`diagbot check`: print every line; exit 1 when any check is FATAL, else 0 (warnings and skips do not fail).

    Slack and the model unset entirely are SKIP here (the demo, tool and trace commands need neither);
    `diagbot serve` treats them as FATAL. With probe_model (`--model`) the endpoint's capabilities are probed too,
    and no model configured is FATAL."""
    results = await run_all(settings, serving=False)
    if probe_model:
        results += await model_probe(settings)
    for result in results:
        out(result.line())
    out(f"diagbot check: {summary(results)}")
    return 1 if fatal(results) else 0


async def model_probe(settings: Settings) -> list[CheckResult]:
    """The tool-calling probe of the configured endpoint and DIAG_MODEL (core/llm/probe.py)."""
    if not settings.diag_model or not (settings.openai_base_url or settings.openai_api_key):
        return [CheckResult(name="model.probe", level=Level.FATAL, detail="no model configured to probe",
                            fix="set OPENAI_BASE_URL (or OPENAI_API_KEY for OpenAI) and DIAG_MODEL")]
    from core.llm.probe import probe_model  # the openai SDK takes a while to import; only --model needs it here

    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    return await probe_model(settings.openai_base_url, key, settings.diag_model, agent_shape(settings),
                             timeout_s=settings.diag_model_timeout_s)


def agent_shape(settings: Settings) -> AgentShape:
    """The requests the bot will send: its prompts, the agent's function schemas (strict or plain) and tool_choice."""
    from core.llm.probe import AgentShape
    from core.llm.prompts import PromptLibrary
    from core.steps.schemas import diagnosis_tools

    prompts = PromptLibrary(settings.diag_prompts_dir)
    return AgentShape(agent_prompt=prompts.get("diagnosis_agent"), judge_prompt=prompts.get("semantic_guard"),
                      tools=diagnosis_tools(strict=settings.diag_model_strict),
                      tool_choice=settings.diag_model_tool_choice, guard_model=settings.guard_model,
                      max_tokens=settings.diag_model_max_tokens)


async def preflight(settings: Settings, err: Print, command: str = "serve") -> list[CheckResult] | None:
    """The checks `diagbot serve` (or `worker`) runs first: None (after listing every problem on `err`) when it must not start;
    otherwise the warnings, each logged once."""
    results = await run_all(settings, serving=True, events=command != "worker")
    problems = fatal(results)
    if problems:
        err(f"diagbot {command}: refusing to start, {summary(results)}:")
        for result in results:
            if result.level in (Level.FATAL, Level.WARN):
                err("  " + result.line())
        return None
    warnings = [r for r in results if r.level is Level.WARN]
    for warning in warnings:
        log.warning("%s", warning.line())
    return warnings
