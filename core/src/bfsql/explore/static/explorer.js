// bfsql explore: search a graph and draw its neighbourhoods.
// Every read goes through the server's tools (POST api/call/TOOL): the same validation,
// budgets and truncation notes as an MCP client gets. Graph text is only ever set as text.

const $ = (selector) => document.querySelector(selector);
const DEFAULT_LIMIT = 200;
const SEARCH_LIMIT = 20;
const DETAIL_RANK = { "not shown": 0, stub: 1, "named stub": 2, clipped: 3, full: 4 };
const NOT_SHOWN = "?";

const state = {
  styles: new Map(),    // entity type -> {fill, text, shape}, as the server's type_style() gives them
  view: null,           // what is drawn and searched: seeds, controls, query (mirrors the URL)
  selected: null,
  busy: 0,
  drawing: 0,           // counts drawings: an answer that arrives after a newer drawing began is dropped
  graph: new URLSearchParams(location.search).get("graph") || "",  // several graphs served: the one shown
};
let cy = null;

// -- small helpers -------------------------------------------------------------------

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) if (child != null) node.append(child);
  return node;
}

// The server has the one mapping from types to colours and shapes (the diagram exports use it too).
async function learnStyles(types) {
  const missing = [...new Set(types)].filter((type) => !state.styles.has(type));
  if (!missing.length) return;
  const query = new URLSearchParams(missing.map((type) => ["type", type]));
  const response = await fetch(`api/type-styles?${query}`);
  if (!response.ok) throw new ToolError(`Could not read the types' colours (${response.status}).`);
  for (const [type, style] of Object.entries(await response.json())) state.styles.set(type, style);
}

function styleOf(type) {
  return state.styles.get(type) || { fill: "#dddddd", text: "#000000", shape: "ellipse" }; // until learnt
}

function swatch(type) {
  const dot = el("span", { class: "swatch", dataset: { shape: styleOf(type).shape } });
  dot.style.background = styleOf(type).fill;
  return dot;
}

function integerOr(raw, fallback) {
  if (raw == null || raw === "") return fallback;
  return /^\d+$/.test(raw) ? Number(raw) : raw; // anything else goes to the tool, which explains it
}

async function working(task) {
  state.busy += 1;
  document.body.dataset.busy = "1";
  try {
    return await task();
  } finally {
    state.busy -= 1;
    if (state.busy === 0) document.body.dataset.busy = "0";
  }
}

class ToolError extends Error {}

async function call(tool, args, graph = state.graph) {
  const payload = graph ? { ...args, graph } : args;
  const response = await fetch(`api/call/${tool}`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(payload),
  });
  const text = await response.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ToolError(`${tool} failed (${response.status}): ${text || response.statusText}`);
  }
  if (!response.ok) throw new ToolError(body.error || `${tool} failed (${response.status})`);
  return body;
}

function showMessage(text) {
  const box = $("#message");
  box.textContent = text || "";
  box.hidden = !text;
}

function setStatus(text) {
  $("#status").textContent = text;
}

// -- the view and the URL ------------------------------------------------------------

function viewFromUrl() {
  const params = new URLSearchParams(location.search);
  return {
    seeds: params.getAll("seed").filter(Boolean),
    q: params.get("q") || "",
    qtype: params.get("qtype") || "",
    hops: integerOr(params.get("hops"), 1),
    types: params.getAll("types"),
    predicates: params.getAll("predicates"),
    exclude: params.getAll("exclude"),
    limit: integerOr(params.get("limit"), DEFAULT_LIMIT),
  };
}

function writeUrl(view, push) {
  const params = new URLSearchParams();
  if (state.graph) params.set("graph", state.graph);
  for (const seed of view.seeds) params.append("seed", seed);
  if (view.q) params.set("q", view.q);
  if (view.q && view.qtype) params.set("qtype", view.qtype);
  if (view.seeds.length) {
    params.set("hops", view.hops);
    for (const name of ["types", "predicates", "exclude"]) for (const v of view[name]) params.append(name, v);
    if (view.limit !== DEFAULT_LIMIT) params.set("limit", view.limit);
  }
  const query = params.toString();
  const url = location.pathname + (query ? `?${query}` : "");
  if (url !== location.pathname + location.search) history[push ? "pushState" : "replaceState"](null, "", url);
}

