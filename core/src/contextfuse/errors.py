"""Errors raised by contextfuse. Every error names what was wrong."""

from __future__ import annotations


class ContextfuseError(Exception):
    """Base class of every error contextfuse raises on purpose."""


class PluginLoadError(ContextfuseError):
    """A plugin could not be loaded: import error, bad hook signature, invalid strategy."""

    def __init__(
        self,
        message: str,
        *,
        plugin: str = "",
        distribution: str = "",
        version: str = "",
        entry_point: str = "",
        cause: str = "",
    ) -> None:
        super().__init__(message)
        self.cause = cause or message
        self.plugin = plugin
        self.distribution = distribution
        self.version = version
        self.entry_point = entry_point


class PluginConflictError(ContextfuseError):
    """Two plugins fill the same pipeline component slot and no configuration pins one."""


class UnknownStrategyError(ContextfuseError, KeyError):
    """A strategy name that no registered strategy carries."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = sorted(known)
        listing = ", ".join(self.known) or "(none)"
        super().__init__(f"unknown strategy {name!r}; known strategies: {listing}")

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


class StrategyRegistrationError(ContextfuseError):
    """A strategy failed validation or its name is already taken."""


class ComponentContractError(ContextfuseError):
    """A pipeline component returned something other than its contract promises."""


class ConfigError(ContextfuseError):
    """A configuration file or value is invalid.

    When it comes from a file, ``file``, ``section`` and ``key`` say where, and
    ``suggestion`` is the nearest valid key (or "").
    """

    def __init__(
        self,
        message: str,
        *,
        file: str = "",
        section: str = "",
        key: str = "",
        suggestion: str = "",
    ) -> None:
        super().__init__(message)
        self.file = file
        self.section = section
        self.key = key
        self.suggestion = suggestion


class MissingStrategyError(ConfigError):
    """No installed strategy can do what is asked; the message names the distribution to install."""


class UnknownPlanError(ContextfuseError):
    """A request names a plan the project's plan store does not hold."""


class KnowledgeBaseError(ContextfuseError):
    """The knowledge base index is missing, corrupt, foreign or cannot be built."""


class InvalidPatternError(ContextfuseError, ValueError):
    """A regular expression that cannot be searched: its syntax, its size, or a feature that
    linear-time matching leaves out (backreferences, look-around). The message names it."""
