"""The core's exceptions.

::

    Error                 root of the core's errors
    ├── IdError           an identifier that is not a well-formed prefixed ULID (ids.py)
    └── AnswerError       not an answer to an agent's request (answer.py)
"""

from __future__ import annotations


class Error(Exception):
    """Root of every error the core raises."""
