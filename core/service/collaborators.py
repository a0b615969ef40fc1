"""The grouped collaborators a ChatService is built from: its steps, its run stores, its run policy and its
instruments (bootstrap fills them; tests fill them with doubles)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from core.contracts.run import Budgets
from core.evidence.redaction import Redactor
from core.observability.metrics import Metrics
from core.ports import (
    DiagnosisAgentPort,
    IntentRouting,
    KeyValueStore,
    KnowledgePort,
    ReleasePort,
    RunStore,
    Timeline,
    TimelineStore,
)


@dataclass(frozen=True)
class RunVersions:
    """The versions every run records so it can be explained and replayed."""

    prompt_hashes: dict[str, str] = field(default_factory=dict)
    rule_set_version: str = ""
    models: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Steps:
    """What a turn runs through: the intent router, the diagnosis agent, its release and the knowledge path."""

    router: IntentRouting
    agent: DiagnosisAgentPort
    release: ReleasePort
    knowledge: KnowledgePort


@dataclass(frozen=True)
class RunStores:
    """Where a run is recorded: run records, timeline events (and a timeline per run), the session key-value
    store."""

    runs: RunStore
    timeline_store: TimelineStore
    timeline_factory: Callable[[str], Timeline]
    kv: KeyValueStore


@dataclass(frozen=True)
class RunPolicy:
    """What every run is held to and records: its budgets and the versions it ran with."""

    versions: RunVersions
    budgets: Budgets = field(default_factory=Budgets)


@dataclass(frozen=True)
class Instruments:
    """Shared helpers of every run: the metrics it reports to and the redactor its stored question goes through."""

    metrics: Metrics = field(default_factory=Metrics)
    redactor: Redactor = field(default_factory=Redactor)
