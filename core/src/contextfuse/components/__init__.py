"""The pipeline's components: the protocols and the core defaults of the three phases.

``coordination`` (phase 1), ``fusion`` (phase 2), ``finalize`` (phase 3); the protocols are in
``protocols``. Authors import them from ``contextfuse.plugin``.
"""
