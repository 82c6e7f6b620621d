"""Testing helpers shipped with buddy: scripted models, and a local platform to run a buddy
against in-process (real sockets on loopback)."""

from buddy.models.testing import FunctionModel, OfflineModel, Reply, TestModel, call

__all__ = ["FunctionModel", "OfflineModel", "Reply", "TestModel", "call"]
