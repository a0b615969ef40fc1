"""One settings object, read once at the entrypoint from the environment (SPEC §11) and passed down."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from core.access_policy import AccessPolicy, DmRule, parse_channels
from core.contracts.run import Budgets
from core.guard.rules import DEFAULT_RULES_FILE
from core.resources import package_path

# Package data (pyproject.toml [tool.setuptools.package-data]): found the same way in a wheel and in a checkout.
DEMO_DATA = package_path("demo", "data")
DEMO_SCENARIOS = package_path("demo", "scenarios")
PROMPTS_DIR = package_path("prompts")
DEMO_CLOCK = datetime(2026, 11, 29, 23, 30, tzinfo=UTC)
"""The bundled demo data's 'now' (mirrors DEMO_CLOCK in demo/generate.py)."""


class Settings(BaseSettings):
    """Environment configuration. Field names are the environment variable names (case-insensitive)."""

    model_config = SettingsConfigDict(env_prefix="", case_sensitive=False, extra="ignore")

    slack_bot_token: SecretStr | None = None
    slack_app_token: SecretStr | None = None
    slack_signing_secret: SecretStr | None = None
    slack_api_url: str | None = None

    openai_api_key: SecretStr | None = None
    openai_base_url: str | None = None
    diag_model: str | None = None
    diag_guard_model: str | None = None

    redis_url: str | None = None
    database_url: str = "sqlite+aiosqlite:///./diag.db"

    diag_logs_path: Path = DEMO_DATA / "logs"
    diag_knowledge_path: Path = DEMO_DATA / "knowledge"
    diag_sql_url: str = f"sqlite:///{DEMO_DATA / 'shop.db'}"
    diag_clock: datetime | None = None
    # Production log backend: when DIAG_LOKI_URL is set, query_logs runs LogQL against Grafana Loki.
    diag_loki_url: str | None = None
    diag_loki_service_label: str = "service"
    diag_loki_level_label: str = "level"
    diag_loki_tenant: str | None = None
    diag_loki_token: SecretStr | None = None
    diag_loki_timeout_s: float = 10.0
    # Production log backend: when DIAG_ES_URL is set, query_logs searches Elasticsearch / OpenSearch instead.
    # Setting both DIAG_LOKI_URL and DIAG_ES_URL is refused at start-up (build_tools).
    diag_es_url: str | None = None
    diag_es_index: str = "logs-*"
    diag_es_service_field: str = "service"
    diag_es_level_field: str = "level"
    diag_es_message_field: str = "message"
    diag_es_timestamp_field: str = "@timestamp"
    diag_es_api_key: SecretStr | None = None
    diag_es_timeout_s: float = 10.0
    # query_metrics: the Prometheus HTTP API when DIAG_PROMETHEUS_URL is set (user:password@ in it is basic auth,
    # the token a bearer token), else the OpenMetrics files under DIAG_METRICS_PATH.
    diag_metrics_path: Path = DEMO_DATA / "metrics"
    diag_prometheus_url: str | None = None
    diag_prometheus_token: SecretStr | None = None
    diag_prometheus_timeout_s: float = Field(default=10.0, gt=0, le=300)

    # MCP toolsets (SPEC §3.2, docs/toolsets.md): a TOML file of read-only MCP servers and their allow-listed tools.
    diag_toolsets_file: Path | None = None

    port: int = 3000
    # Slow clients: each request's headers and its body must arrive within this many seconds (both HTTP servers:
    # /slack/events and the health/metrics server); an idle keep-alive connection is closed after it too.
    diag_http_read_timeout_s: float = Field(default=5.0, gt=0, le=120)
    # Upgrade the database schema at start (unset: on for SQLite, off elsewhere; `diagbot migrate` does it on demand).
    diag_auto_migrate: bool | None = None
    # Rows of timeline, audit, reasoning audit and runs older than this many days are purged daily.
    diag_retention_days: int = Field(default=30, ge=1)

    # Turn jobs (SPEC §10, §11): runs per process, SIGTERM grace for in-flight runs, and the queue bound beyond which
    # new turns get an immediate "busy" answer. A job whose worker stopped heartbeating this long is taken over.
    diag_worker_concurrency: int = Field(default=16, ge=1, le=1000)
    # DIAG_SERVE_RUNS=false: `diagbot serve` only takes events (verify, ack, deduplicate, enqueue) and leaves every run
    # to `diagbot worker` processes sharing REDIS_URL, so nothing a run does (tools, guard, rendering) shares the loop
    # that acks Slack within its 3 s. Needs REDIS_URL.
    diag_serve_runs: bool = True
    diag_shutdown_grace_s: float = Field(default=30.0, ge=0)
    diag_queue_max: int = Field(default=1000, ge=1)
    diag_queue_claim_after_s: float = Field(default=30.0, gt=0)
    # Prefix of every Redis key (canonical records, dedup, leases, the queue): deployments sharing one Redis differ.
    diag_redis_prefix: str = Field(default="diag:", min_length=1, max_length=64)

    # Alert-triggered investigations (SPEC §10.1): the Alertmanager webhook (on while its token is set), the channel
    # its root messages go to, other apps' alert messages (`CHANNEL_ID:BOT_ID` or `CHANNEL_ID:*`, comma separated),
    # how long a re-sent alert starts nothing new, and the investigations per channel and hour.
    diag_alert_webhook_token: SecretStr | None = None
    diag_alert_channel: str | None = None
    diag_alert_sources: str | None = None
    diag_alert_dedup_s: float = Field(default=14400.0, gt=0)
    diag_alert_max_per_hour: int = Field(default=20, ge=0)

    # Slack presentation. Streaming progress (chat.startStream + task updates) falls back to placeholder edits when
    # Slack refuses it; DIAG_SLACK_STREAMING=false always uses the edits. Link templates turn sources into links
    # ({service}, {query}, {start}, {end}; URL-encoded), e.g. a Grafana Explore or Kibana Discover URL.
    diag_slack_streaming: bool = True
    # 👍/👎 as ordinary buttons instead of Slack's feedback_buttons (for workspaces without context_actions).
    diag_slack_plain_feedback: bool = False
    diag_logs_link_template: str | None = None
    diag_sql_link_template: str | None = None
    diag_metrics_link_template: str | None = None
    # Who may ask (SPEC §10): channel ids the bot answers in (unset: every channel it is in), who may ask in a DM
    # (`all`, `none`, or user ids U…/W… and user-group ids S…, comma-separated), and whether guests (restricted /
    # ultra-restricted accounts) may ask.
    diag_allowed_channels: str | None = None
    diag_dm_users: str = "all"
    diag_allow_guests: bool = False
    # Logs: `text` (one human line) or `json` (one object per line with run_id and session).
    diag_log_format: Literal["text", "json"] = "text"
    # The event loop of every diagbot process and of the Slack ingress thread (core/runtime.py): `auto` is uvloop
    # when it is installed, else asyncio's own.
    diag_event_loop: Literal["auto", "asyncio", "uvloop"] = "auto"

    # Tunables beyond SPEC §11 (all optional).
    diag_projection_max_bytes: int = 8 * 1024
    diag_canonical_ttl_s: int = 6 * 3600
    # Bytes of one raw tool result kept in the canonical record; beyond it the first items that fit, marked truncated.
    diag_canonical_raw_max_bytes: int = 2 * 1024 * 1024
    diag_sql_timeout_s: float = 5.0
    diag_sql_row_cap: int = 200
    # System schemas/relations query_mysql may read beyond the defaults (comma-separated, e.g. "performance_schema").
    diag_sql_schemas: str | None = None
    # Accept an SQL account that can write, change schema or administer (refused by default, SPEC §11).
    diag_sql_allow_privileged: bool = False
    diag_sql_cell_max_bytes: int = 64 * 1024
    diag_sql_result_max_bytes: int = 1024 * 1024
    diag_semantic_input_cap_bytes: int = 96 * 1024
    diag_rules_file: Path = DEFAULT_RULES_FILE
    diag_prompts_dir: Path = PROMPTS_DIR
    budgets: Budgets = Field(default_factory=Budgets)

    # The model endpoint (see docs/local-models.md): a per-call timeout for every stage (each call also gets
    # no more than what is left of the run), strict function schemas (dropped automatically when the endpoint
    # refuses them), and tool_choice to send ("required" for servers that leave tools out of the prompt otherwise).
    diag_model_timeout_s: float = Field(default=60.0, gt=0)
    diag_router_timeout_s: float | None = Field(default=None, gt=0)
    diag_model_strict: bool = True
    diag_model_tool_choice: str | None = None
    diag_model_max_tokens: int | None = Field(default=None, ge=16)
    """Sent as max_tokens on every model call: bounds a small local model that rambles to the end of its context."""
    diag_first_look: bool = True
    """Before the agent's first step, run the cheap queries an on-call engineer runs first (core/steps/first_look.py)."""
    # Per-run budgets (SPEC §8); unset keeps the Budgets defaults.
    diag_max_steps: int | None = Field(default=None, ge=1)
    diag_max_tool_calls: int | None = Field(default=None, ge=1)
    diag_tool_timeout_s: float | None = Field(default=None, gt=0)
    diag_run_deadline_s: float | None = Field(default=None, gt=0)
    diag_max_observation_bytes: int | None = Field(default=None, ge=1024)

    @field_validator("diag_allowed_channels")
    @classmethod
    def _channel_ids(cls, value: str | None) -> str | None:
        parse_channels(value)  # ValueError: a clear message naming the bad item
        return value

    @field_validator("diag_dm_users")
    @classmethod
    def _dm_users(cls, value: str) -> str:
        DmRule.parse(value)
        return value

    @property
    def access_policy(self) -> AccessPolicy:
        """DIAG_ALLOWED_CHANNELS, DIAG_DM_USERS and DIAG_ALLOW_GUESTS as one policy."""
        return AccessPolicy(channels=parse_channels(self.diag_allowed_channels), dm=DmRule.parse(self.diag_dm_users),
                            allow_guests=self.diag_allow_guests)

    @model_validator(mode="after")
    def _budgets_from_settings(self) -> Settings:
        overrides = {name: value for name, value in (
            ("max_steps", self.diag_max_steps), ("max_tool_calls", self.diag_max_tool_calls),
            ("tool_timeout_s", self.diag_tool_timeout_s), ("deadline_s", self.diag_run_deadline_s),
            ("max_observation_bytes", self.diag_max_observation_bytes)) if value is not None}
        if overrides:
            self.budgets = self.budgets.model_copy(update=overrides)
        return self

    @property
    def router_timeout_s(self) -> float:
        """The router answers one word: its own timeout when set, else the model timeout capped at 20 s."""
        return self.diag_router_timeout_s or min(20.0, self.diag_model_timeout_s)

    @property
    def auto_migrate(self) -> bool:
        """DIAG_AUTO_MIGRATE, defaulting to on for SQLite (one process owns the file) and off elsewhere."""
        if self.diag_auto_migrate is not None:
            return self.diag_auto_migrate
        return self.database_url.lower().startswith("sqlite")

    @property
    def guard_model(self) -> str | None:
        return self.diag_guard_model or self.diag_model
