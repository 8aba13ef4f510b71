"""The one error type users see: what was wrong, where, and what to do."""


class ReplayError(Exception):
    """A user-facing error; its message names the problem, the place and the fix."""
