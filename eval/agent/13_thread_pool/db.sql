CREATE TABLE deployments (id INTEGER PRIMARY KEY, service TEXT NOT NULL, version TEXT NOT NULL, deployed_at TEXT NOT NULL,
  deployed_by TEXT NOT NULL, change_summary TEXT NOT NULL, status TEXT NOT NULL);
INSERT INTO deployments VALUES (1, 'payment-service', '3.4.1', '2026-11-29 12:05:00', 'ci-bot', 'Provider SDK bump', 'succeeded');
INSERT INTO deployments VALUES (2, 'order-service', '4.19.0', '2026-11-29 19:30:00', 'ci-bot', 'Synchronous fraud check on every order', 'succeeded');
