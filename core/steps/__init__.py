"""Model steps: intent router, diagnosis agent, knowledge answer, evidence repair, semantic judge."""