function selectValues(select, values) {
  for (const value of values) {
    if (![...select.options].some((o) => o.value === value)) select.append(el("option", { value }, value));
  }
  for (const option of select.options) option.selected = values.includes(option.value);
}

function showView(view) {
  $("#q").value = view.q;
  selectValues($("#qtype"), view.qtype ? [view.qtype] : [""]);
  $("#seeds").value = view.seeds.join(" ");
  $("#hops").value = view.hops;
  selectValues($("#types"), view.types);
  selectValues($("#predicates"), view.predicates);
  selectValues($("#exclude"), view.exclude);
  $("#limit").value = view.limit;
}

function viewFromControls() {
  const chosen = (id) => [...$(id).selectedOptions].map((o) => o.value);
  return {
    ...state.view,
    seeds: $("#seeds").value.split(/\s+/).filter(Boolean),
    hops: integerOr($("#hops").value.trim(), 1),
    types: chosen("#types"),
    predicates: chosen("#predicates"),
    exclude: chosen("#exclude"),
    limit: integerOr($("#limit").value.trim(), DEFAULT_LIMIT),
  };
}

function bfsArguments(view, seeds) {
  const args = { seeds, max_hops: view.hops, limit: view.limit };
  if (view.types.length) args.node_types = view.types;
  if (view.predicates.length) args.predicates = view.predicates;
  if (view.exclude.length) args.exclude_node_types = view.exclude;
  return args;
}

// -- drawing -------------------------------------------------------------------------

const LABEL_PX = 12;         // node labels on screen, in pixels, at every zoom
const EDGE_LABEL_PX = 11;    // edge labels (predicates) likewise
const LABEL_WIDTH = 130;     // node labels wider than this (on screen) wrap onto more lines; none is cut
const PADDING = 30;          // between the nodes and the canvas's edge, in screen pixels (room for labels)
const MAX_STRETCH = 4;       // how far a small drawing is spread to fill the canvas, in each direction
const MAX_DEFAULT_ZOOM = 1.5;
const SEED_PX = 26;          // a seed's size on screen, at every zoom: it never shrinks to a dot
const HALO_PX = 8;           // the seed's halo around it, on screen
const HUBS = 12;             // the best-connected nodes (degree >= HUB_DEGREE) always get a label ...
const HUB_DEGREE = 3;        // ... when one fits beside them without covering another label
const LABEL_GAP = 2;         // between a node and its label, and around a label, in screen pixels

// Where a node's label may go, in the order tried: below, above, right, left, then the corners.
// [class, horizontal side (-1 left, 0 centred, 1 right), vertical side (-1 above, 0 centred, 1 below)]
const LABEL_SPOTS = [["", 0, 1], ["label-t", 0, -1], ["label-r", 1, 0], ["label-l", -1, 0],
  ["label-br", 1, 1], ["label-bl", -1, 1], ["label-tr", 1, -1], ["label-tl", -1, -1]];
const SPOT_CLASSES = LABEL_SPOTS.map(([name]) => name).filter(Boolean).join(" ");
const HALIGN = { "-1": "left", 0: "center", 1: "right" };
const VALIGN = { "-1": "top", 0: "center", 1: "bottom" };

let screen = 1;              // model units per screen pixel (1 / zoom): what keeps sizes constant on screen
const px = (pixels) => () => pixels * screen;
const gap = (node) => (LABEL_GAP + (node.data("seed") ? HALO_PX : 0)) * screen;  // a seed's label clears its halo

