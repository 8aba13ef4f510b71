"""The one error type users see: what was wrong, where, and what to do."""


class ReplayError(Exception):
    """A user-facing error; its message names the problem, the place and the fix."""


class Interrupted(BaseException):  # noqa: N818 - named for what happened, like KeyboardInterrupt
    """Ctrl-C, raised by the command line's SIGINT handler (click would turn a KeyboardInterrupt into "Aborted!")."""
