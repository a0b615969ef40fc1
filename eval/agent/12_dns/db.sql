CREATE TABLE deployments (id INTEGER PRIMARY KEY, service TEXT NOT NULL, version TEXT NOT NULL, deployed_at TEXT NOT NULL,
  deployed_by TEXT NOT NULL, change_summary TEXT NOT NULL, status TEXT NOT NULL);
INSERT INTO deployments VALUES (1, 'inventory-service', '5.1.0', '2026-11-29 05:40:00', 'ci-bot', 'Stock cache warmup', 'succeeded');
CREATE TABLE changes (id INTEGER PRIMARY KEY, service TEXT NOT NULL, kind TEXT NOT NULL, changed_at TEXT NOT NULL,
  changed_by TEXT NOT NULL, summary TEXT NOT NULL);
INSERT INTO changes VALUES (1, 'platform', 'dns', '2026-11-29 08:10:00', 'ops', 'Internal zone migrated to new resolver; catalog-db.internal record pending');
