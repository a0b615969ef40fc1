"""Secret rules: gitleaks' vendored rule file, diagbot's own rules, and their compilation for Python."""
