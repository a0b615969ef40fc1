CREATE TABLE deployments (id INTEGER PRIMARY KEY, service TEXT NOT NULL, version TEXT NOT NULL, deployed_at TEXT NOT NULL,
  deployed_by TEXT NOT NULL, change_summary TEXT NOT NULL, status TEXT NOT NULL);
INSERT INTO deployments VALUES (1, 'checkout-api', '2.9.1', '2026-11-29 13:00:00', 'ci-bot', 'Price formatting fix', 'succeeded');
CREATE TABLE changes (id INTEGER PRIMARY KEY, service TEXT NOT NULL, kind TEXT NOT NULL, changed_at TEXT NOT NULL,
  changed_by TEXT NOT NULL, summary TEXT NOT NULL);
INSERT INTO changes VALUES (1, 'checkout-api', 'config', '2026-11-29 15:20:00', 'ops', 'Secrets moved to vault path checkout/prod; PAYMENT_API_URL not migrated');
