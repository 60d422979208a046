// Boots a static luisa_nb page (report, nbconvert, _repr_html_): decodes the embedded
// models, renders each mount with its widget module's default export, given a small
// stand-in for anywidget's model (get, set, on, off, save_changes, send), and links
// selection across them with the rules the Python widgets apply in traitlets observers:
//   - choosing a hazard selects both of its commands (selected_command = the later one);
//   - choosing a command outside the chosen hazard drops the hazard; none drops both;
//   - the inspector shows the upload of the chosen hazard, else the chosen upload.
// Exports boot(root, load): root holds the models (a JSON script element of class
// "lnb-models") and the mounts.

const SELECTION = ["selected_command", "selected_hazard", "selected_commands"];

function decodeBase64(text) {
  if (typeof Uint8Array.fromBase64 === "function") return Uint8Array.fromBase64(text);
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

class Selection {
  constructor(hazards) {
    this.hazards = hazards;
    this.state = { selected_command: null, selected_hazard: null, selected_commands: [] };
    this.models = [];
    this.listeners = [];
  }

  apply(changes) {
    let command = "selected_command" in changes ? changes.selected_command : this.state.selected_command;
    let hazard = "selected_hazard" in changes ? changes.selected_hazard : this.state.selected_hazard;
    if (hazard !== null && hazard !== undefined && !this.hazards[hazard]) hazard = null;
    if ("selected_hazard" in changes && hazard !== null) {
      const ids = this.hazards[hazard].command_ids;
      command = ids[ids.length - 1];
    } else if ("selected_command" in changes) {
      if (command === null || command === undefined) {
        command = null;
        hazard = null;
      } else if (hazard !== null && !this.hazards[hazard].command_ids.includes(command)) {
        hazard = null;
      }
    }
    const commands = hazard !== null ? [...this.hazards[hazard].command_ids] : command === null ? [] : [command];
    const before = this.state;
    this.state = { selected_command: command, selected_hazard: hazard, selected_commands: commands };
    const changed = SELECTION.filter((key) => JSON.stringify(before[key]) !== JSON.stringify(this.state[key]));
    if (!changed.length) return;
    for (const model of this.models) for (const key of changed) model.emit(`change:${key}`, this.state[key]);
    for (const listener of this.listeners) listener(this.state, changed);
  }
}

class StaticModel {
  constructor(state, selection) {
    this.state = state;
    this.selection = selection;
    this.pending = {};
    this.handlers = new Map();
    selection.models.push(this);
  }

  get(key) {
    return SELECTION.includes(key) ? this.selection.state[key] : this.state[key];
  }

  set(key, value) {
    this.pending[key] = value;
  }

  save_changes() {
    const changes = this.pending;
    this.pending = {};
    const selected = {};
    for (const [key, value] of Object.entries(changes)) {
      if (SELECTION.includes(key)) {
        selected[key] = value;
      } else {
        this.state[key] = value;
        this.emit(`change:${key}`, value);
      }
    }
    if (Object.keys(selected).length) this.selection.apply(selected);
  }

  on(name, handler) {
    if (!this.handlers.has(name)) this.handlers.set(name, new Set());
    this.handlers.get(name).add(handler);
  }

  off(name, handler) {
    if (!name) this.handlers.clear();
    else if (!handler) this.handlers.delete(name);
    else if (this.handlers.has(name)) this.handlers.get(name).delete(handler);
  }

  emit(name, ...values) {
    for (const handler of this.handlers.get(name) || []) handler(...values);
  }

  send(content) {
    const reply = {
      type: "error",
      request: content && content.request,
      message: "this static page has no kernel to ask for more data; open the trace in a notebook",
    };
    queueMicrotask(() => this.emit("msg:custom", reply, []));
  }
}

export async function boot(root, load) {
  const began = performance.now();
  const spec = JSON.parse(root.querySelector("script.lnb-models").textContent);
  const selection = new Selection(spec.hazards || []);
  const models = {};
  for (const [id, entry] of Object.entries(spec.models)) {
    const state = { ...entry.state };
    if (state.hazards === "$hazards") state.hazards = spec.hazards;
    for (const [key, text] of Object.entries(entry.buffers || {})) {
      state[key] = new DataView(decodeBase64(text).buffer);
    }
    models[id] = new StaticModel(state, selection);
  }
  const decodedMs = performance.now() - began;
  const modules = {};
  const get = async (name) => modules[name] || (modules[name] = await load(name));
  for (const mount of root.querySelectorAll("[data-lnb-view]")) {
    const module = await get(mount.dataset.lnbView);
    mount.replaceChildren();
    module.default.render({ model: models[mount.dataset.lnbModel], el: mount });
    mount.classList.add("lnb-live");
  }
  const inspector = root.querySelector("[data-lnb-inspector]");
  if (inspector) {
    const uploads = JSON.parse(inspector.dataset.lnbInspector);
    const body = inspector.querySelector(".lnb-inspector-body");
    const idle = [...body.childNodes];
    let cleanup = null;
    let shown = null;
    const show = async (state) => {
      let upload = null;
      if (state.selected_hazard !== null) upload = spec.hazards[state.selected_hazard].upload;
      else if (state.selected_command !== null) upload = state.selected_command;
      const id = upload !== null && uploads[upload] ? uploads[upload] : null;
      if (id === shown) return;
      shown = id;
      if (cleanup) cleanup();
      cleanup = null;
      inspector.dataset.command = id ? String(upload) : "";
      if (!id) {
        body.replaceChildren(...idle);
        if (upload !== null && spec.uploads_note) {
          body.prepend(Object.assign(document.createElement("p"), { className: "lnb-note", textContent: `#${upload}: ${spec.uploads_note}` }));
        }
        return;
      }
      const module = await get("diff");
      body.replaceChildren();
      cleanup = module.default.render({ model: models[id], el: body });
    };
    selection.listeners.push((state) => show(state));
    // The timeline opens on the first hazard: so does the inspector, on its upload.
    const opening = (spec.hazards || [])[0];
    if (opening && opening.upload !== null && opening.upload !== undefined) {
      show({ selected_hazard: null, selected_command: opening.upload });
    }
  }
  const registry = (globalThis.__luisa_nb = globalThis.__luisa_nb || {});
  registry.pages = registry.pages || [];
  registry.pages.push({ root, selection, models, decodedMs, bootMs: performance.now() - began });
  root.dataset.ready = "1";
  root.dataset.decodeMs = decodedMs.toFixed(3);
  root.dataset.bootMs = (performance.now() - began).toFixed(3);
}
