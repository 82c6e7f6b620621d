"""Character: a per-conversation emotional state — anger, sadness, trust — moved by what
the user says and decaying by the platform clock, its dynamics set by the numbers of the
buddy's trait file (``character:``)."""
