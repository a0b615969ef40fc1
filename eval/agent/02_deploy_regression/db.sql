CREATE TABLE deployments (id INTEGER PRIMARY KEY, service TEXT NOT NULL, version TEXT NOT NULL, deployed_at TEXT NOT NULL,
  deployed_by TEXT NOT NULL, change_summary TEXT NOT NULL, status TEXT NOT NULL);
INSERT INTO deployments VALUES (1, 'checkout-api', '2.8.4', '2026-11-29 09:12:00', 'ci-bot', 'Basket badge colour', 'succeeded');
INSERT INTO deployments VALUES (2, 'inventory-service', '5.1.0', '2026-11-29 11:40:00', 'ci-bot', 'Stock cache warmup', 'succeeded');
INSERT INTO deployments VALUES (3, 'checkout-api', '2.9.0', '2026-11-29 14:10:00', 'ci-bot', 'Localised price formatting', 'succeeded');
