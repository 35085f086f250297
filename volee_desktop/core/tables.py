"""The registry's tables: every agent, session, mission, thread and message, and their queries.

The data half of the registry (``registry.py`` adds validation and the fold on top):
plain dicts of frozen entities, read by the rules (``validation.py``) and replaced by
the fold (``fold.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .model import HUMAN, Agent, Message, Mission, Thread, session_key


@dataclass
class Tables:
    """Everything volee knows: the state that events are folded into."""

    agents: dict[str, Agent] = field(default_factory=dict)
    sessions: dict[str, str] = field(default_factory=dict)
    ignored: dict[str, str] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    missions: dict[str, Mission] = field(default_factory=dict)
    threads: dict[str, Thread] = field(default_factory=dict)
    messages: dict[str, Message] = field(default_factory=dict)
    seq: int = 0
    #: The settings that lower safety as the person last confirmed them (SettingsConfirmed).
    confirmed_settings: dict[str, str] = field(default_factory=dict)

    def name_of(self, agent_id: str) -> str | None:
        """The name of any agent ever registered, forgotten ones included."""
        return self.names.get(agent_id)

    def owner_of(self, harness: str, session_id: str) -> str | None:
        """The agent a session belongs to, if any."""
        return self.sessions.get(session_key(harness, session_id))

    def is_ignored(self, harness: str, session_id: str) -> bool:
        """Whether a session belonged to a forgotten agent (and is ignored from then on)."""
        return session_key(harness, session_id) in self.ignored

    def by_urgency(self, agents: Iterable[Agent] | None = None) -> list[Agent]:
        """Agents most urgent first; the most recent change first within a state."""
        pool = self.agents.values() if agents is None else agents
        return sorted(pool, key=urgency_key)

    def mission_agents(self, mission_id: str) -> list[Agent]:
        """The agents taking part in a mission."""
        return [a for a in self.agents.values() if a.mission == mission_id]

    def answer_to(self, question_id: str) -> Message | None:
        """The human's latest answer to a question, if any."""
        answers = [
            m for m in self.messages.values() if m.reply_to == question_id and m.sender == HUMAN
        ]
        return max(answers, key=lambda m: (m.at, m.id), default=None)


def urgency_key(agent: Agent) -> tuple[int, float, str]:
    """Sort key: state urgency, then the most recent change first, then the id (total)."""
    return (agent.state.urgency, -agent.state_since, agent.id)
