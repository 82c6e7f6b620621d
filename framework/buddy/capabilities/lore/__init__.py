"""Lore: entries of world and background knowledge (``lore:``, a folder of YAML books)
that enter the prompt only when the recent messages mention them, or always — a
SillyTavern-style lorebook under the companion layer's budget."""
