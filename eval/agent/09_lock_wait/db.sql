CREATE TABLE deployments (id INTEGER PRIMARY KEY, service TEXT NOT NULL, version TEXT NOT NULL, deployed_at TEXT NOT NULL,
  deployed_by TEXT NOT NULL, change_summary TEXT NOT NULL, status TEXT NOT NULL);
INSERT INTO deployments VALUES (1, 'order-service', '4.18.0', '2026-11-29 01:10:00', 'ci-bot', 'Order reconciliation v2', 'succeeded');
CREATE TABLE changes (id INTEGER PRIMARY KEY, service TEXT NOT NULL, kind TEXT NOT NULL, changed_at TEXT NOT NULL,
  changed_by TEXT NOT NULL, summary TEXT NOT NULL);
INSERT INTO changes VALUES (1, 'order-service', 'schema_migration', '2026-11-29 04:02:00', 'dba', 'ALTER TABLE orders ADD COLUMN fulfilment_region (online DDL)');
