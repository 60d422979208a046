"""luisa-python's ``GUI``, headless: a program's window loop runs a fixed number of frames
and its images are kept, so GUI programs run unchanged in tests, notebooks and CI.

``running()`` is true for ``$LUISA_NB_GUI_FRAMES`` frames (default 1); ``set_image``
keeps a copy of the image's pixels (``gui.frames``, the last in ``gui.image``); ``show``
ends a frame. Nothing is displayed.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from luisa_nb.errors import ConfigurationError

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

    def __init__(self, title: str, resolution: tuple[int, int], *args: Any, **kwargs: Any) -> None:
        self.title = title
        self.resolution = tuple(resolution)
        self.frames: list[np.ndarray] = []
        self.shown = 0
        self._budget = frame_count()

    def running(self) -> bool:
        return self.shown < self._budget

    def set_image(self, image: Any) -> None:
        """Keep the pixels ``image`` holds after the stream's earlier work."""
        self.frames.append(image.numpy())

    @property
    def image(self) -> np.ndarray | None:
        return self.frames[-1] if self.frames else None

    def show(self) -> None:
        self.shown += 1