const STYLE = [
  { selector: "node", style: {
    "background-color": "data(colour)", shape: "data(shape)", "border-width": 1, "border-color": "#555",
    label: "data(label)", "font-size": px(LABEL_PX), color: "#222", width: 22, height: 22,
    "text-valign": "bottom", "text-margin-y": gap, "text-wrap": "wrap", "text-max-width": px(LABEL_WIDTH),
    "text-background-color": "#fff", "text-background-opacity": 0.75, "text-background-padding": 1,
  } },
  ...LABEL_SPOTS.filter(([name]) => name).map(([name, h, v]) => ({ selector: `node.${name}`, style: {
    "text-halign": HALIGN[h], "text-valign": VALIGN[v], "text-margin-x": (node) => h * gap(node), "text-margin-y": (node) => v * gap(node),
  } })),
  // A seed is big on screen at every zoom, ringed by a halo and drawn above every other node.
  { selector: "node[?seed]", style: {
    "border-width": px(3), "border-color": "#111", width: px(SEED_PX), height: px(SEED_PX), "z-index": 8, "font-weight": "bold",
    "underlay-color": "#f5a300", "underlay-opacity": 0.6, "underlay-padding": px(HALO_PX), "underlay-shape": "ellipse",
  } },
  { selector: 'node[detail = "stub"], node[detail = "named stub"], node[detail = "not shown"]',
    style: { "border-style": "dashed", "border-width": 2 } },
  { selector: "node:selected", style: { "border-color": "#e6550d", "border-width": 5 } },
  { selector: "edge", style: {
    width: 1.5, "curve-style": "bezier", "line-color": "#9aa", "target-arrow-color": "#9aa",
    "target-arrow-shape": "triangle", "arrow-scale": 1.1, label: "data(predicate)", "font-size": px(EDGE_LABEL_PX),
    color: "#445", "text-rotation": "autorotate", "text-background-color": "#fff", "text-background-opacity": 0.85,
  } },
  { selector: "edge:selected", style: { "line-color": "#e6550d", "target-arrow-color": "#e6550d", width: 3 } },
  // A label that would cover another is hidden until there is room (zoom in) or its element is pointed at.
  { selector: ".quiet", style: { "text-opacity": 0, "text-background-opacity": 0 } },
  { selector: ".pointed, :selected", style: { "text-opacity": 1, "text-background-opacity": 0.9, "z-index": 9 } },
];

function nodeData(node) {
  const metadata = node.metadata;
  const name = (metadata && typeof metadata.name === "string" && metadata.name) || node.name || "";
  const detail = metadata == null ? (name ? "named stub" : "stub") : ("_clipped" in metadata ? "clipped" : "full");
  const { fill, shape } = styleOf(node.entity_type);
  return { id: node.id, type: node.entity_type, name, label: name || node.id, detail, colour: fill, shape };
}

function merge(answer, near) {
  const added = [];
  const origin = near ? cy.getElementById(near).position() : null;
  const place = (data) => {
    const existing = cy.getElementById(data.id);
    if (existing.nonempty()) {
      if (DETAIL_RANK[data.detail] > DETAIL_RANK[existing.data("detail")]) existing.data(data);
      return;
    }
    const position = origin ? { x: origin.x + (Math.random() - 0.5) * 60, y: origin.y + (Math.random() - 0.5) * 60 } : undefined;
    added.push(cy.add({ group: "nodes", data, position }));
  };
  for (const node of answer.nodes) place(nodeData(node));
  for (const edge of answer.edges) {
    for (const end of [edge.subject, edge.object]) {
      const { fill, shape } = styleOf(NOT_SHOWN);
      place({ id: end, type: NOT_SHOWN, name: "", label: end, detail: "not shown", colour: fill, shape });
    }
    const id = JSON.stringify([edge.subject, edge.predicate, edge.object]);
    if (cy.getElementById(id).empty()) {
      cy.add({ group: "edges", data: { id, source: edge.subject, target: edge.object, predicate: edge.predicate } });
    }
  }
  markSeeds();
  return added.length;
}

function markSeeds() {
  const seeds = new Set(state.view.seeds);
  cy.nodes().forEach((node) => node.data("seed", seeds.has(node.id())));
}

// fCoSE (force-directed, from a spectral start) places the nodes: a fresh drawing from scratch, an
// expansion from the present positions. Then the drawing is fitted to the canvas and its labels placed.
function layout(fresh) {
  if (cy.nodes().empty()) return;
  sizeLabels(1);  // the layout leaves room for labels as they are at zoom 1
  cy.layout({
    name: "fcose", quality: fresh ? "default" : "proof", randomize: fresh, animate: false, fit: false,
    nodeDimensionsIncludeLabels: true, packComponents: false, nodeSeparation: 90,
    idealEdgeLength: () => 70, nodeRepulsion: () => 9000, numIter: 2500,
  }).run();
  fillCanvas();
}

const FRESH = { includeOverlays: false, useCache: false };  // bounding boxes after a style change
const BODIES = { ...FRESH, includeLabels: false };

