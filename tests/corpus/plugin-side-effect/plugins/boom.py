"""Importing this module leaves a trace: validation must never import it."""
import pathlib

pathlib.Path(__file__).with_name("imported.flag").write_text("x")


def tool(conversation, params):
    return "boom"
