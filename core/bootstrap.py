"""The one wiring place: builds the real adapters from Settings and hands them to the ChatService.

Nothing is built at import time. Tests call `build_services` with other adapters (a scripted model, a
real Redis under a test prefix, other tools) and get the same wiring as production.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import redis.asyncio as aioredis
from sqlalchemy.exc import SQLAlchemyError

from core.contracts.run import Budgets
from core.errors import StoreUnavailable
from core.evidence.boundary import ToolBoundary
from core.evidence.redaction import Redactor
from core.guard.evidence_guard import EvidenceGuard
from core.guard.rules import RuleSet, load_rules
from core.llm.model import ModelReply, ModelUnavailable
from core.llm.prompts import PromptLibrary
from core.observability.metered_model import MeteredChatModel
from core.observability.metrics import Metrics
from core.ports import (
    AuditStore,
    CanonicalStore,
    ChatModel,
    DraftArchive,
    FeedbackStore,
    KeyValueStore,
    RunStore,
    TimelineStore,
)
from core.release.release import DiagnosisRelease
from core.service.chat_service import ChatService
from core.service.collaborators import Instruments, RunPolicy, RunStores, RunVersions, Steps
from core.service.feedback import FeedbackService
from core.service.retention import RetentionScheduler
from core.service.sessions import SessionGate
from core.service.timeline import RunTimeline
from core.settings import Settings
from core.steps.agent import DiagnosisAgent
from core.steps.first_look import FirstLook
from core.steps.judge import LlmSemanticJudge
from core.steps.knowledge import KnowledgeAnswerer
from core.steps.repair import LlmEvidenceRepairer
from core.steps.router import IntentRouter
from core.steps.schemas import diagnosis_tools, knowledge_tools
from core.stores.canonical import InMemoryCanonicalStore, RedisCanonicalStore
from core.stores.kv import InMemoryKV, RedisKV
from core.stores.memory import InMemoryAuditStore, InMemoryFeedbackStore
from core.stores.redis_client import redis_client_from_url
from core.stores.sql.audit import SqlAuditStore
from core.stores.sql.db import Database
from core.stores.sql.errors import describe_database_error
from core.stores.sql.feedback import SqlFeedbackStore
from core.stores.sql.migrate import MigrationError, prepare_schema
from core.stores.sql.retention import purge_older_than
from core.stores.sql.runs import SqlRunStore
from core.stores.sql.timeline import SqlTimelineStore
from core.tools.clock import clock_from, tool_env
from core.tools.logs.first_look import logs_first_look
from core.tools.registry import current_registry
from core.tools.sql.first_look import sql_first_look

log = logging.getLogger(__name__)

UNCONFIGURED = "unconfigured"
MODEL_HINT = (
    "no model configured: set OPENAI_BASE_URL (or OPENAI_API_KEY for OpenAI itself) and DIAG_MODEL "
    "(optionally DIAG_GUARD_MODEL), or run `diagbot demo` for the offline demo"
)


def missing_model_settings(settings: Settings) -> list[str]:
    """The unset variables that keep the model unconfigured (empty when it is configured)."""
    missing = [] if settings.diag_model else ["DIAG_MODEL"]
    if not (settings.openai_base_url or settings.openai_api_key):
        missing.append("OPENAI_BASE_URL (or OPENAI_API_KEY for OpenAI itself)")
    return missing


def model_hint(settings: Settings) -> str:
    """'no model configured: X is unset; ...' naming exactly what is missing."""
    missing = missing_model_settings(settings)
    if not missing:
        return "the model is configured"
    verb = "is" if len(missing) == 1 else "are"
    return (f"no model configured: {' and '.join(missing)} {verb} unset; set OPENAI_BASE_URL (your endpoint) or "
            "OPENAI_API_KEY (OpenAI itself) and DIAG_MODEL (optionally DIAG_GUARD_MODEL), or run `diagbot demo` for "
            "the offline demo")


class ModelNotConfigured(Exception):
    """A command that needs the model ran without OPENAI_BASE_URL / DIAG_MODEL."""


class UnconfiguredModel:
    """Stands in when no endpoint is configured: every call fails clearly (the run ends FAILURE, not a crash)."""

    def __init__(self, hint: str = MODEL_HINT) -> None:
        self.hint = hint

    async def complete(
        self, *, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
        timeout_s: float = 60.0,
    ) -> ModelReply:
        """Always raise ModelUnavailable naming the missing configuration."""
        raise ModelUnavailable(self.hint)


def model_configured(settings: Settings) -> bool:
    """True when settings name a model and an endpoint (a base URL, or an API key for OpenAI's default URL)."""
    return bool(settings.diag_model) and bool(settings.openai_base_url or settings.openai_api_key)


def draft_archive(audit: AuditStore) -> DraftArchive | None:
    """The audit store keeps checked drafts for `diagbot replay` when it can (the shipped ones can)."""
    return audit if isinstance(audit, SqlAuditStore | InMemoryAuditStore) else None


@dataclass
class Services:
    """Everything `build_services` made; `aclose()` releases what it opened."""

    settings: Settings
    chat_service: ChatService
    boundary: ToolBoundary
    canonical: CanonicalStore
    kv: KeyValueStore
    runs: RunStore
    timeline_store: TimelineStore
    audit: AuditStore
    database: Database | None
    model: ChatModel
    prompts: PromptLibrary
    is_model_configured: bool
    redis: aioredis.Redis | None = None
    redis_prefix: str = "diag:"
    metrics: Metrics = field(default_factory=Metrics)
    feedback: FeedbackService | None = None
    _stack: AsyncExitStack = field(default_factory=AsyncExitStack)

    def timeline_for(self, run_id: str) -> RunTimeline:
        """A Timeline recording events of one run."""
        return RunTimeline(run_id, self.timeline_store)

    def retention_scheduler(self) -> RetentionScheduler | None:
        """The daily purge of rows older than DIAG_RETENTION_DAYS over this database (None without one); start it
        in the running loop, close it before `aclose()`."""
        if self.database is None:
            return None
        return RetentionScheduler(partial(purge_older_than, self.database), self.settings.diag_retention_days,
                                  metrics=self.metrics)

    def require_model(self) -> None:
        """Raise ModelNotConfigured (a clear message, not a traceback) when no model endpoint is configured."""
        if not self.is_model_configured:
            raise ModelNotConfigured(model_hint(self.settings))

    async def aclose(self) -> None:
        """Close the tools built here, the model client, Redis and the database engine (each once, last opened
        first)."""
        stack, self._stack = self._stack, AsyncExitStack()
        await stack.aclose()


async def open_schema(database: Database, auto_migrate: bool) -> None:
    """Upgrade (DIAG_AUTO_MIGRATE) or check the schema; any failure becomes StoreUnavailable naming its real cause."""
    try:
        await prepare_schema(database, auto_migrate)
    except (OSError, SQLAlchemyError, MigrationError) as exc:  # unreachable, refused, credentials, schema behind
        problem = describe_database_error(exc)
        raise StoreUnavailable("database (DATABASE_URL)", problem.cause, fix=problem.fix) from exc


async def _close_quietly(close: Callable[[], Awaitable[object]]) -> None:
    """Run one closer; closing must finish even if one resource is already gone, so a failure is only logged."""
    try:
        await close()
    except Exception as exc:
        log.warning("closing %s failed: %s", getattr(close, "__qualname__", close), type(exc).__name__)


def on_close(stack: AsyncExitStack, close: Callable[[], Awaitable[object]]) -> None:
    """Have the stack call `close` when it unwinds (last registered, first closed), never raising."""
    stack.push_async_callback(_close_quietly, close)


@dataclass(frozen=True)
class SessionStores:
    """The canonical store and the key-value store (sessions, dedup), with the Redis client behind them if any."""

    canonical: CanonicalStore
    kv: KeyValueStore
    shared_kv: bool
    redis: aioredis.Redis | None


@dataclass(frozen=True)
class RecordStores:
    """Where runs are recorded: run records, timeline events, audit and feedback, with the database behind them."""

    runs: RunStore
    timeline_store: TimelineStore
    audit: AuditStore
    feedback: FeedbackStore
    database: Database | None


def build_session_stores(
    settings: Settings, stack: AsyncExitStack, canonical: CanonicalStore | None, kv: KeyValueStore | None,
    redis_prefix: str,
) -> SessionStores:
    """Redis-backed stores when REDIS_URL is set, in-process ones otherwise; given stores are kept."""
    shared_kv = kv is not None and not isinstance(kv, InMemoryKV)
    redis_client: aioredis.Redis | None = None
    if settings.redis_url and (canonical is None or kv is None):
        redis_client = redis_client_from_url(settings.redis_url)
        on_close(stack, redis_client.aclose)
    if canonical is None:
        if redis_client is not None:
            canonical = RedisCanonicalStore(redis_client, redis_prefix, settings.diag_canonical_ttl_s)
        else:
            canonical = InMemoryCanonicalStore(settings.diag_canonical_ttl_s)
    if kv is None:
        if redis_client is not None:
            kv = RedisKV(redis_client, redis_prefix)
            shared_kv = True
        else:
            # In-process stores: fine for one process. Only serving can run several, so `diagbot serve` (and
            # `diagbot check`) say so once (core/health/config.py check_store_mode); one-shot commands stay quiet.
            kv = InMemoryKV()
    return SessionStores(canonical, kv, shared_kv, redis_client)


async def open_record_stores(
    settings: Settings, stack: AsyncExitStack, *, runs: RunStore | None, timeline_store: TimelineStore | None,
    audit: AuditStore | None, feedback_store: FeedbackStore | None,
) -> RecordStores:
    """SQL stores over DATABASE_URL (schema checked or upgraded) for whatever was not given."""
    if runs is not None and timeline_store is not None and audit is not None:
        return RecordStores(runs, timeline_store, audit, feedback_store or InMemoryFeedbackStore(), None)
    database = Database(settings.database_url)
    on_close(stack, database.dispose)
    await open_schema(database, settings.auto_migrate)
    return RecordStores(
        runs=runs or SqlRunStore(database),
        timeline_store=timeline_store or SqlTimelineStore(database),
        audit=audit or SqlAuditStore(database),
        feedback=feedback_store or SqlFeedbackStore(database),
        database=database,
    )


def build_model(settings: Settings, stack: AsyncExitStack, model: ChatModel | None) -> tuple[ChatModel, bool]:
    """The given model, the configured OpenAI-compatible endpoint, or a stand-in that fails clearly; and whether a
    model is configured."""
    if model is not None:
        return model, True
    if not model_configured(settings):
        return UnconfiguredModel(model_hint(settings)), False
    # Imported here: the openai SDK takes seconds to import and `diagbot tool|trace` never need it.
    from core.llm.openai_model import OpenAIChatModel

    openai_model = OpenAIChatModel(
        settings.openai_base_url,
        settings.openai_api_key.get_secret_value() if settings.openai_api_key else None,
        tool_choice=settings.diag_model_tool_choice, max_tokens=settings.diag_model_max_tokens,
    )
    on_close(stack, openai_model.aclose)
    return openai_model, True


async def build_boundary(
    settings: Settings, stack: AsyncExitStack, tools: Mapping[str, Any] | None, canonical: CanonicalStore,
    audit: AuditStore, instruments: Instruments,
) -> ToolBoundary:
    """The ToolBoundary over the given tools, or over every registered toolset's tools as settings configure them
    (what they opened, Loki's HTTP session, the SQL engine, MCP servers, is closed with the stack; injected tools
    stay the caller's)."""
    if tools is None:
        tools = await current_registry().build(settings, tool_env(settings, stack))
    return ToolBoundary(tools, canonical, audit, projection_max_bytes=settings.diag_projection_max_bytes,
                        metrics=instruments.metrics, redactor=instruments.redactor,
                        raw_max_bytes=settings.diag_canonical_raw_max_bytes)


def build_steps(
    settings: Settings, model: ChatModel, boundary: ToolBoundary, canonical: CanonicalStore, audit: AuditStore,
    prompts: PromptLibrary, rules: RuleSet, metrics: Metrics,
) -> Steps:
    """The router, diagnosis agent, release (guard, repair, judge) and knowledge path, each on a metered model."""
    agent_model = settings.diag_model or UNCONFIGURED
    guard_model = settings.guard_model or UNCONFIGURED
    timeout_s, strict = settings.diag_model_timeout_s, settings.diag_model_strict

    def metered(stage: str) -> ChatModel:
        return MeteredChatModel(model, metrics, stage)

    guard = EvidenceGuard(canonical, rules)
    repairer = LlmEvidenceRepairer(metered("repair"), agent_model, prompts, audit, timeout_s=timeout_s, strict=strict)
    judge = LlmSemanticJudge(metered("semantic_guard"), guard_model, prompts, audit,
                             input_cap_bytes=settings.diag_semantic_input_cap_bytes, timeout_s=timeout_s)
    return Steps(
        router=IntentRouter(metered("router"), agent_model, prompts, timeout_s=settings.router_timeout_s),
        agent=DiagnosisAgent(metered("agent"), agent_model, boundary, prompts, audit, call_timeout_s=timeout_s,
                             tools=diagnosis_tools(boundary.tools.values(), strict=strict),
                             first_look=first_look(settings, boundary)),
        release=DiagnosisRelease(guard, repairer, judge, canonical, metrics=metrics, drafts=draft_archive(audit)),
        knowledge=KnowledgeAnswerer(metered("knowledge"), agent_model, boundary, prompts, canonical, audit,
                                    call_timeout_s=timeout_s,
                                    tools=knowledge_tools(boundary.tools.values(), strict=strict)),
    )


def first_look(settings: Settings, boundary: ToolBoundary) -> FirstLook | None:
    """The deterministic first look before the agent's first step (DIAG_FIRST_LOOK, on by default): the logs' and
    the database's own, and whatever registered toolsets propose through the contract's first_look hook."""
    if not settings.diag_first_look:
        return None
    return FirstLook(boundary, [logs_first_look, sql_first_look], boundary.tool_names, clock_from(settings),
                     contract=current_registry().first_look)


def run_versions(settings: Settings, prompts: PromptLibrary, rules: RuleSet) -> RunVersions:
    """The prompt hashes, rule set version and model names every run records."""
    agent_model = settings.diag_model or UNCONFIGURED
    guard_model = settings.guard_model or UNCONFIGURED
    return RunVersions(
        prompt_hashes=prompts.hashes(),
        rule_set_version=rules.rule_set_version,
        models={"agent": agent_model, "router": agent_model, "repair": agent_model, "guard": guard_model},
    )


def build_chat_service(
    steps: Steps, sessions: SessionStores, records: RecordStores, policy: RunPolicy, instruments: Instruments,
) -> ChatService:
    """The ChatService over the steps and stores, serialising turns per session through one SessionGate."""
    timeline_sink = records.timeline_store
    stores = RunStores(records.runs, timeline_sink, lambda run_id: RunTimeline(run_id, timeline_sink), sessions.kv)
    gate = SessionGate(sessions.kv, run_deadline_s=policy.budgets.deadline_s, shared=sessions.shared_kv)
    return ChatService(steps, stores, policy, gate=gate, instruments=instruments)


async def build_services(
    settings: Settings,
    *,
    model: ChatModel | None = None,
    tools: Mapping[str, Any] | None = None,
    canonical: CanonicalStore | None = None,
    kv: KeyValueStore | None = None,
    runs: RunStore | None = None,
    timeline_store: TimelineStore | None = None,
    audit: AuditStore | None = None,
    redis_prefix: str | None = None,
    budgets: Budgets | None = None,
    metrics: Metrics | None = None,
    feedback_store: FeedbackStore | None = None,
) -> Services:
    """Build every adapter from settings; keyword overrides replace single adapters (tests, benchmarks)."""
    # A bad setting found late (a log backend, a rules file, a projection bound) must not leak what was opened:
    # leaving the `async with` by an exception closes everything registered so far.
    async with AsyncExitStack() as stack:
        redis_prefix = redis_prefix or settings.diag_redis_prefix
        sessions = build_session_stores(settings, stack, canonical, kv, redis_prefix)
        records = await open_record_stores(settings, stack, runs=runs, timeline_store=timeline_store, audit=audit,
                                           feedback_store=feedback_store)
        chat_model, configured = build_model(settings, stack, model)
        prompts = PromptLibrary(settings.diag_prompts_dir)
        rules = load_rules(settings.diag_rules_file)
        # One metrics registry, and one rule set and memo for every projection and stored question.
        instruments = Instruments(metrics or Metrics(), Redactor())
        boundary = await build_boundary(settings, stack, tools, sessions.canonical, records.audit, instruments)
        steps = build_steps(settings, chat_model, boundary, sessions.canonical, records.audit, prompts, rules,
                            instruments.metrics)
        policy = RunPolicy(run_versions(settings, prompts, rules), budgets or settings.budgets)
        chat_service = build_chat_service(steps, sessions, records, policy, instruments)
        return Services(
            settings=settings, chat_service=chat_service, boundary=boundary, canonical=sessions.canonical,
            kv=sessions.kv, runs=records.runs, timeline_store=records.timeline_store, audit=records.audit,
            database=records.database, model=chat_model, prompts=prompts, is_model_configured=configured,
            redis=sessions.redis, redis_prefix=redis_prefix, metrics=instruments.metrics,
            feedback=FeedbackService(records.feedback, records.runs, instruments.metrics), _stack=stack.pop_all(),
        )