// A force-directed drawing is round, and its size follows the graph rather than the canvas. Stretch
// the node positions to the canvas's proportions, and spread a small drawing out to the canvas's
// size (each at most MAX_STRETCH), then zoom the nodes (not their labels: most labels of a big
// drawing wait for room) to fill the canvas less PADDING, which leaves room for the labels at the rim.
function fillCanvas() {
  const nodes = cy.nodes();
  const box = nodes.boundingBox(BODIES);
  const room = { w: cy.width() - 2 * PADDING, h: cy.height() - 2 * PADDING };
  const span = { w: Math.max(box.w - 22, 1), h: Math.max(box.h - 22, 1) };  // between node centres
  let sx = 1, sy = 1;
  if (span.w > 1 && span.h > 1) {
    const wide = (room.w / room.h) / (span.w / span.h);  // > 1: the drawing is narrower than the canvas
    if (wide > 1) sx = Math.min(MAX_STRETCH, wide);
    else sy = Math.min(MAX_STRETCH, 1 / wide);
  }
  const grow = Math.min(room.w / (span.w * sx), room.h / (span.h * sy), MAX_STRETCH / Math.max(sx, sy));
  if (grow > 1) {
    sx *= grow;
    sy *= grow;
  }
  const middle = { x: (box.x1 + box.x2) / 2, y: (box.y1 + box.y2) / 2 };
  nodes.positions((node) => {
    const { x, y } = node.position();
    return { x: middle.x + (x - middle.x) * sx, y: middle.y + (y - middle.y) * sy };
  });
  fitNodes();
  declutter();
}

// Zoom and pan so that the nodes' bodies fill the canvas less PADDING (seeds, sized on screen, after
// a second look at the new zoom).
function fitNodes() {
  for (let round = 0; round < 2; round += 1) {
    const box = cy.nodes().boundingBox(BODIES);
    const zoom = Math.min((cy.width() - 2 * PADDING) / Math.max(box.w, 1),
      (cy.height() - 2 * PADDING) / Math.max(box.h, 1), MAX_DEFAULT_ZOOM);
    const middle = { x: (box.x1 + box.x2) / 2, y: (box.y1 + box.y2) / 2 };
    cy.viewport({ zoom, pan: { x: cy.width() / 2 - zoom * middle.x, y: cy.height() / 2 - zoom * middle.y } });
    sizeLabels();
  }
}

// Labels, seeds and gaps keep their size on screen at every zoom (the drawing grows and shrinks under them).
function sizeLabels(zoom = cy.zoom()) {
  screen = 1 / zoom;
  cy.style().update();
}

function overlaps(a, b) {
  return a.x1 < b.x2 && b.x1 < a.x2 && a.y1 < b.y2 && b.y1 < a.y2;
}

function grown(box, by) {
  return { x1: box.x1 - by, y1: box.y1 - by, x2: box.x2 + by, y2: box.y2 + by };
}

// Where a node's label lands in a spot around BODY (its body's box), from LABEL: its label's box in the
// default spot (below), whose distance from the body is the same on every side. With a margin of
// half a gap around it.
function spotBox(body, label, [, side, level]) {
  const { w, h } = label;
  const offset = label.y1 - body.y2;
  const mx = (body.x1 + body.x2) / 2, my = (body.y1 + body.y2) / 2;
  const x1 = side < 0 ? body.x1 - offset - w : side > 0 ? body.x2 + offset : mx - w / 2;
  const y1 = level < 0 ? body.y1 - offset - h : level > 0 ? body.y2 + offset : my - h / 2;
  return grown({ x1, y1, x2: x1 + w, y2: y1 + h }, LABEL_GAP * screen / 2);
}

// Where a seed's label lands in a spot, measured (a seed's halo and border make it a special case).
function measuredSpot(node, [name]) {
  node.removeClass(SPOT_CLASSES).addClass(name);
  const box = node.boundingBox({ ...FRESH, includeNodes: false, includeEdges: false });
  node.removeClass(SPOT_CLASSES);
  return grown(box, LABEL_GAP * screen / 2);
}

// Label ranks: seeds first, then the hubs (the HUBS best-connected nodes of degree >= HUB_DEGREE),
// then the others by degree, then by name.
function rankedNodes() {
  const byDegree = (a, b) => (b.degree() - a.degree()) || a.data("label").localeCompare(b.data("label"));
  const nodes = cy.nodes().toArray().sort((a, b) => (b.data("seed") - a.data("seed")) || byDegree(a, b));
  const hubs = new Set(cy.nodes().toArray().filter((node) => !node.data("seed") && node.degree() >= HUB_DEGREE)
    .sort(byDegree).slice(0, HUBS));
  return nodes.map((node) => ({ node, seed: Boolean(node.data("seed")), hub: hubs.has(node) }));
}

