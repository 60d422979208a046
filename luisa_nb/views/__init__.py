"""What every surface of luisa_nb shows a trace or a comparison with: the view data
(:mod:`~luisa_nb.views.timeline`, :mod:`~luisa_nb.views.array_diff`), one HTML kit
(:mod:`~luisa_nb.views.html`), one theme (:mod:`~luisa_nb.views.theme`) and one static
picture (:mod:`~luisa_nb.views.figure`, matplotlib).

The widgets, the static pages and the report, the IPython extension's summary and the
comparison table are built from these pieces. Views read a trace plus analysis results
only: never the runtime or a backend, so a saved trace shows anywhere with no device.
"""
