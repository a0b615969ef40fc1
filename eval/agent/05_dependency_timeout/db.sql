CREATE TABLE deployments (id INTEGER PRIMARY KEY, service TEXT NOT NULL, version TEXT NOT NULL, deployed_at TEXT NOT NULL,
  deployed_by TEXT NOT NULL, change_summary TEXT NOT NULL, status TEXT NOT NULL);
INSERT INTO deployments VALUES (1, 'payment-service', '3.4.1', '2026-11-29 08:05:00', 'ci-bot', 'Provider SDK bump', 'succeeded');
CREATE TABLE payments (id INTEGER PRIMARY KEY, provider TEXT, status TEXT, latency_ms INTEGER, created_at TEXT);
INSERT INTO payments VALUES (1, 'stripe-gateway', 'ok', 181, '2026-11-29 16:11:00');
INSERT INTO payments VALUES (2, 'stripe-gateway', 'ok', 182, '2026-11-29 16:12:00');
INSERT INTO payments VALUES (3, 'stripe-gateway', 'ok', 183, '2026-11-29 16:13:00');
INSERT INTO payments VALUES (4, 'stripe-gateway', 'ok', 184, '2026-11-29 16:14:00');
INSERT INTO payments VALUES (5, 'stripe-gateway', 'ok', 185, '2026-11-29 16:15:00');
INSERT INTO payments VALUES (6, 'stripe-gateway', 'ok', 186, '2026-11-29 16:16:00');
INSERT INTO payments VALUES (7, 'stripe-gateway', 'timeout', 10000, '2026-11-29 16:17:00');
INSERT INTO payments VALUES (8, 'stripe-gateway', 'timeout', 10000, '2026-11-29 16:18:00');
INSERT INTO payments VALUES (9, 'stripe-gateway', 'timeout', 10000, '2026-11-29 16:19:00');
INSERT INTO payments VALUES (10, 'stripe-gateway', 'timeout', 10000, '2026-11-29 16:20:00');
INSERT INTO payments VALUES (11, 'stripe-gateway', 'timeout', 10000, '2026-11-29 16:21:00');
INSERT INTO payments VALUES (12, 'stripe-gateway', 'timeout', 10000, '2026-11-29 16:22:00');
