"""SQL stores (SQLAlchemy 2 async Core): runs, tool-invocation audit, reasoning audit and timeline."""

from core.stores.sql.audit import SqlAuditStore
from core.stores.sql.db import Database, normalize_url
from core.stores.sql.runs import SqlRunStore
from core.stores.sql.timeline import SqlTimelineStore

__all__ = ("Database", "SqlAuditStore", "SqlRunStore", "SqlTimelineStore", "normalize_url")