// Show the labels that fit, most important first, each in the first spot around its node (below,
// above, beside, at a corner) where it covers no label already shown, stays on the canvas, and
// covers no node ranked before it (for a leaf: no node at all). Labels that fit nowhere are hidden
// (class "quiet") until zooming in makes room or the node is pointed at. A seed's label is always
// shown, in its least crowded spot; a hub's label may cover nodes, never another label.
function declutter() {
  cy.elements().removeClass(`quiet ${SPOT_CLASSES}`);
  const ranked = rankedNodes();
  const bodies = ranked.map(({ node, seed }) => grown(node.boundingBox(BODIES), seed ? HALO_PX * screen : 0));
  const shown = [];
  const spots = ranked.map((entry, rank) => labelSpot(entry, rank, bodies, shown));
  const labelBox = (edge) => edge.boundingBox({ ...FRESH, includeNodes: false, includeEdges: false });
  const quietEdges = cy.edges().filter((edge) => {
    const box = labelBox(edge);
    if (shown.some((other) => overlaps(box, other)) || bodies.some((body) => overlaps(box, body))) return true;
    shown.push(box);
    return false;
  });
  cy.batch(() => {
    ranked.forEach(({ node }, rank) => node.addClass(spots[rank] ?? "quiet"));
    quietEdges.addClass("quiet");
  });
}

// The spot (its class) for the label of the node ranked RANK, or null when it waits for room; a
// label shown is added to SHOWN. Covering a shown label costs most, then leaving the canvas, then
// each node covered.
function labelSpot({ node, seed, hub }, rank, bodies, shown) {
  const view = cy.extent();
  const blocking = bodies.filter((_, i) => i !== rank && (seed || hub || i < rank || node.degree() <= 2));
  const cost = (box) => 1000 * shown.filter((other) => overlaps(box, other)).length
    + 100 * Number(box.x1 < view.x1 || box.x2 > view.x2 || box.y1 < view.y1 || box.y2 > view.y2)
    + blocking.filter((body) => overlaps(box, body)).length;
  const below = seed ? null : node.boundingBox({ ...FRESH, includeNodes: false, includeEdges: false });
  let best = null;
  for (const spot of LABEL_SPOTS) {
    const box = seed ? measuredSpot(node, spot) : spotBox(node.boundingBox(BODIES), below, spot);
    const price = cost(box);
    if (best === null || price < best.price) best = { spot, box, price };
    if (price === 0) break;
  }
  if (!(seed || best.price === 0 || (hub && best.price < 100))) return null;
  shown.push(best.box);
  return best.spot[0];
}

function refreshPanels(answer) {
  $("#start-hint").hidden = cy.nodes().nonempty();
  renderLegend();
  cy.resize(); // the legend above the picture may have changed its height
  renderNodeList();
  const drawn = `Drawn: ${cy.nodes().length} nodes, ${cy.edges().length} edges.`;
  setStatus(answer
    ? `${drawn} Last answer: ${answer.nodes.length} of ${answer.node_count} nodes, ${answer.edges.length} of ${answer.edge_count} edges.`
    : drawn);
}

function renderLegend() {
  const counts = new Map();
  cy.nodes().forEach((node) => counts.set(node.data("type"), (counts.get(node.data("type")) || 0) + 1));
  const legend = $("#legend");
  legend.replaceChildren();
  if (!counts.size) return;
  const types = [...counts.keys()].sort();
  legend.append(
    el("ul", {}, ...types.map((type) => el("li", { dataset: { type } }, swatch(type),
      `${type === NOT_SHOWN ? "not in the answer" : type} (${counts.get(type)})`))),
    el("div", { class: "key" }, "thick border and halo: seed · dashed: stub · arrows: subject → object, labelled by predicate"),
  );
}

