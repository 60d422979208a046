// The contents panel (ContentsPanel): the buffers the selected command touched, right
// before and right after it, each drawn by the diff view (diff.js) over a model of its
// own that reads the panel's model. ArrowLeft/ArrowRight step the selection from command
// to command (the ids in `steps`); the kernel replays and sends the new summary.
//
// Model keys read: summary (JSON: record_id, title, before, note, buffers[k].summary),
// heatmaps (one uint8 heatmap per buffer), steps, selected_command. Keys written:
// selected_command. A diff view's page request goes to the kernel with the buffer's index
// and the command id added; the reply echoes both and is handed to that view.

import diffView from "./diff.js";
import { toArrayBuffer } from "./shared/columns.js";
import { element } from "./shared/dom.js";
import { widget } from "./shared/widget.js";

// The model one diff view reads: the panel's summary and heatmap of buffer `index`.
function bufferModel(model, index, commandId) {
  const handlers = new Set();
  return {
    get(key) {
      const buffer = (model.get("summary").buffers || [])[index] || {};
      if (key === "summary") return buffer.summary;
      if (key === "heatmap") return (model.get("heatmaps") || [])[index];
      return undefined;
    },
    on(name, handler) {
      if (name === "msg:custom") handlers.add(handler);
    },
    off(name, handler) {
      handlers.delete(handler);
    },
    send(content) {
      model.send({ ...content, buffer: index, command_id: commandId });
    },
    deliver(message, buffers) {
      for (const handler of handlers) handler(message, buffers);
    },
  };
}

function render({ model, el }) {
  const root = element("div", "lnb-contents");
  root.tabIndex = 0; // focusable: the arrow keys step while it has focus
  el.replaceChildren(root);
  let views = [];

  function clear() {
    for (const view of views) if (view.cleanup) view.cleanup();
    views = [];
  }

  function build() {
    clear();
    const summary = model.get("summary") || {};
    const id = summary.record_id;
    root.dataset.command = id === null || id === undefined ? "" : String(id);
    const parts = [];
    if (id !== null && id !== undefined) {
      parts.push(element("div", "lnb-contents-title", summary.title));
      const since = summary.before === null || summary.before === undefined ? "the start" : `#${summary.before}`;
      if (!summary.note) parts.push(element("div", "lnb-note", `before: after ${since} · after: after #${id} · ←/→ step`));
    }
    if (summary.note) parts.push(element("p", "lnb-note", summary.note));
    (summary.buffers || []).forEach((buffer, index) => {
      const section = element("section", "lnb-contents-buffer");
      section.dataset.buffer = buffer.name;
      const mount = element("div");
      section.append(mount);
      parts.push(section);
      const sub = bufferModel(model, index, id);
      views.push({ model: sub, cleanup: diffView.render({ model: sub, el: mount }) });
    });
    root.replaceChildren(...parts);
  }

  function onMessage(message, buffers) {
    if (!message || message.command_id !== (model.get("summary") || {}).record_id) return;
    const view = views[message.buffer];
    if (view) view.model.deliver(message, buffers);
  }

  function step(direction) {
    const steps = new Int32Array(toArrayBuffer(model.get("steps")));
    if (!steps.length) return;
    const current = model.get("selected_command");
    let at = steps.indexOf(current);
    if (at < 0) {
      // a sync point or nothing: the next command after it, or the last before it
      const after = steps.findIndex((id) => id > (current ?? -Infinity));
      at = direction > 0 ? (after < 0 ? steps.length : after) - 1 : after < 0 ? steps.length : after;
    }
    const next = Math.min(Math.max(at + direction, 0), steps.length - 1);
    if (steps[next] === current) return;
    model.set("selected_command", steps[next]);
    model.save_changes();
  }

  function onKey(event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.shiftKey) return;
    if (event.key !== "ArrowLeft" && event.key !== "ArrowRight") return;
    if (event.target.closest && event.target.closest("select, input")) return;
    event.preventDefault();
    event.stopPropagation(); // not a notebook shortcut
    step(event.key === "ArrowRight" ? 1 : -1);
  }

  root.addEventListener("keydown", onKey);
  model.on("msg:custom", onMessage);
  model.on("change:summary", build);
  build();
  return () => {
    clear();
    root.removeEventListener("keydown", onKey);
    model.off("msg:custom", onMessage);
    model.off("change:summary", build);
  };
}

export default widget(render);
