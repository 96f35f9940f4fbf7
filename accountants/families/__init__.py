"""Algorithm families: one module per algorithm, each registering itself with :mod:`accountants.registry`."""