function renderNodeList() {
  const seeds = new Set(state.view.seeds);
  const nodes = cy.nodes().map((node) => node.data()).sort((a, b) =>
    (seeds.has(b.id) - seeds.has(a.id)) || a.label.localeCompare(b.label, undefined, { sensitivity: "base" }));
  $("#node-list").replaceChildren(...nodes.map((data) => el("li", {
    dataset: { id: data.id, text: `${data.label} ${data.id} ${data.type}`.toLowerCase() },
    class: data.id === state.selected ? "selected" : "",
    onclick: () => select(data.id, true),
  }, swatch(data.type), el("strong", {}, data.name || data.id), " ", el("span", { class: "id" }, data.id), " ",
  el("span", { class: "meta" }, `${data.type === NOT_SHOWN ? "not in the answer" : data.type} · ${data.detail}${seeds.has(data.id) ? " · seed" : ""}`))));
  $("#node-count").textContent = `(${nodes.length})`;
  filterNodeList();
}

function filterNodeList() {
  const wanted = $("#node-filter").value.trim().toLowerCase();
  for (const item of $("#node-list").children) item.hidden = Boolean(wanted) && !item.dataset.text.includes(wanted);
}

// -- notes ---------------------------------------------------------------------------

function clearNotes() {
  $("#notes").replaceChildren();
  $("#note-count").textContent = "";
}

function addNotes(source, truncated, warnings, more) {
  const list = $("#notes");
  for (const note of truncated || []) {
    const text = `truncated (${note.reason}${note.count ? `, ${note.count} items` : ""}): ${note.detail} ${note.hint}`;
    const item = el("li", { class: "note", dataset: { reason: note.reason } }, el("span", { class: "source" }, source), text);
    if (more && note.next_offset != null) {
      item.append(" ", el("button", { type: "button", class: "more", onclick: (event) => {
        event.target.remove();
        more(note.next_offset);
      } }, "Load more"));
    }
    list.append(item);
  }
  for (const warning of warnings || []) {
    list.append(el("li", { class: "warning" }, el("span", { class: "source" }, source), `warning: ${warning}`));
  }
  $("#note-count").textContent = list.children.length ? `(${list.children.length})` : "";
}

// -- actions -------------------------------------------------------------------------

async function traverse(args, source, near) {
  const drawing = state.drawing;
  const answer = await call("bfs_query", args);
  await learnStyles(answer.nodes.map((node) => node.entity_type));
  if (drawing !== state.drawing) return 0;
  const added = merge(answer, near);
  refreshPanels(answer);
  layout(!near && args.offset == null);
  const more = (offset) => working(() => traverse({ ...args, offset }, `${source}, from node ${offset}`, null)
    .catch((error) => showMessage(error.message)));
  addNotes(source, answer.truncated, answer.warnings, more);
  return added;
}

async function draw(view) {
  state.drawing += 1;
  cy.elements().remove();
  clearNotes();
  state.selected = null;
  refreshPanels(null);
  if (!view.seeds.length) return;
  try {
    await traverse(bfsArguments(view, view.seeds), `bfs_query from ${view.seeds.join(", ")}`, null);
    showMessage("");
  } catch (error) {
    showMessage(`Could not draw the neighbourhood of ${view.seeds.join(", ")}: ${error.message}`);
    setStatus("Nothing drawn.");
    if (/unknown entity/i.test(error.message)) await suggest(view.seeds[0]);
  }
}

async function expand(id) {
  return working(async () => {
    try {
      const added = await traverse(bfsArguments(state.view, [id]), `bfs_query from ${id} (expanded)`, id);
      if (!state.view.seeds.includes(id)) {
        state.view = { ...state.view, seeds: [...state.view.seeds, id] };
        $("#seeds").value = state.view.seeds.join(" ");
        writeUrl(state.view, false);
        markSeeds();
        renderNodeList();
      }
      setStatus(`${$("#status").textContent} Expanded ${id}: ${added} new nodes.`);
    } catch (error) {
      showMessage(`Could not expand ${id}: ${error.message}`);
    }
  });
}

