"""The request bar of the list on a multi-selection: one Allow for all of it, or why not.

While several agents are selected the bar speaks for the selection (never for the current
row alone): "3 selected ask: permission" with an "Allow 3…" button when Allow is offered
(app/many_allow.py), else the button is off and the bar says why.  Deny and a question's
options answer one agent at a time: they are hidden here.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtWidgets import QLabel, QPushButton, QWidget

from volee_desktop.core.model import Agent

from .many_allow import allow_plan


def show_selection(
    bar: QWidget, label: QLabel, buttons: dict[str, QPushButton], agents: Sequence[Agent]
) -> None:
    """Fill the request bar for ``agents`` (several selected); hidden when none asks."""
    plan = allow_plan(agents)
    if plan is None:
        bar.hide()
        return
    for name, button in buttons.items():
        button.setVisible(name == "allow")
    allow = buttons["allow"]
    if plan.offered:
        n = len(plan.calls)
        label.setText(f"{n} selected ask a permission each")
        label.setToolTip(plan.message)
        allow.setText(f"Allow {n}…")
        allow.setToolTip(f"{plan.title} (Ctrl+Y)")
        allow.setEnabled(True)
    else:
        label.setText(plan.refusal or "")
        label.setToolTip(plan.refusal or "")
        allow.setText("Allow")
        allow.setToolTip(plan.refusal or "")
        allow.setEnabled(False)
    bar.show()
