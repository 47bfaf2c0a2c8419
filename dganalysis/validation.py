"""Checks of user input before any work starts: one exception type, messages that say where and what.

Every message reads ``<where>: expected <what>, got <value>`` where ``where`` names the file and key (or the
parameter) so a user can fix it without a traceback. :class:`ConfigError` is a ``ValueError``, so callers that
catch ``ValueError`` keep working.
"""

from __future__ import annotations


class ConfigError(ValueError):
    """Bad user input (a config file, a parameter, a command-line flag), found before any work starts."""
