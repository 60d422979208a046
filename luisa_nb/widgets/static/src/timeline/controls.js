// Input on the timeline. A plain vertical wheel is the page's (it scrolls the notebook);
// Ctrl/⌘ + wheel zooms about the pointer; Shift + wheel or a horizontal wheel pans. With
// the timeline focused: W/S zoom, A/D pan, F or 0 fits, ←/→ select the previous/next
// command, Esc drops the measurement. A drag
// pans; Shift + drag (or a drag with the ruler on) measures a span; a click selects what
// is under the pointer; a double-click fits.
//
// `timeline` (timeline.js) holds the canvas, the frame, the view and the pointer state
// ({x, measure, drag, ruler}) these handlers read and change.

import { LABEL_WIDTH, plotWidthOf } from "./geometry.js";

const KEY_ZOOM = 0.75;
const KEY_PAN = 0.2;

export function attachControls(timeline) {
  const { canvas, frame, pointer } = timeline;

  function localPoint(event) {
    const box = canvas.getBoundingClientRect();
    return [event.clientX - box.left, event.clientY - box.top];
  }

  function onWheel(event) {
    const plotWidth = plotWidthOf(timeline.width);
    const unit = event.deltaMode === 1 ? 16 : event.deltaMode === 2 ? plotWidth : 1;
    const dx = event.deltaX * unit;
    const dy = event.deltaY * unit;
    if (event.ctrlKey || event.metaKey) {
      event.preventDefault();
      const [x] = localPoint(event);
      timeline.zoom(Math.exp(Math.max(Math.min(dy, 200), -200) * 0.002), Math.max(x, LABEL_WIDTH));
    } else if (event.shiftKey || Math.abs(dx) > Math.abs(dy)) {
      const delta = Math.abs(dx) > Math.abs(dy) ? dx : dy;
      if (!delta) return;
      event.preventDefault();
      timeline.pan(Math.max(Math.min(delta, 400), -400) / plotWidth);
    }
  }

  function onKey(event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const key = event.key.toLowerCase();
    const at = pointer.x;
    if (key === "w") timeline.zoom(KEY_ZOOM, at);
    else if (key === "s") timeline.zoom(1 / KEY_ZOOM, at);
    else if (key === "a") timeline.pan(-KEY_PAN);
    else if (key === "d") timeline.pan(KEY_PAN);
    else if (key === "f" || key === "0") timeline.fit();
    else if (key === "arrowright" || key === "arrowleft") timeline.step(key === "arrowright" ? 1 : -1);
    else if (key === "escape" && pointer.measure) {
      pointer.measure = null;
      timeline.drawCursor();
    } else return;
    // handled here: not a notebook shortcut, not a page scroll
    event.preventDefault();
    event.stopPropagation();
  }

  function onDown(event) {
    if (event.button !== 0) return;
    event.preventDefault();
    frame.focus({ preventScroll: true });
    const [x] = localPoint(event);
    const measure = (event.shiftKey || pointer.ruler) && x >= LABEL_WIDTH;
    pointer.drag = { x, view: { ...timeline.view }, moved: false, measure };
  }

  function onMove(event) {
    const [x, y] = localPoint(event);
    pointer.x = x >= LABEL_WIDTH ? x : null;
    const drag = pointer.drag;
    if (drag && !(event.buttons & 1)) pointer.drag = null; // released outside the canvas
    if (pointer.drag) {
      const dx = x - drag.x;
      if (Math.abs(dx) > 2) drag.moved = true;
      if (drag.moved) {
        timeline.tooltip.hidden = true;
        const g = timeline.geometry();
        if (drag.measure) {
          const edge = Math.min(Math.max(x, LABEL_WIDTH), timeline.width);
          pointer.measure = { t0: g.timeOf(drag.x), t1: g.timeOf(edge) };
          timeline.drawCursor();
        } else {
          const shift = (dx / g.plotWidth) * (drag.view.t1 - drag.view.t0);
          timeline.setView(drag.view.t0 - shift, drag.view.t1 - shift);
        }
        return;
      }
    }
    timeline.showTooltip(timeline.hit(x, y), x, y);
    timeline.drawCursor();
  }

  function onUp(event) {
    const wasDrag = pointer.drag && pointer.drag.moved;
    pointer.drag = null;
    if (wasDrag) return;
    if (pointer.measure) {
      pointer.measure = null;
      timeline.drawCursor();
    }
    const [x, y] = localPoint(event);
    timeline.select(timeline.hit(x, y));
  }

  function onLeave() {
    timeline.tooltip.hidden = true;
    pointer.drag = null;
    pointer.x = null;
    timeline.drawCursor();
  }

  canvas.addEventListener("wheel", onWheel, { passive: false });
  canvas.addEventListener("mousedown", onDown);
  canvas.addEventListener("mousemove", onMove);
  canvas.addEventListener("mouseup", onUp);
  canvas.addEventListener("mouseleave", onLeave);
  canvas.addEventListener("dblclick", () => timeline.fit());
  frame.addEventListener("keydown", onKey);
}
