"""The front end: a kernel function's source read and parsed, the constructs the language
never accepts rejected, and the names it does not assign resolved (captures)."""
