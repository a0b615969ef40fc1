CREATE TABLE deployments (id INTEGER PRIMARY KEY, service TEXT NOT NULL, version TEXT NOT NULL, deployed_at TEXT NOT NULL,
  deployed_by TEXT NOT NULL, change_summary TEXT NOT NULL, status TEXT NOT NULL);
INSERT INTO deployments VALUES (1, 'order-service', '4.18.1', '2026-11-29 01:00:00', 'ci-bot', 'Logging tweaks', 'succeeded');
INSERT INTO deployments VALUES (2, 'inventory-service', '5.2.0', '2026-11-29 02:30:00', 'ci-bot', 'Nightly stock report export', 'succeeded');
