"""One module per area of the sweep. Each has ``catalogue()``, its fixed cases in a fixed
order, and ``variant(rng)``, one more case drawn with ``rng``; the actions they name are
module-level functions that take plain arguments and build the hostile input themselves.

An action raises what luisa_nb raised (a luisa_nb error: clean; anything else: raw), or
returns once its oracle has checked the result (a wrong result raises
:class:`~tests.hostile.outcomes.OracleFailure`: silent). ``expectation`` arguments say
what an action must see: ``"ok"`` (it must complete, with the right result), ``"error"``
(it must raise a luisa_nb error) or ``"either"`` (an error, or the right result).
"""
