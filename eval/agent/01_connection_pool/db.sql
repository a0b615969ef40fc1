CREATE TABLE deployments (id INTEGER PRIMARY KEY, service TEXT NOT NULL, version TEXT NOT NULL, deployed_at TEXT NOT NULL,
  deployed_by TEXT NOT NULL, change_summary TEXT NOT NULL, status TEXT NOT NULL);
INSERT INTO deployments VALUES (1, 'order-service', '4.17.2', '2026-11-29 18:20:00', 'ci-bot', 'Checkout copy changes', 'succeeded');
INSERT INTO deployments VALUES (2, 'payment-service', '3.4.1', '2026-11-29 20:05:00', 'ci-bot', 'Provider SDK bump', 'succeeded');
INSERT INTO deployments VALUES (3, 'order-service', '4.18.0', '2026-11-29 22:55:00', 'ci-bot', 'Order reconciliation v2 batch job holding a transaction per batch', 'succeeded');
