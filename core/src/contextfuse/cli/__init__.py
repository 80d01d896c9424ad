"""The ``contextfuse`` command line."""
