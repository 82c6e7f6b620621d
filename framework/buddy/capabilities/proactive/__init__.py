"""Proactive service: subscriptions (declared in ``proactive:`` or made by the model and
code) whose triggers start a turn nobody asked for."""
