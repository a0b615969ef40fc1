"""The one wiring place: builds the real adapters from Settings and hands them to the ChatService.

Nothing is built at import time. Tests call `build_services` with other adapters (a scripted model, a
real Redis under a test prefix, other tools) and get the same wiring as production.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from sqlalchemy.exc import SQLAlchemyError

from core.contracts.evidence import ToolName
from core.contracts.run import Budgets
from core.errors import StoreUnavailable
from core.evidence.boundary import ToolBoundary
from core.evidence.redaction import Redactor
from core.guard.evidence_guard import EvidenceGuard
from core.guard.rules import load_rules
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
    Tool,
)
from core.release.release import DiagnosisRelease
from core.service.chat_service import ChatService, RunVersions
from core.service.feedback import FeedbackService
from core.service.retention import RetentionScheduler
from core.service.sessions import SessionGate
from core.service.timeline import RunTimeline
from core.settings import Settings
from core.steps.agent import DiagnosisAgent
from core.steps.judge import LlmSemanticJudge
from core.steps.knowledge import KnowledgeAnswerer
from core.steps.repair import LlmEvidenceRepairer
from core.steps.router import IntentRouter
from core.steps.schemas import diagnosis_tools, knowledge_tools
from core.stores.canonical import InMemoryCanonicalStore, RedisCanonicalStore
from core.stores.kv import InMemoryKV, RedisKV
from core.stores.memory import InMemoryAuditStore, InMemoryFeedbackStore
from core.stores.sql.audit import SqlAuditStore
from core.stores.sql.db import Database
from core.stores.sql.errors import describe_database_error
from core.stores.sql.feedback import SqlFeedbackStore
from core.stores.sql.migrate import MigrationError, prepare_schema
from core.stores.sql.retention import purge_older_than
from core.stores.sql.runs import SqlRunStore
from core.stores.sql.timeline import SqlTimelineStore
from core.tools.registry import build_tools

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
    metrics: Metrics = field(default_factory=Metrics)
    feedback: FeedbackService | None = None
    _closers: list[Any] = field(default_factory=list)

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
        """Close the tools built here, the model client, Redis and the database engine (each once)."""
        closers, self._closers = self._closers, []
        for close in reversed(closers):
            try:
                await close()
            except Exception as exc:  # closing must finish even if one resource is already gone
                log.warning("closing %s failed: %s", getattr(close, "__qualname__", close), type(exc).__name__)


async def open_schema(database: Database, auto_migrate: bool) -> None:
    """Upgrade (DIAG_AUTO_MIGRATE) or check the schema; any failure becomes StoreUnavailable naming its real cause."""
    try:
        await prepare_schema(database, auto_migrate)
    except (OSError, SQLAlchemyError, MigrationError) as exc:  # unreachable, refused, credentials, schema behind
        problem = describe_database_error(exc)
        raise StoreUnavailable("database (DATABASE_URL)", problem.cause, fix=problem.fix) from exc


def redis_client_from_url(url: str) -> aioredis.Redis:
    """A Redis client that reports an outage within about a second (two quick retries) instead of stalling a run:
    the store then raises StoreUnavailable and the run ends in a clear ERROR/FAILURE."""
    return aioredis.from_url(
        url,
        socket_connect_timeout=1.0,
        socket_timeout=2.0,
        retry=Retry(ExponentialBackoff(cap=0.2, base=0.05), retries=2),
        retry_on_error=[RedisConnectionError, RedisTimeoutError],
        health_check_interval=30,
    )


async def build_services(
    settings: Settings,
    *,
    model: ChatModel | None = None,
    tools: Mapping[ToolName, Tool[Any]] | None = None,
    canonical: CanonicalStore | None = None,
    kv: KeyValueStore | None = None,
    runs: RunStore | None = None,
    timeline_store: TimelineStore | None = None,
    audit: AuditStore | None = None,
    redis_prefix: str = "diag:",
    budgets: Budgets | None = None,
    metrics: Metrics | None = None,
    feedback_store: FeedbackStore | None = None,
) -> Services:
    """Build every adapter from settings; keyword overrides replace single adapters (tests, benchmarks)."""
    closers: list[Any] = []
    try:
        shared_kv = kv is not None and not isinstance(kv, InMemoryKV)
        redis_client: aioredis.Redis | None = None
        if settings.redis_url and (canonical is None or kv is None):
            redis_client = redis_client_from_url(settings.redis_url)
            closers.append(redis_client.aclose)
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

        database: Database | None = None
        if runs is None or timeline_store is None or audit is None:
            database = Database(settings.database_url)
            closers.append(database.dispose)
            await open_schema(database, settings.auto_migrate)
            audit = audit or SqlAuditStore(database)
            runs = runs or SqlRunStore(database)
            timeline_store = timeline_store or SqlTimelineStore(database)
            feedback_store = feedback_store or SqlFeedbackStore(database)

        configured = model is not None or model_configured(settings)
        if model is None:
            if configured:
                # Imported here: the openai SDK takes seconds to import and `diagbot tool|trace` never need it.
                from core.llm.openai_model import OpenAIChatModel

                openai_model = OpenAIChatModel(
                    settings.openai_base_url,
                    settings.openai_api_key.get_secret_value() if settings.openai_api_key else None,
                    tool_choice=settings.diag_model_tool_choice,
                )
                closers.append(openai_model.aclose)
                model = openai_model
            else:
                model = UnconfiguredModel(model_hint(settings))
        agent_model = settings.diag_model or UNCONFIGURED
        guard_model = settings.guard_model or UNCONFIGURED

        prompts = PromptLibrary(settings.diag_prompts_dir)
        rules = load_rules(settings.diag_rules_file)
        budgets = budgets or settings.budgets
        if tools is None:
            tools = build_tools(settings)
            # Tools built here are closed here (Loki's HTTP session, the SQL engine); injected tools stay the caller's.
            closers.extend(close for tool in tools.values() if callable(close := getattr(tool, "aclose", None)))
        metrics = metrics or Metrics()
        redactor = Redactor()  # one rule set and memo for every projection and stored question
        boundary = ToolBoundary(tools, canonical, audit, projection_max_bytes=settings.diag_projection_max_bytes,
                                metrics=metrics, redactor=redactor, raw_max_bytes=settings.diag_canonical_raw_max_bytes)
        guard = EvidenceGuard(canonical, rules)

        def metered(stage: str) -> ChatModel:
            assert model is not None
            return MeteredChatModel(model, metrics, stage)

        timeout_s, strict = settings.diag_model_timeout_s, settings.diag_model_strict
        repairer = LlmEvidenceRepairer(metered("repair"), agent_model, prompts, audit, timeout_s=timeout_s, strict=strict)
        judge = LlmSemanticJudge(metered("semantic_guard"), guard_model, prompts, audit,
                                 input_cap_bytes=settings.diag_semantic_input_cap_bytes, timeout_s=timeout_s)
        release = DiagnosisRelease(guard, repairer, judge, canonical, metrics=metrics, drafts=draft_archive(audit))
        agent = DiagnosisAgent(metered("agent"), agent_model, boundary, prompts, audit, call_timeout_s=timeout_s,
                               tools=diagnosis_tools(strict=strict))
        router = IntentRouter(metered("router"), agent_model, prompts, timeout_s=settings.router_timeout_s)
        knowledge = KnowledgeAnswerer(metered("knowledge"), agent_model, boundary, prompts, canonical, audit,
                                      call_timeout_s=timeout_s, tools=knowledge_tools(strict=strict))

        timeline_sink = timeline_store
        chat_service = ChatService(
            router=router,
            agent=agent,
            release=release,
            knowledge=knowledge,
            runs=runs,
            timeline_store=timeline_store,
            timeline_factory=lambda run_id: RunTimeline(run_id, timeline_sink),
            kv=kv,
            versions=RunVersions(
                prompt_hashes=prompts.hashes(),
                rule_set_version=rules.rule_set_version,
                models={"agent": agent_model, "router": agent_model, "repair": agent_model, "guard": guard_model},
            ),
            budgets=budgets,
            gate=SessionGate(kv, run_deadline_s=budgets.deadline_s, shared=shared_kv),
            metrics=metrics,
            redactor=redactor,
        )
        feedback = FeedbackService(feedback_store or InMemoryFeedbackStore(), runs, metrics)
        return Services(
            feedback=feedback, settings=settings, chat_service=chat_service, boundary=boundary,
            canonical=canonical, kv=kv, runs=runs,
            timeline_store=timeline_store, audit=audit, database=database, model=model, prompts=prompts,
            is_model_configured=configured, redis=redis_client, metrics=metrics, _closers=closers,
        )
    except BaseException:
        # A bad setting found late (a log backend, a rules file, a projection bound) must not leak what was opened.
        for close in reversed(closers):
            with contextlib.suppress(Exception):
                await close()
        raise
