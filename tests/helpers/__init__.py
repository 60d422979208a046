"""Helpers shared by the tests (and the widget benchmark), kept out of the installed
package: a headless browser and JupyterLab server (:mod:`helpers.browser`), traces
made by hand (:mod:`helpers.synthetic`), findings that compare across address spaces
(:mod:`helpers.findings`), Ctrl-C sent to the main thread (:mod:`helpers.interrupts`),
what the CUDA tests need to know about NVRTC (:mod:`helpers.cuda`), a callback that
waits for its own device (:mod:`helpers.callback_waits`) and calls that must fail before
anything is recorded (:mod:`helpers.errors`). ``tests/`` is on ``sys.path``
while pytest runs (``tests/conftest.py`` puts it there), so tests import them as
``helpers.browser``."""
