CREATE TABLE deployments (id INTEGER PRIMARY KEY, service TEXT NOT NULL, version TEXT NOT NULL, deployed_at TEXT NOT NULL,
  deployed_by TEXT NOT NULL, change_summary TEXT NOT NULL, status TEXT NOT NULL);
INSERT INTO deployments VALUES (1, 'payment-service', '3.4.1', '2026-11-29 18:05:00', 'ci-bot', 'Provider SDK bump', 'succeeded');
CREATE TABLE changes (id INTEGER PRIMARY KEY, service TEXT NOT NULL, kind TEXT NOT NULL, changed_at TEXT NOT NULL,
  changed_by TEXT NOT NULL, summary TEXT NOT NULL);
INSERT INTO changes VALUES (1, 'payment-service', 'infrastructure', '2026-11-29 21:04:00', 'ops', 'redis-payments failover to replica');
