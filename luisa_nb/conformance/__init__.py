"""The conformance suite: does a backend keep stream order for host memory, and does the
analysis name exactly the uploads that went stale?

Run it against any backend, built in or registered through the entry point group
``luisa_nb.backends``::

    pytest --pyargs luisa_nb.conformance --luisa-backend NAME

Programs are data (:mod:`~luisa_nb.conformance.program`); the fixed ones are in
:mod:`~luisa_nb.conformance.programs` and 200 random ones come from
:mod:`~luisa_nb.conformance.generator`. :mod:`~luisa_nb.conformance.oracle` predicts
their results with numpy alone, and :mod:`~luisa_nb.conformance.verify` holds the rules a
run must follow. The ``test_conformance_*`` modules use the ``luisa_device`` fixture of
the luisa_nb pytest plugin, so each test runs once per backend and staging policy.
:mod:`~luisa_nb.conformance.strategies` draws programs for Hypothesis (several streams,
threads, empty ranges, failing callbacks and commands); luisa_nb's own
``tests/runtime/test_random_programs.py`` runs them.
"""
