"""The hostile-input sweep: seeded cases of wrong, huge and malicious input in every area
of luisa_nb, each run in a worker process with a time limit and judged by an oracle.

``python -m tests.hostile.sweep --cases 1000`` runs a sweep and prints a table of outcomes
(see :mod:`tests.hostile.sweep`); ``tests/hostile/test_sweep.py`` runs a fixed sample of it
in CI. A development tool: nothing here is part of the installed package.
"""
