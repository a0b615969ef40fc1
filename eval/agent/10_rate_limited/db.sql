CREATE TABLE deployments (id INTEGER PRIMARY KEY, service TEXT NOT NULL, version TEXT NOT NULL, deployed_at TEXT NOT NULL,
  deployed_by TEXT NOT NULL, change_summary TEXT NOT NULL, status TEXT NOT NULL);
INSERT INTO deployments VALUES (1, 'notification-service', '1.12.0', '2026-11-29 06:00:00', 'ci-bot', 'Template cache', 'succeeded');
CREATE TABLE changes (id INTEGER PRIMARY KEY, service TEXT NOT NULL, kind TEXT NOT NULL, changed_at TEXT NOT NULL,
  changed_by TEXT NOT NULL, summary TEXT NOT NULL);
INSERT INTO changes VALUES (1, 'notification-service', 'feature_flag', '2026-11-29 17:00:00', 'marketing', 'black_friday_campaign enabled: 40k marketing emails');
