"""Question cards: a question with 2–4 options the user taps; sending one ends the turn."""