function renderValue(value) {
  if (value == null) return "";
  if (Array.isArray(value)) return value.every((v) => typeof v !== "object") ? value.join(", ") : JSON.stringify(value);
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

async function select(id, fromList) {
  if (state.selected === id) return;
  state.selected = id;
  const node = cy.getElementById(id);
  cy.nodes().unselect();
  node.select();
  if (fromList && node.nonempty()) cy.animate({ center: { eles: node } }, { duration: 200 });
  for (const item of $("#node-list").children) item.classList.toggle("selected", item.dataset.id === id);
  const details = $("#details");
  details.replaceChildren(el("p", { class: "hint" }, `Loading ${id}…`));
  await working(async () => {
    try {
      const entity = await call("describe_entity", { id });
      await learnStyles([entity.entity_type]);
      if (state.selected !== id) return;
      const { id: _, entity_type: type, _clipped: clipped, ...fields } = entity;
      details.replaceChildren(
        el("h3", {}, swatch(type), fields.name ? String(fields.name) : id),
        el("p", {}, el("code", {}, id), ` · ${type}`),
        el("div", { class: "actions" },
          el("button", { type: "button", id: "expand", onclick: () => expand(id) }, "Expand"),
          el("button", { type: "button", id: "open-seed", onclick: () => open([id]) }, "Open as seed"),
        ),
        fieldList(fields),
      );
      if (clipped) {
        details.append(el("p", { class: "hint" }, `Clipped to fit the answer budget: ${Object.entries(clipped)
          .map(([key, length]) => `${key} (${length})`).join(", ")}.`));
      }
    } catch (error) {
      details.replaceChildren(el("p", { class: "hint" }, `No metadata for ${id}: ${error.message}`));
    }
  });
}

function fieldList(fields) {
  return el("dl", {}, ...Object.entries(fields).flatMap(([key, value]) => [el("dt", {}, ...breakable(key)),
    el("dd", {}, renderValue(value))]));
}

// A key may wrap after _ . - / and between camelCase words, never inside a word.
function breakable(key) {
  return key.split(/(?<=[_.\-/])|(?<=[a-z])(?=[A-Z])/).flatMap((part, i) => (i ? [el("wbr"), part] : [part]));
}

async function selectEdge(edge) {
  const { source, predicate, target } = edge.data();
  state.selected = edge.id();
  const label = (id) => cy.getElementById(id).data("label") || id;
  const details = $("#details");
  details.replaceChildren(el("p", { class: "hint" }, `Loading ${source} ${predicate} ${target}…`));
  await working(async () => {
    try {
      const [found] = (await call("describe_edges", { edges: [[source, predicate, target]] })).items;
      if (state.selected !== edge.id()) return;
      details.replaceChildren(
        el("h3", {}, `${label(source)} —${predicate}→ ${label(target)}`),
        el("p", {}, el("code", {}, source), ` ${predicate} `, el("code", {}, target)),
        found && Object.keys(found.metadata).length ? fieldList(found.metadata) : el("p", { class: "hint" }, "No metadata."),
      );
    } catch (error) {
      details.replaceChildren(el("p", { class: "hint" }, `No metadata for this edge: ${error.message}`));
    }
  });
}

// A list answer is one document: its items, and beside them the page and what was cut.
function listNotes(answer) {
  const notes = (answer.truncated || []).map((note) => `${note.detail} ${note.hint}`);
  const page = answer.page;
  if (page && page.next_offset != null) notes.unshift(`Showing ${page.returned} of ${page.total} matches.`);
  return notes;
}

async function renderHits(title, answer) {
  const hits = answer.items;
  await learnStyles(hits.map((hit) => hit.entity_type));
  $("#hits-panel").hidden = false;
  $("#hits-panel h2").textContent = title;
  const items = hits.map((hit) => el("li", { dataset: { id: hit.id }, onclick: () => open([hit.id]) },
    swatch(hit.entity_type), el("strong", {}, hit.name || hit.id), " ", el("span", { class: "id" }, hit.id), " ",
    el("span", { class: "meta" }, `${hit.entity_type}${typeof hit.score === "number" ? ` · score ${hit.score.toFixed(3)}` : ""}`
      + `${hit.rankers ? ` · ${hit.rankers.join("+")}` : ""}`)));
  $("#search-hits").replaceChildren(...(items.length ? items : [el("li", { class: "hint" }, "No entity matches.")]));
  for (const note of listNotes(answer)) $("#search-hits").append(el("li", { class: "hint" }, note));
}

async function search(view) {
  if (!view.q) {
    $("#hits-panel").hidden = true;
    return;
  }
  try {
    const args = { query: view.q, limit: SEARCH_LIMIT };
    if (view.qtype) args.node_types = [view.qtype];
    await renderHits(`Search hits for “${view.q}”`, await call("search_entities", args));
  } catch (error) {
    showMessage(`Search failed: ${error.message}`);
    $("#hits-panel").hidden = true;
  }
}

async function suggest(seed) {
  const text = seed.split(/[:/#]/).filter(Boolean).pop();
  if (!text) return;
  try {
    await renderHits(`Did you mean (entities matching “${text}”)`, await call("search_entities", { query: text, limit: 10 }));
  } catch {
    // A suggestion is a courtesy: the error above already says what went wrong.
  }
}

async function open(seeds) {
  state.view = { ...viewFromControls(), seeds };
  showView(state.view);
  writeUrl(state.view, true);
  await working(() => draw(state.view));
}

async function applyUrl() {
  state.view = viewFromUrl();
  showView(state.view);
  showMessage("");
  await working(() => Promise.all([search(state.view), draw(state.view)]));
}

// -- start ---------------------------------------------------------------------------

async function copyNodes() {
  const rows = [...$("#node-list").children].filter((item) => !item.hidden).map((item) => {
    const data = cy.getElementById(item.dataset.id).data();
    return [data.id, data.type, data.name].join("\t");
  });
  const text = rows.join("\n");
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    const area = el("textarea", {}, text);
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
  setStatus(`Copied ${rows.length} nodes (id, type, name; tab-separated).`);
}

async function start() {
  cy = cytoscape({ container: $("#graph"), style: STYLE, minZoom: 0.1, maxZoom: 2.5 });
  window.bfsqlExplorer = { cy }; // for the browser console (and the browser tests)
  let relabel = null;
  cy.on("viewport", () => {  // zoomed or panned: labels wait for room on the canvas, and find it there
    clearTimeout(relabel);
    relabel = setTimeout(() => { sizeLabels(); declutter(); }, 120);
  });
  cy.on("mouseover", "node", (event) => event.target.union(event.target.connectedEdges()).addClass("pointed"));
  cy.on("mouseover", "edge", (event) => event.target.addClass("pointed"));
  cy.on("mouseout", "node, edge", () => cy.elements(".pointed").removeClass("pointed"));
  cy.on("tap", "node", (event) => select(event.target.id(), false));
  cy.on("dbltap", "node", (event) => expand(event.target.id()));
  cy.on("tap", "edge", (event) => selectEdge(event.target));
  $("#search").addEventListener("submit", (event) => {
    event.preventDefault();
    state.view = { ...viewFromControls(), q: $("#q").value.trim(), qtype: $("#qtype").value };
    writeUrl(state.view, true);
    working(() => search(state.view));
  });
  $("#controls").addEventListener("submit", (event) => {
    event.preventDefault();
    open(viewFromControls().seeds);
  });
  $("#node-filter").addEventListener("input", filterNodeList);
  $("#copy-nodes").addEventListener("click", copyNodes);
  window.addEventListener("popstate", applyUrl);

  await working(async () => {
    const problem = await readSchema();
    await applyUrl();
    if (problem) showMessage(problem);
  });
}

// A description's first clause, at most 60 characters: a selector option stays one short line.
function headline(text) {
  const clause = text.split(/[.:](\s|$)/)[0];
  return clause.length > 60 ? clause.slice(0, 59) + "…" : clause;
}

function showGraphs(graphs) {
  const select = $("#graph-choice");
  for (const graph of graphs) {
    const label = graph.name + (graph.description ? ` — ${headline(graph.description)}` : "") +
      (graph.available ? "" : " (unavailable)");
    select.append(el("option", { value: graph.name, title: graph.description || "" }, label));
  }
  select.value = state.graph || graphs.find((graph) => graph.default).name;
  select.hidden = false;
  select.addEventListener("change", () => {
    location.search = new URLSearchParams({ graph: select.value }).toString();  // a new graph: a fresh page
  });
}

async function readSchema() {
  try {
    const listing = await call("describe_schema", {}, "");  // the default graph's, and the graphs when several
    if (listing.graphs) showGraphs(listing.graphs);
    const schema = state.graph ? await call("describe_schema", {}) : listing;
    await learnStyles([...schema.entity_types, NOT_SHOWN]);
    for (const type of schema.entity_types) {
      for (const id of ["#qtype", "#types", "#exclude"]) $(id).append(el("option", { value: type }, type));
    }
    for (const predicate of schema.predicates) $("#predicates").append(el("option", { value: predicate }, predicate));
    $("#start-types").replaceChildren(`This graph's entity types: ${schema.entity_types.join(", ")}.`);
    return null;
  } catch (error) {
    return `Could not read the graph's schema: ${error.message}`;
  }
}

start();
