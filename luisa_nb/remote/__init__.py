"""The remote backend's machinery: wire protocol, client, server and server launcher.

``luisa_nb.backends.remote`` is the backend; this package holds what it stands on, so
the backend itself stays small. Needs ``pyzmq`` (``pip install luisa_nb[remote]``).
"""
