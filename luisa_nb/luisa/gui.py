"""luisa-python's ``GUI``, headless: a program's window loop runs a fixed number of frames
and its images are kept, so GUI programs run unchanged in tests, notebooks and CI.

``running()`` is true for ``$LUISA_NB_GUI_FRAMES`` frames (default 1); ``set_image``
keeps a copy of the image's pixels (``gui.frames``, the last in ``gui.image``); ``show``
ends a frame and, as luisa-python's does, returns the milliseconds since the previous
``show`` (0.0 for the first, or always with ``show_FPS=False``). Nothing is displayed:
no key or mouse button is ever down, pressed or up, and the cursor stays at (0, 0).
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from luisa_nb.errors import ConfigurationError
from luisa_nb.kernels import float2

FRAMES_VARIABLE = "LUISA_NB_GUI_FRAMES"


def frame_count() -> int:
    text = os.environ.get(FRAMES_VARIABLE, "1")
    try:
        count = int(text)
    except ValueError:
        count = -1
    if count < 0:
        raise ConfigurationError(
            f"${FRAMES_VARIABLE} is {text!r}; set it to the number of frames a GUI loop runs"
        )
    return count


class GUI:
    """A window that is never shown; see the module docstring."""

    def __init__(
        self,
        title: str,
        resolution: tuple[int, int],
        vsync: bool = False,
        show_FPS: bool = True,
    ) -> None:
        self.title = title
        self.resolution = tuple(resolution)
        self.show_FPS = show_FPS
        self.frames: list[np.ndarray] = []
        self.shown = 0
        self._budget = frame_count()
        self._last_show: float | None = None

    def running(self) -> bool:
        return self.shown < self._budget

    def set_image(self, image: Any) -> None:
        """Keep the pixels ``image`` holds after the stream's earlier work."""
        self.frames.append(image.numpy())

    @property
    def image(self) -> np.ndarray | None:
        return self.frames[-1] if self.frames else None

    def show(self) -> float:
        """End a frame; the milliseconds since the previous one (see the module docstring)."""
        self.shown += 1
        if not self.show_FPS:
            return 0.0
        now, last = time.perf_counter(), self._last_show
        self._last_show = now
        return 0.0 if last is None else (now - last) * 1e3

    def is_key_down(self, key: int) -> bool:
        return False

    def is_key_pressed(self, key: int) -> bool:
        return False

    def is_key_up(self, key: int) -> bool:
        return False

    def is_mouse_down(self, mouse: int) -> bool:
        return False

    def is_mouse_pressed(self, mouse: int) -> bool:
        return False

    def is_mouse_up(self, mouse: int) -> bool:
        return False

    def cursor_pos(self) -> Any:
        """The cursor's position in the window, in pixels: always (0, 0) here."""
        return float2(0.0, 0.0)


class KeyCode:
    """Key numbers for ``GUI.is_key_down`` and the like, as luisa-python names them
    (GLFW's key codes)."""

    Space, Apostrophe, Comma, Minus, Period, Slash = 32, 39, 44, 45, 46, 47
    Semicolon, Equal = 59, 61
    LeftBracket, Backslash, RightBracket, GraveAccent = 91, 92, 93, 96
    World1, World2 = 161, 162
    Escape, Enter, Tab, Backspace, Insert, destroy = 256, 257, 258, 259, 260, 261
    Right, Left, Down, Up, PageUp, PageDown, Home, End = range(262, 270)
    CapsLock, ScrollLock, NumLock, PrintScreen, Pause = range(280, 285)
    KeyPadDecimal, KeyPadDivide, KeyPadMultiply, KeyPadSubtract = 330, 331, 332, 333
    KeyPadAdd, KeyPadEnter, KeyPadEqual = 334, 335, 336
    LeftShift, LeftControl, LeftAlt, LeftSuper = 340, 341, 342, 343
    RightShift, RightControl, RightAlt, RightSuper, Menu = 344, 345, 346, 347, 348


for _code in range(10):
    setattr(KeyCode, f"Alpha{_code}", 48 + _code)
    setattr(KeyCode, f"KeyPad{_code}", 320 + _code)
for _code in range(26):
    setattr(KeyCode, chr(ord("A") + _code), 65 + _code)
for _code in range(1, 26):
    setattr(KeyCode, f"F{_code}", 289 + _code)


del _code
