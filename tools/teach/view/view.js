// ordo view: the page's script. It reads the data block below the page, draws the five sections, and
// redraws the attention when the reader switches positions on or off, picks a head, or points at a token.
// Plain DOM, SVG and canvas; no library.
//
// THE DATA ("ordo-view/1"), written by `ordo view` as JSON into <script id="ordo-data">. Letters: L layers,
// H heads, S pieces of a text, d model width, N the longer text's S. "with_pe" is the run with the
// positional encoding added; "without_pe" the ablation without it (the names of `ordo compare --json`).
//
//   format     "ordo-view/1"
//   decimals   4: attention, positions and inside are rounded to this many decimals
//              (as `ordo attention` prints them); every other number is the float as computed
//   model      { name, d_model, n_heads, head_dim, d_ff, n_layers, norm: "post-LN" | "pre-LN", final_norm,
//                activation, positional_encoding: "sinusoidal" | "learned" | "none", pe_layout, pe_base,
//                scale_embedding, masked_lm, training_length: the pieces per text it was trained on
//                (training.json's max_len) | null }: maps and section 4 mark it where a text is longer
//   texts      one or two (A, B) of {
//                text, pieces: [S] strings, ids: [S] ints,
//                with_pe:    { attention: [L][H][S][S] (row = query, column = key; a row sums to 1),
//                              predictions: [] | [{ position, top: [{ piece, id, probability }] }] },
//                without_pe: { the same, without the positional encoding },
//                outputs:    { cosine: [S], distance: [S], pooled_cosine }   h_t with vs without positions
//              }
//   positions  null (the model has none) | what the longer text (N pieces) met of them, by where they act;
//              encoding is model.positional_encoding:
//                added to the input (sinusoidal, learned):
//                  { kind: "table", encoding, count: N, table: [N][d] PE(t), similarity: [N][N] cos(PE(s), PE(t)) }
//                rope:  { kind: "rotation", encoding, count: N, equation, angles: [N][dh/2] t·θ_i }  (ordo pe --model's)
//                alibi: { kind: "bias", encoding, count: n ≤ 32, equation, bias: [H][n][n] b_ij as layer 0 added it }
//              equation: the engine's own text for its rotation or bias stage (engine/trace.h)
//   inside     null (POST /view: the live page asks POST /attention instead) | { text: 0, run: "with_pe", heads: [L][H] of
//                null (not carried: text A has more than 64 pieces, and only layer 0 head 0 is) | {
//                q, k: [S][dh], scaled_scores: [S][S] the softmax's input, weights: [S][S],
//                v: [S][dh] each piece's value, output: [S][dh] A·v, what the head hands on,
//                equations: { scaled_scores, weights, v, output },
//                rope:  null | { equation, q_before, k_before: [S][dh] q and k before the rotation },
//                alibi: null | { equation, bias: [S][S] b_ij, scores: [S][S] q·k/√dh before the bias },
//                parts: null | { content_content, content_position, position_content, position_position:
//                  [S][S] } the scaled scores split by where q and k come from (ordo attention --parts),
//                  exact in layer 0 of a post-LN model that adds its positions to the input, else null } } }
//              the chosen head of text A from the inside, with positions; numbers rounded to `decimals`.
//              POST /attention answers the same fields (and text, layer, head, positions, pieces, ids).
//   compare    null (one text) | { same_tokens_reordered, cosine: { with_pe, without_pe },
//                max_abs_diff: { with_pe, without_pe },
//                tokens: [{ piece, position_a, position_b, moved_with_pe, moved_without_pe }] }
//              tokens: one per piece of A when B is A reordered (the k-th occurrence of an id in A matched
//              with its k-th occurrence in B), else empty
//
//   live       true when `ordo serve` sent the page (absent in a page written by `ordo view --html`): the
//              page then shows text boxes, asks the server for fresh data as the reader types (POST /view,
//              the same JSON), and shows the chosen head from the inside (POST /attention: q, k, the
//              scaled scores q·k/√dh, their softmax, v and A·v; in layer 0 the scores split into content and position)
//
// For tests, window.ordoView = { data, state, setRun, shown, permutationGap, scriptMs, renderMs, updates,
// updateMs, inside }: scriptMs the time this script took to draw the page, renderMs the time from the start
// of loading until it was painted; live, updates counts the redraws from fresh data and updateMs is the last
// one's time from sending the request to painted.
"use strict";

const started = performance.now();
let data = JSON.parse(document.getElementById("ordo-data").textContent);
let model = data.model;
let texts = data.texts;
const RUNS = { with_pe: "with positions", without_pe: "without positions" };

const state = {
  run: "with_pe", // which run the attention shows
  layer: 0, // the head drawn large in section 2
  head: 0,
  hover: null, // { text, token }: the piece under the pointer, by its index in that text
  aOrder: false, // draw B's rows and columns in A's token order
};

// ---- small helpers ----------------------------------------------------------------------------------

const SVG_NS = "http://www.w3.org/2000/svg";

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== null && v !== undefined) e.setAttribute(k, v);
  e.append(...children.filter((c) => c !== null && c !== undefined));
  return e;
}

function svgEl(tag, attrs = {}, ...children) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  e.append(...children);
  return e;
}

const range = (n) => Array.from({ length: n }, (_, i) => i);
// A map's side near `px`, a whole number of screen pixels per cell when cells are 1 px or more.
const side = (px, cells) => (cells < px ? cells * Math.round(px / cells) : cells);
// A text for a heading: cut after 60 characters.
const quote = (t) => `${letter(t) ? letter(t) + ": " : ""}“${[...texts[t].text].length > 60 ? [...texts[t].text].slice(0, 57).join("") + "…" : texts[t].text}”`;
const fixed = (v) => v.toFixed(data.decimals); // a stored value, all its digits
const letter = (t) => (texts.length > 1 ? "AB"[t] : "");
// The pieces per text the model was trained on (0: not known); maps mark it with a dashed line.
const trained = () => model.training_length || 0;
const longerThanTrained = () => trained() > 0 && texts.some((x) => x.pieces.length > trained());

// How a piece is labelled: sentencepiece's "▁" marks a word's first piece; it is dropped, and a piece
// inside a word gets a leading "·". Control and byte pieces ("<mask>", "<0xE2>") stay as they are.
function label(piece) {
  if (/^<.+>$/.test(piece)) return piece;
  if (piece === "▁") return "␣";
  return piece.startsWith("▁") ? piece.slice(1) : "·" + piece;
}

// ---- colours: the stops of ordo's PNG heatmaps (tools/teach), linear between them -------------------

const SEQUENTIAL = [[255, 255, 255], [158, 202, 225], [33, 113, 181], [8, 48, 107]]; // 0 → 1
const DIVERGING = [[5, 48, 97], [67, 147, 195], [247, 247, 247], [214, 96, 77], [103, 0, 31]]; // −1 → 1
// The scores before the softmax, each row relative to its largest: a hue of their own (no blue), so a
// score is never read as a weight. From far below the row's largest (pale) to the largest (dark).
const BELOW_MAX = [[255, 247, 236], [253, 187, 132], [239, 101, 72], [153, 0, 13]]; // −span → 0
// The content/position parts of the scores: purple (negative) to green (positive), no blue either.
const PARTS = [[64, 0, 75], [153, 112, 171], [247, 247, 247], [90, 174, 97], [0, 68, 27]]; // −1 → 1

function ramp(stops, f) {
  const x = Math.min(1, Math.max(0, Number.isFinite(f) ? f : 0.5)) * (stops.length - 1);
  const i = Math.min(Math.floor(x), stops.length - 2);
  return stops[i].map((a, k) => Math.round(a + (stops[i + 1][k] - a) * (x - i)));
}
const attentionColour = (v) => ramp(SEQUENTIAL, v); // fixed 0 .. 1, every map alike
const signedColour = (v) => ramp(DIVERGING, (v + 1) / 2); // fixed −1 .. 1
// A score or bias of −∞, a key an alibi head does not see: grey, outside the colour scale.
const UNSEEN = [204, 204, 204];
const scoreColour = (big) => (v) => (v === -Infinity ? UNSEEN : signedColour(v / big));
const darkScore = (big) => (v) => Number.isFinite(v) && Math.abs(v / big) > 0.55;

// A colour bar: the gradient with ticks, for a scale from lo to hi.
function colourBar(stops, lo, hi) {
  const css = stops.map((c, i) => `rgb(${c}) ${(100 * i) / (stops.length - 1)}%`).join(", ");
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) =>
    el("span", { style: `left: ${100 * f}%` }, String(+(lo + (hi - lo) * f).toFixed(2))));
  return el("span", { class: "bar" }, el("span", { class: "ramp", style: `background: linear-gradient(to right, ${css})` }),
    el("span", { class: "ticks" }, ...ticks));
}

// ---- the tooltip ------------------------------------------------------------------------------------

const tip = document.getElementById("tip");
function showTip(event, text) {
  tip.textContent = text;
  tip.hidden = false;
  const x = Math.min(event.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
  tip.style.left = `${x}px`;
  tip.style.top = `${event.clientY + 16}px`;
}
const hideTip = () => (tip.hidden = true);

// ---- which piece sits where -------------------------------------------------------------------------

// bPos[i]: where A's piece i stands in B, when B holds A's pieces reordered; bIndex is its inverse.
let bPos = null, bIndex = null;
function matchPieces() {
  const tokens = data.compare && data.compare.same_tokens_reordered ? data.compare.tokens : [];
  bPos = tokens.length ? range(tokens.length) : null;
  bIndex = tokens.length ? range(tokens.length) : null;
  for (const m of tokens) (bPos[m.position_a] = m.position_b), (bIndex[m.position_b] = m.position_a);
}
matchPieces();

// order(t)[r]: the piece of text t drawn at row (and column) r.
function order(t) {
  return t === 1 && state.aOrder && bPos ? bPos : range(texts[t].pieces.length);
}

// The matrix drawn for text t, layer l, head h in the current run and order.
function shown(t, l, h) {
  const A = texts[t][state.run].attention[l][h];
  const o = order(t);
  return o.map((i) => o.map((j) => A[i][j]));
}

// The row of text t to highlight: the piece under the pointer, or its partner in the other text.
function hoveredRow(t) {
  const h = state.hover;
  if (!h) return null;
  let token = h.token;
  if (h.text !== t) {
    if (!bPos) return null;
    token = t === 1 ? bPos[token] : bIndex[token];
  }
  return order(t).indexOf(token);
}

function setHover(t, token) {
  const same = state.hover && token !== null && state.hover.text === t && state.hover.token === token;
  if (same || (state.hover === null && token === null)) return;
  state.hover = token === null ? null : { text: t, token };
  updateHover();
}

// The largest |A[i][j] − B[bPos[i]][bPos[j]]| over every layer and head of one run: zero when B's maps
// are A's with rows and columns moved along with their pieces.
function permutationGap(run) {
  if (!bPos) return null;
  let gap = 0;
  texts[0][run].attention.forEach((layer, l) =>
    layer.forEach((A, h) => {
      const B = texts[1][run].attention[l][h];
      A.forEach((row, i) => row.forEach((v, j) => (gap = Math.max(gap, Math.abs(v - B[bPos[i]][bPos[j]])))));
    }));
  return gap;
}

// ---- a heatmap: one canvas pixel per cell, scaled up by CSS without smoothing ------------------------
//
// opts: rows, cols, width, height (CSS pixels of the cells), colour(v) → [r, g, b], tip(r, c) → text,
// onRow(r | null) when the pointer enters a row, rowLabels / colLabels (drawn when the cells are large
// enough), numbers: print each value in its cell when the cells are large enough (format(v) → text and
// dark(v) → true where the cell's colour needs light text, when the values are not weights in [0, 1]).
function heatmap(opts) {
  const { rows, cols, width, height } = opts;
  const cellW = width / cols, cellH = height / rows;
  const canvas = el("canvas", { width: cols, height: rows, style: `width: ${width}px; height: ${height}px` });
  const mark = el("div", { class: "rowmark", hidden: "" });
  const cells = el("div", { class: "cells", style: `width: ${width}px; height: ${height}px` }, canvas, mark);
  const root = el("div", { class: "heatmap" });

  // Labels of 12 px type need cells of 13 px or more, or they run into their neighbours.
  const showCols = opts.colLabels && cellW >= 13, showRows = opts.rowLabels && cellH >= 13;
  if (showCols || showRows) {
    // Column labels read across when the longest fits its cell, else upwards.
    const across = showCols && Math.max(...opts.colLabels.map((s) => s.length)) * 7.5 + 4 <= cellW;
    root.classList.add("labelled");
    root.append(el("span", { class: "corner" }, opts.corner || ""));
    root.append(showCols ? el("div", { class: `col-labels${across ? " across" : ""}`, style: `width: ${width}px` },
      ...opts.colLabels.map((s) => el("span", { style: `width: ${cellW}px` }, s))) : el("span"));
    root.append(showRows ? el("div", { class: "row-labels", style: `height: ${height}px` },
      ...opts.rowLabels.map((s) => el("span", { style: `height: ${cellH}px; line-height: ${cellH}px` }, s))) : el("span"));
  }
  root.append(cells);

  let numbers = null; // the printed values, for cells of 34 px and more
  if (opts.numbers && cellW >= 34 && cellH >= 18) {
    numbers = range(rows * cols).map((k) => el("span", {
      style: `left: ${(k % cols) * cellW}px; top: ${Math.floor(k / cols) * cellH}px; width: ${cellW}px; line-height: ${cellH}px`,
    }));
    cells.append(el("div", { class: "numbers" }, ...numbers));
  }

  // The training length: a dashed line before position opts.mark, across the rows and down the columns
  // (opts.markRowsOnly: rows only, for a map whose columns are not positions), where the map has more.
  const N = opts.mark || 0;
  if (N > 0 && N < rows) cells.append(el("div", { class: "trained-mark row", style: `top: ${N * cellH - 1}px` }));
  if (N > 0 && N < cols && !opts.markRowsOnly)
    cells.append(el("div", { class: "trained-mark col", style: `left: ${N * cellW - 1}px` }));

  const ctx = canvas.getContext("2d");
  let values = null;
  function draw(matrix) {
    values = matrix;
    const img = ctx.createImageData(cols, rows);
    for (let r = 0; r < rows; ++r)
      for (let c = 0; c < cols; ++c) {
        const [R, G, B] = opts.colourAt ? opts.colourAt(r, c, matrix[r][c]) : opts.colour(matrix[r][c]);
        const p = 4 * (r * cols + c);
        (img.data[p] = R), (img.data[p + 1] = G), (img.data[p + 2] = B), (img.data[p + 3] = 255);
      }
    ctx.putImageData(img, 0, 0);
    if (numbers)
      numbers.forEach((n, k) => {
        const v = matrix[Math.floor(k / cols)][k % cols];
        n.textContent = opts.format ? opts.format(v) : fixed(v).replace(/^(-?)0\./, "$1.");
        const r = Math.floor(k / cols), c = k % cols;
        n.className = (opts.darkAt ? opts.darkAt(r, c, v) : opts.dark ? opts.dark(v) : Math.abs(v) > 0.55) ? "light" : "";
      });
  }
  function markRow(r) {
    mark.hidden = r === null || r < 0;
    mark.dataset.row = mark.hidden ? "" : r;
    if (!mark.hidden) (mark.style.top = `${r * cellH}px`), (mark.style.height = `${cellH}px`);
  }
  const cellAt = (e) => {
    const box = canvas.getBoundingClientRect();
    const r = Math.floor(((e.clientY - box.top) / box.height) * rows), c = Math.floor(((e.clientX - box.left) / box.width) * cols);
    return r >= 0 && r < rows && c >= 0 && c < cols ? [r, c] : null;
  };
  cells.addEventListener("mousemove", (e) => {
    const rc = cellAt(e);
    if (!rc || !values) return hideTip();
    showTip(e, opts.tip(rc[0], rc[1], values[rc[0]][rc[1]]));
    if (opts.onRow) opts.onRow(rc[0]);
  });
  cells.addEventListener("mouseleave", () => {
    hideTip();
    if (opts.onRow) opts.onRow(null);
  });
  return { root, draw, markRow, canvas };
}

// ---- 1. the pieces (and what the model puts at a <mask>) ---------------------------------------------

const chips = [];
const predictionBoxes = [];

function renderPieces() {
  const box = document.getElementById("piece-rows");
  box.replaceChildren();
  texts.forEach((x, t) => {
    const row = el("div", { class: "chips" });
    if (texts.length > 1) row.append(el("span", { class: "which" }, letter(t)));
    chips[t] = x.pieces.map((p, i) => {
      const shown = p.startsWith("▁") ? [el("span", { class: "ws" }, "▁"), p.slice(1)] : [p];
      const chip = el("span", { class: "chip", "data-text": t, "data-token": i },
        el("small", {}, String(i)), el("b", {}, ...shown), el("small", {}, `id ${x.ids[i]}`));
      chip.addEventListener("mouseenter", () => setHover(t, i));
      chip.addEventListener("mouseleave", () => setHover(t, null));
      row.append(chip);
      return chip;
    });
    box.append(row);
    predictionBoxes[t] = el("div", { class: "predictions" });
    box.append(predictionBoxes[t]);
  });
}

function drawPredictions() {
  texts.forEach((x, t) => {
    const box = predictionBoxes[t];
    box.replaceChildren();
    for (const p of x[state.run].predictions) {
      const top = p.top.map((c) => el("li", {}, el("b", {}, label(c.piece)), ` ${(100 * c.probability).toFixed(1)}%`,
        el("span", { class: "pbar", style: `width: ${Math.round(60 * c.probability)}px` })));
      box.append(el("div", { class: "prediction" },
        `What the model puts at ${x.pieces[p.position]} (piece ${p.position}), ${RUNS[state.run]}:`, el("ol", {}, ...top)));
    }
  });
}

// ---- 2. one head: lines from the query under the pointer, and its map with labels --------------------

const headViews = [];

// The lines are drawn on a canvas under the SVG of labels: a long text has S² of them.
function headView(t) {
  const S = texts[t].pieces.length, rowH = 18, top = 26, xl = 120, xr = 210, width = 330;
  const height = top + S * rowH + 6;
  const keyMarks = svgEl("g");
  const values = svgEl("g", { class: "values" });
  const queryMark = svgEl("rect", { class: "query-mark", x: 2, width: xl - 2, height: rowH, visibility: "hidden" });
  const left = svgEl("g"), right = svgEl("g");
  const y = (i) => top + i * rowH + rowH / 2;
  const N = trained(), marks = N > 0 && N < S ? [svgEl("line", { class: "trained-line", x1: 0, x2: width, y1: top + N * rowH, y2: top + N * rowH })] : [];
  const svg = svgEl("svg", { class: "headview", width, height, viewBox: `0 0 ${width} ${height}` },
    svgEl("text", { x: xl - 6, y: 14, "text-anchor": "end", class: "axis" }, "query"),
    svgEl("text", { x: xr + 6, y: 14, class: "axis" }, "key"),
    queryMark, keyMarks, ...marks, left, right, values);
  const dpr = window.devicePixelRatio || 1;
  const canvas = el("canvas", { width: Math.round(width * dpr), height: Math.round(height * dpr),
    style: `width: ${width}px; height: ${height}px` });
  const ctx = canvas.getContext("2d");
  ctx.scale(dpr, dpr);
  const box = el("div", { class: "headview-box" }, canvas, svg);
  const labels = [];
  for (let r = 0; r < S; ++r) {
    const l = svgEl("text", { x: xl - 6, y: y(r) + 4, "text-anchor": "end", class: "token" });
    const k = svgEl("text", { x: xr + 6, y: y(r) + 4, class: "token" });
    const hit = svgEl("rect", { x: 0, y: top + r * rowH, width: xl, height: rowH, class: "hit" });
    hit.addEventListener("mouseenter", () => setHover(t, order(t)[r]));
    hit.addEventListener("mouseleave", () => setHover(t, null));
    left.append(l, hit);
    right.append(k);
    labels.push([l, k]);
  }

  function draw() {
    const o = order(t), M = shown(t, state.layer, state.head), q = hoveredRow(t);
    labels.forEach(([l, k], r) => (l.textContent = k.textContent = `${label(texts[t].pieces[o[r]])}`));
    keyMarks.replaceChildren();
    values.replaceChildren();
    queryMark.setAttribute("visibility", q === null ? "hidden" : "visible");
    if (q !== null) queryMark.setAttribute("y", top + q * rowH);
    // One line from query i to key j, as strong as the weight: opacity w, width 1 + 3w.
    ctx.clearRect(0, 0, width, height);
    ctx.strokeStyle = `rgb(${SEQUENTIAL[2]})`; // the ramp's middle blue, as --accent
    let drawn = 0;
    for (const i of q === null ? range(S) : [q])
      for (let j = 0; j < S; ++j) {
        const w = M[i][j];
        if (w < 0.005) continue; // fainter than the eye can see
        ctx.globalAlpha = w;
        ctx.lineWidth = 1 + 3 * w;
        ctx.beginPath();
        ctx.moveTo(xl, y(i));
        ctx.lineTo(xr, y(j));
        ctx.stroke();
        drawn++;
      }
    box.dataset.lines = drawn;
    if (q !== null)
      for (let j = 0; j < S; ++j) {
        keyMarks.append(svgEl("rect", { x: xr, y: top + j * rowH, width: 72, height: rowH, "fill-opacity": 0.5 * M[q][j], class: "key-mark" }));
        values.append(svgEl("text", { x: width - 4, y: y(j) + 4, "text-anchor": "end" }, fixed(M[q][j])));
      }
  }
  return { root: box, draw };
}

let bigMaps = [];

function renderHeadViews() {
  const pickLayer = document.getElementById("pick-layer"), pickHead = document.getElementById("pick-head");
  if (!pickLayer.options.length) {  // the model stays the same when the texts change
    pickLayer.append(...range(model.n_layers).map((l) => el("option", { value: l }, String(l))));
    pickHead.append(...range(model.n_heads).map((h) => el("option", { value: h }, String(h))));
    pickLayer.addEventListener("change", () => pick(+pickLayer.value, state.head));
    pickHead.addEventListener("change", () => pick(state.layer, +pickHead.value));
  }
  const box = document.getElementById("head-views");
  box.replaceChildren();
  texts.forEach((x, t) => {
    headViews[t] = headView(t);
    box.append(el("div", { class: "side" }, el("h3", { class: `text-${t}` }, quote(t)),
      el("div", { class: texts.length > 1 ? "pair stacked" : "pair" }, headViews[t].root, el("div", { class: "big", id: `big-${t}` }))));
  });
}

// The large map of the chosen head, rebuilt when the order changes (its labels move with the rows).
function buildBigMaps() {
  bigMaps = texts.map((x, t) => {
    const S = x.pieces.length, size = side(Math.max(180, Math.min(420, 40 * S)), S);
    const names = order(t).map((i) => label(x.pieces[i]));
    const map = heatmap({
      rows: S, cols: S, width: size, height: size, colour: attentionColour, numbers: true, mark: trained(),
      rowLabels: names, colLabels: names, corner: "key →\nquery ↓",
      tip: (r, c, v) => `${headName()}: ${names[r]} (${order(t)[r]}) looks at ${names[c]} (${order(t)[c]}): ${fixed(v)}`,
      onRow: (r) => setHover(t, r === null ? null : order(t)[r]),
    });
    const box = document.getElementById(`big-${t}`);
    box.replaceChildren(el("div", { class: "big-title" }, headName()), map.root,
      ...[el("div", { class: "legend-row" }, el("span", { class: "legend-title" }, "attention weight"), colourBar(SEQUENTIAL, 0, 1)),
        trainedNote(S)].filter((e) => e));
    map.title = box.firstChild;
    return map;
  });
}

// Under a map longer than the training length: what its dashed line marks.
function trainedNote(S) {
  return trained() > 0 && S > trained()
    ? el("p", { class: "muted trained-note" }, `Dashed line: the training length, ${trained()} pieces. ` +
      `The model never saw a position past it; the rows and columns beyond are positions ${trained()} .. ${S - 1}.`)
    : null;
}

const headName = () => `layer ${state.layer}, head ${state.head}, ${RUNS[state.run]}`;

function pick(layer, head) {
  state.layer = layer;
  state.head = head;
  document.getElementById("pick-layer").value = layer;
  document.getElementById("pick-head").value = head;
  update();
}

// ---- 3. every layer × head ---------------------------------------------------------------------------

let panels = []; // panels[t][l][h] = { root, map }

function renderGrids() {
  document.getElementById("attention-bar").replaceChildren(colourBar(SEQUENTIAL, 0, 1));
  const box = document.getElementById("grids");
  box.replaceChildren();
  // Each text's grid in its share of the page's width (the texts side by side, 40 px apart): a layer's
  // name, then the heads' maps, each with 6 px between and a 2 px frame; a whole number of pixels per
  // cell, rounded down so that the row fits.
  const width = box.clientWidth || document.documentElement.clientWidth - 48;
  const share = (width - 40 * (texts.length - 1)) / texts.length - 60 - 10 * model.n_heads;
  const near = Math.max(48, Math.min(120, Math.floor(share / model.n_heads)));
  panels = texts.map((x, t) => {
    const S = x.pieces.length, size = S < near ? S * Math.floor(near / S) : near;
    const grid = el("div", { class: "grid", style: `grid-template-columns: auto repeat(${model.n_heads}, ${size}px)` },
      el("span"), ...range(model.n_heads).map((h) => el("span", { class: "head-name" }, `head ${h}`)));
    const rows = range(model.n_layers).map((l) => {
      grid.append(el("span", { class: "layer-name" }, `layer ${l}`));
      return range(model.n_heads).map((h) => {
        const map = heatmap({
          rows: S, cols: S, width: size, height: size, colour: attentionColour, mark: trained(),
          tip: (r, c, v) => {
            const o = order(t);
            return `layer ${l}, head ${h}: ${label(x.pieces[o[r]])} (${o[r]}) looks at ${label(x.pieces[o[c]])} (${o[c]}): ${fixed(v)}`;
          },
          onRow: (r) => setHover(t, r === null ? null : order(t)[r]),
        });
        const panel = el("div", { class: "panel", "data-text": t, "data-layer": l, "data-head": h, title: "" }, map.root);
        panel.addEventListener("click", () => pick(l, h));
        grid.append(panel);
        return { root: panel, map };
      });
    });
    box.append(el("div", { class: "side" }, el("h3", { class: `text-${t}` }, quote(t)), grid, trainedNote(S)));
    return rows;
  });
}

function drawPermutation() {
  const box = document.getElementById("permutation");
  if (!bPos) return box.replaceChildren();
  const gap = { with_pe: permutationGap("with_pe"), without_pe: permutationGap("without_pe") };
  const tol = 1.5 * 10 ** -data.decimals; // two values rounded apart
  const same = (g) => (g <= tol ? "the same maps, rows and columns permuted" : "different maps");
  box.replaceChildren(el("h3", {}, "Is B's attention A's attention, reordered?"),
    el("p", {}, "B holds A's pieces in another order. Put B's rows and columns back in A's order (tick ",
      el("i", {}, "draw B in A's token order"), " above) and compare every map, cell by cell:"),
    el("table", { class: "numbers-table" },
      el("tr", {}, el("th", {}, ""), el("th", {}, "largest |A − B reordered|"), el("th", {}, "")),
      ...Object.keys(RUNS).map((run) => el("tr", { class: run === state.run ? "current" : "" },
        el("td", {}, RUNS[run]), el("td", { class: "num", "data-run": run }, fixed(gap[run])), el("td", {}, same(gap[run]))))),
    el("p", { class: "muted" }, "Without positions the encoder cannot tell where a piece stands, so moving the pieces only " +
      "moves the rows and columns of every map. With positions, the weights themselves change."));
}

// ---- 4. outputs, and the compare report --------------------------------------------------------------

function bar(v, max, cls = "") {
  return el("span", { class: `vbar ${cls}`, style: `width: ${Math.round((80 * Math.min(v, max)) / (max || 1))}px` });
}

// The scale of a column of bars: 0 at the left, `max` at 80 px, and their middle.
function barScale(max, digits) {
  return el("span", { class: "bar-scale" }, ...[0, 0.5, 1].map((f) =>
    el("span", { style: `left: ${80 * f}px` }, f ? (max * f).toFixed(digits) : "0")));
}

// A row across a table before the first piece past the training length.
function trainedRow(columns) {
  return el("tr", { class: "trained-row" }, el("td", { colspan: columns },
    `training length ${trained()}: the model never saw a position past here`));
}

function renderOutputs() {
  const box = document.getElementById("output-tables");
  box.replaceChildren();
  texts.forEach((x, t) => {
    const o = x.outputs;
    const max = Math.max(...o.distance);
    box.append(el("div", { class: "side" },
      el("h3", {}, `${letter(t) ? letter(t) + ": " : ""}each piece's output, with vs without positions`),
      el("p", { class: "muted" }, `Mean-pooled vectors: cosine ${o.pooled_cosine.toFixed(4)}. Per piece: the cosine between ` +
        "its two output vectors, and how far apart they are."),
      el("table", { class: "numbers-table" },
        el("tr", {}, el("th", {}, "#"), el("th", {}, "piece"), el("th", {}, "cosine"), el("th", {}, "distance"),
          el("th", {}, barScale(max, max >= 10 ? 1 : 2))),
        ...x.pieces.flatMap((p, i) => {
          const tr = el("tr", { "data-text": t, "data-token": i }, el("td", {}, String(i)), el("td", {}, label(p)),
            el("td", { class: "num" }, o.cosine[i].toFixed(4)), el("td", { class: "num" }, o.distance[i].toFixed(3)),
            el("td", {}, bar(o.distance[i], max)));
          tr.addEventListener("mouseenter", () => setHover(t, i));
          tr.addEventListener("mouseleave", () => setHover(t, null));
          return i === trained() && i > 0 ? [trainedRow(5), tr] : [tr];
        }))));
  });
}

function renderCompare() {
  const c = data.compare;
  const box = document.getElementById("compare");
  box.replaceChildren();
  if (!c) return;
  const num = (v) => (Math.abs(v) >= 1e-3 || v === 0 ? v.toFixed(6) : v.toExponential(2));
  const rows = [
    ["cosine of the mean-pooled vectors", c.cosine],
    ["largest |A − B| of the pooled vectors", c.max_abs_diff],
  ].map(([name, v]) => el("tr", {}, el("td", {}, name), el("td", { class: "num" }, num(v.with_pe)), el("td", { class: "num" }, num(v.without_pe))));
  if (c.pll) {  // the head's verdict: pseudo-log-likelihood, a score for ranking orders of the same pieces
    rows.push(el("tr", {}, el("td", {}, "PLL of A (ordo score; higher = more natural)"),
      el("td", { class: "num" }, c.pll.a.with_pe.toFixed(4)), el("td", { class: "num" }, c.pll.a.without_pe.toFixed(4))));
    rows.push(el("tr", {}, el("td", {}, "PLL of B"),
      el("td", { class: "num" }, c.pll.b.with_pe.toFixed(4)), el("td", { class: "num" }, c.pll.b.without_pe.toFixed(4))));
  }
  box.append(el("h3", {}, "A against B (the report of ordo compare)"),
    el("table", { class: "numbers-table" }, el("tr", {}, el("th", {}, ""), el("th", {}, "with positions"), el("th", {}, "without positions")), ...rows));
  if (c.verdict) {
    box.append(el("p", { id: "verdict" }, c.verdict),
      el("p", { class: "muted" }, "PLL (pseudo-log-likelihood; Salazar et al., 2020, \"Masked Language Model Scoring\") " +
        "sums each piece's log-probability with all the other pieces in view. It ranks texts made of the same " +
        "pieces; it is not the probability of a text, and a difference of 1 is not a likelihood ratio of e."));
  }
  if (!c.tokens.length) {
    box.append(el("p", { class: "muted" }, "The texts hold different pieces, so there is no per-piece comparison: that needs the same pieces reordered."));
    return;
  }
  const max = Math.max(...c.tokens.map((m) => m.moved_with_pe));
  box.append(el("p", {}, "Per piece: how far its output vector moved between A and B (L2 distance)."),
    el("table", { class: "numbers-table" },
      el("tr", {}, el("th", {}, "piece"), el("th", {}, "in A"), el("th", {}, "in B"), el("th", {}, "with positions"),
        el("th", {}, barScale(max, max >= 10 ? 1 : 2)), el("th", {}, "without positions"), el("th", {}, barScale(max, max >= 10 ? 1 : 2))),
      ...c.tokens.map((m) => {
        const tr = el("tr", {}, el("td", {}, label(m.piece)), el("td", { class: "num" }, String(m.position_a)), el("td", { class: "num" }, String(m.position_b)),
          el("td", { class: "num" }, num(m.moved_with_pe)), el("td", {}, bar(m.moved_with_pe, max)),
          el("td", { class: "num" }, num(m.moved_without_pe)), el("td", {}, bar(m.moved_without_pe, max, "off")));
        tr.addEventListener("mouseenter", () => setHover(0, m.position_a));
        tr.addEventListener("mouseleave", () => setHover(0, null));
        return tr;
      })));
}

// ---- 5. the positional encoding ----------------------------------------------------------------------

function renderPositions() {
  const box = document.getElementById("positions-body");
  box.replaceChildren();
  const P = data.positions;
  if (!P) {
    box.append(el("p", {}, "This model adds no positional encoding: x_t = E[id_t]" + (model.scale_embedding ? "·√d" : "") +
      ", and both settings of the switch are the same."));
    return;
  }
  if (P.kind === "rotation") return renderRope(box, P);
  if (P.kind === "bias") return renderAlibi(box, P);
  const kind = model.positional_encoding === "sinusoidal"
    ? `sinusoidal (${model.pe_layout} layout, base ${model.pe_base}): PE(t, 2i) = sin(t / base^(2i/d)), PE(t, 2i+1) = cos(t / base^(2i/d))`
    : "learned: row t of the model's position table";
  box.append(el("p", {}, `Each position t gets a vector PE(t) of d = ${model.d_model} numbers, added to its piece's embedding: ` +
    `x_t = E[id_t]${model.scale_embedding ? "·√d" : ""} + PE(t). This model's encoding is ${kind}. Switched off, PE(t) is not added.`));
  const N = P.count, d = model.d_model;
  const rowH = Math.max(3, Math.min(16, Math.floor(360 / N)));
  const positions = range(N).map(String);
  const table = heatmap({
    rows: N, cols: d, width: Math.max(256, Math.min(640, 6 * d)), height: rowH * N, colour: signedColour,
    rowLabels: positions, mark: trained(), markRowsOnly: true, tip: (t, j, v) => `PE(t = ${t}, dim ${j}) = ${fixed(v)}`,
  });
  table.root.id = "pe-table";
  table.draw(P.table);
  const square = side(Math.max(160, Math.min(360, 16 * N)), N);
  const similarity = heatmap({
    rows: N, cols: N, width: square, height: square, colour: signedColour, rowLabels: positions, colLabels: positions, mark: trained(),
    tip: (s, t, v) => `cos(PE(${s}), PE(${t})) = ${fixed(v)}`,
  });
  similarity.root.id = "pe-similarity";
  similarity.draw(P.similarity);
  box.append(el("div", { class: "sides" },
    el("div", { class: "side" }, el("h3", {}, `The table: positions 0 .. ${N - 1} (rows) × dimensions 0 .. ${d - 1} (columns)`), table.root,
      el("div", { class: "legend-row" }, el("span", { class: "legend-title" }, "PE(t, dim)"), colourBar(DIVERGING, -1, 1))),
    el("div", { class: "side" }, el("h3", {}, "How alike two positions are: cos(PE(s), PE(t))"), similarity.root,
      el("div", { class: "legend-row" }, el("span", { class: "legend-title" }, "cosine"), colourBar(DIVERGING, -1, 1)),
      el("p", { class: "muted" }, model.positional_encoding === "sinusoidal"
        ? "Near positions are alike and far ones less so, and the value depends on s − t only: distance can be read from it."
        : "A learned table follows no formula: these similarities are whatever the model's weights hold."))));
}

// A bias in a cell: two significant digits, without the leading zero ("-.0039"); −∞ where a head does
// not look (alibi's heads each see one side).
const biasText = (v) => (v === 0 ? "0" : v === -Infinity ? "−∞" : v.toPrecision(2).replace(/^(-?)0\./, "$1."));
// JSON has no −∞: the engine's −∞ (a key an alibi head does not see) arrives as null.
const unseen = (M) => M.map((row) => row.map((v) => (v === null ? -Infinity : v)));
// The largest |v| of a table, leaving out −∞ (which takes the scale's end colour).
const largest = (M) => Math.max(1e-6, ...M.flat(2).filter(Number.isFinite).map(Math.abs));

// Rope adds nothing to the input: it turns q and k in every head. The angles t·θ_i, position by pair.
function renderRope(box, P) {
  const N = P.count, pairs = P.angles[0].length;
  box.append(el("p", {}, `This model adds nothing to its pieces' vectors: x_t = E[id_t]${model.scale_embedding ? "·√d" : ""}. ` +
    "Its positions act inside every head, before the scores (rope, rotary position embedding): ", el("span", { class: "equation" }, P.equation),
    `. Below, the angle t·θ_i for each position t of the longer text and each of the ${pairs} pairs of a head's dh = ` +
    `${model.head_dim} dimensions (the numbers of ordo pe --model). Pair 0 turns by 1 radian per position; the last turns slowest. ` +
    "Section 2b shows q and k of the chosen head before and after the rotation."));
  // Angles wrapped to (−π, π] for the colour: a turn by 2π is no turn.
  const wrap = (a) => a - 2 * Math.PI * Math.round(a / (2 * Math.PI));
  const rowH = Math.max(3, Math.min(18, Math.floor(360 / N)));
  const angles = heatmap({
    rows: N, cols: pairs, width: Math.max(160, Math.min(640, 40 * pairs)), height: rowH * N, colour: (a) => signedColour(wrap(a) / Math.PI),
    mark: trained(), markRowsOnly: true,
    numbers: true, format: (a) => a.toFixed(2), dark: (a) => Math.abs(wrap(a)) > 0.55 * Math.PI,
    rowLabels: range(N).map(String), colLabels: range(pairs).map(String), corner: "pair i →\nt ↓",
    tip: (t, i, a) => `position t = ${t}, pair i = ${i}: t·θ_i = ${a.toFixed(4)} rad (${wrap(a).toFixed(4)} after whole turns)`,
  });
  angles.root.id = "pe-angles";
  angles.draw(P.angles);
  box.append(el("div", { class: "sides" }, el("div", { class: "side" }, el("h3", {}, `The rotation angles t·θ_i: positions 0 .. ${N - 1} (rows) × pairs 0 .. ${pairs - 1} (columns)`),
    angles.root, el("div", { class: "legend-row" }, el("span", { class: "legend-title" }, "angle, after whole turns (radians)"), colourBar(DIVERGING, -Math.PI, Math.PI)))));
}

// Whose bias a "bias" model adds: ALiBi's fixed slopes, or T5's learned number per bucket of the offset.
function biasName() {
  return model.positional_encoding === "t5-buckets" ? "T5's bucket bias" : "ALiBi's bias";
}

// ALiBi and T5's buckets add nothing to the input: each head adds a bias to its scores. Each head's b_ij,
// as layer 0 added it.
function renderAlibi(box, P) {
  const n = P.count, positions = range(n).map(String);
  const t5 = model.positional_encoding === "t5-buckets";
  box.append(el("p", {}, `This model adds nothing to its pieces' vectors: x_t = E[id_t]${model.scale_embedding ? "·√d" : ""}. ` +
    "Its positions act inside every head, after the scores and before the softmax (" +
    (t5 ? "T5's relative position buckets" : "ALiBi, attention with linear biases") + "): ",
    el("span", { class: "equation" }, P.equation), `. Below, each head's bias b_ij for positions 0 .. ${n - 1} as the engine ` +
    "added it in layer 0 (row = query i, column = key j): " +
    (t5 ? "each diagonal is one offset j − i, and one learned number per bucket of offsets; keys before and after " +
          "the query have buckets of their own. "
        : "a head with a steep slope looks near, a gentle one far; " +
          "−∞ (grey) is a key the head does not see, which gets no weight. ") +
    "Section 2b shows the chosen head's bias as a step of its own."));
  const lo = -largest(P.bias);
  const size = side(Math.max(120, Math.min(300, 44 * n)), n);
  box.append(el("div", { class: "sides steps" }, ...P.bias.map(unseen).map((B, h) => {
    const map = heatmap({ rows: n, cols: n, width: size, height: size, colour: scoreColour(-lo), numbers: true,
      format: biasText, dark: darkScore(-lo), rowLabels: positions, colLabels: positions,
      corner: "j →\ni ↓", tip: (i, j, v) => `head ${h}: b(${i}, ${j}) = ${v === -Infinity ? "−∞ (not seen: weight 0)" : fixed(v)}` });
    map.root.id = `pe-bias-${h}`;
    map.draw(B);
    return el("div", { class: "side step" }, el("h3", {}, `head ${h}`), map.root);
  })), el("div", { class: "legend-row" }, el("span", { class: "legend-title" }, "bias b_ij"), colourBar(DIVERGING, lo, -lo)));
}

// ---- header, switch, redraw ---------------------------------------------------------------------------

// The title and the model's line: again for each new text.
function renderTitle() {
  const quoted = texts.map((x, t) => `${letter(t) ? letter(t) + " " : ""}“${x.text}”`);
  document.getElementById("title").textContent = quoted.join("   vs   ");
  document.title = `ordo view: ${texts.map((x) => x.text).join(" / ")}`;
  const m = model;
  const count = (n, what) => `${n} ${what}${n === 1 ? "" : "s"}`;
  document.getElementById("model-line").textContent = `Model: ${m.name}; ${count(m.n_layers, "layer")} × ${count(m.n_heads, "head")}, ` +
    `d = ${m.d_model} (${m.head_dim} per head), feed-forward ${m.d_ff}, ${m.norm}, ${m.activation}; ` +
    `positions: ${m.positional_encoding}.`;
  document.getElementById("a-order-box").hidden = !bPos;
  if (!bPos) state.aOrder = document.getElementById("a-order").checked = false;
}

// The switch and the order box: once.
function renderHeader() {
  renderTitle();
  for (const input of document.querySelectorAll("input[name=run]")) input.addEventListener("change", () => setRun(input.value));
  document.getElementById("a-order").addEventListener("change", (e) => {
    state.aOrder = e.target.checked;
    buildBigMaps();
    update();
  });
}

function setRun(run) {
  state.run = run;
  for (const input of document.querySelectorAll("input[name=run]")) input.checked = input.value === run;
  update();
}

function runNote() {
  if (model.positional_encoding === "none") return "This model has no positional encoding: both settings show the same numbers.";
  const scale = model.scale_embedding ? "·√d" : "";
  const acts = { rotation: ["rope turns q and k of every head by their positions' angles", "q and k are not turned"],
    bias: [model.positional_encoding === "t5-buckets" ? "T5's bucket bias is added to every head's scores"
      : "ALiBi adds its bias to every head's scores", "no bias is added"] }[data.positions && data.positions.kind];
  if (acts)
    return state.run === "with_pe"
      ? `x_t = E[id_t]${scale}, and ${acts[0]} (section 2b): the same pieces in another order get other weights.`
      : `x_t = E[id_t]${scale}, and ${acts[1]}: ` +
        "the encoder sees a bag of pieces, and a reordered text gives the same maps with rows and columns permuted.";
  return state.run === "with_pe"
    ? `x_t = E[id_t]${scale} + PE(t): the same piece at two positions enters as two different vectors.`
    : `x_t = E[id_t]${scale}: the encoder sees a bag of pieces. Equal pieces get equal rows and columns, and a ` +
      "reordered text gives the same maps with rows and columns permuted. This is an ablation: the model was " +
      "trained with positions, so its heads now see inputs unlike any in training and spread their weight; a " +
      "model trained without positions (models/position-none) has sharp heads that look at pieces, not places.";
}

// Everything that depends on the run, the chosen head or the order.
function update() {
  document.getElementById("run-note").textContent = runNote();
  for (const h of document.querySelectorAll("h3.text-1")) h.textContent = quote(1) + (state.aOrder ? ", drawn in A's order" : "");
  document.body.dataset.run = state.run;
  texts.forEach((x, t) => {
    panels[t].forEach((row, l) => row.forEach((p, h) => {
      p.map.draw(shown(t, l, h));
      p.root.classList.toggle("chosen", l === state.layer && h === state.head);
    }));
    bigMaps[t].draw(shown(t, state.layer, state.head));
    bigMaps[t].title.textContent = headName();
  });
  drawPredictions();
  drawPermutation();
  updateHover();
  if (data.live) askInside();
  else showCarriedInside();
}

// Only what follows the pointer: the marked rows, the chips, the head view's lines.
function updateHover() {
  texts.forEach((x, t) => {
    const r = hoveredRow(t);
    const token = r === null ? null : order(t)[r];
    panels[t].forEach((row) => row.forEach((p) => p.map.markRow(r)));
    bigMaps[t].markRow(r);
    chips[t].forEach((c, i) => c.classList.toggle("hovered", i === token));
    headViews[t].draw();
  });
}

// Every section from `data`: at load, and live, for each new text.
function renderAll() {
  renderPieces();
  renderHeadViews();
  buildBigMaps();
  renderGrids();
  renderOutputs();
  renderCompare();
  renderPositions();
  update();
}

// ---- live: the page served by `ordo serve` ------------------------------------------------------------

const inside = { data: null, asked: 0 }; // the chosen head's inside (POST /attention), for text A

// ---- where fresh data comes from: the server, or the engine inside this file ---------------------------
//
// The page asks the same questions either way: POST `path` with a JSON body, the answers of `ordo serve`
// (/view, /attention, /fill, /score, /compare, /trace, /tokenize). Served, they go to the server. In a page
// written by `ordo view --standalone` (data.standalone), they go to ordo compiled to WebAssembly (tools/web),
// which this file carries with the model: the same C++ answers them, with no server and no network.
//   <script id="ordo-engine" type="application/octet-stream">  the engine's wasm, base64
//   <script id="ordo-model" type="application/json">  { path under /ordo: the file's bytes in base64 }
//                                                      ("model/config.json", "model/model.safetensors", ...)
//   ordoWeb(): the engine's loader (emscripten's), a script of its own before this one
const base64Bytes = (text) => {
  const s = atob(text.trim()), bytes = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
  return bytes;
};

let engine = null; // the engine, loaded once, at the first question
function loadEngine() {
  engine = engine || (async () => {
    const t0 = performance.now();
    const M = await ordoWeb({ wasmBinary: base64Bytes(document.getElementById("ordo-engine").textContent),
      print: () => {}, printErr: (line) => console.warn(line) });
    const files = JSON.parse(document.getElementById("ordo-model").textContent);
    for (const [name, b64] of Object.entries(files)) {
      M.FS.mkdirTree(`/ordo/${name}`.replace(/\/[^/]*$/, ""));
      M.FS.writeFile(`/ordo/${name}`, base64Bytes(b64));
    }
    const error = M.ccall("ordo_web_load", "string", ["string", "string"], ["/ordo/model", model.name]);
    if (error) throw new Error(error);
    engineMs = performance.now() - t0;
    return M;
  })();
  return engine;
}
let engineMs = null; // how long the engine took to load (for the tests)

async function post(path, body) {
  if (data.standalone) {
    const M = await loadEngine();
    const j = JSON.parse(M.ccall("ordo_web_answer", "string", ["string", "string"], [path, JSON.stringify(body)]));
    if (M.ccall("ordo_web_status", "number", [], []) !== 200) throw new Error(j.error ? j.error.message : `${path}: refused`);
    return j;
  }
  const r = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  const j = await r.json();
  if (!r.ok) throw new Error(j.error ? j.error.message : `${path}: HTTP ${r.status}`);
  return j;
}

// Asks for the chosen head of text A from the inside and draws it; an answer to an older question is dropped.
async function askInside() {
  const ask = ++inside.asked;
  const body = { text: texts[0].text, layer: state.layer, head: state.head, positions: state.run === "with_pe" };
  try {
    const j = await post("/attention", body);
    if (ask === inside.asked) (inside.data = j), drawInside();
  } catch (e) {
    if (ask === inside.asked) document.getElementById("live-status").textContent = e.message;
  }
}

// In a file, the chosen head's inside comes from the page's own data (with positions only).
function showCarriedInside() {
  const section = document.getElementById("inside"), box = document.getElementById("inside-body");
  section.hidden = !data.inside;
  if (!data.inside) return;
  const head = data.inside.heads[state.layer][state.head];
  if (state.run !== "with_pe" || !head) {
    inside.data = null;
    box.replaceChildren(el("p", { class: "muted", id: "inside-missing" }, state.run !== "with_pe"
      ? "This page carries each head's inside with positions only: switch them on to see it (ordo serve computes both runs)."
      : "This page carries the inside of layer 0, head 0 only: text A has more than 64 pieces, and every head's " +
        "scores would make the file several times larger. ordo serve computes any head."));
    return;
  }
  inside.data = { ...head, layer: state.layer, head: state.head, positions: model.positional_encoding !== "none", pieces: texts[0].pieces };
  drawInside();
}

// q and k; for rope, before and after their rotation; then the maps from the scores to the softmax, with
// alibi's bias as a step of its own; in layer 0 of a model that adds its positions, the scores split into
// content and position; after the softmax, v and A·v. Every number is the engine's (POST /attention or
// data.inside); the page computes only each row's largest score, to draw the scores relative to it.
function drawInside() {
  const j = inside.data, box = document.getElementById("inside-body");
  const S = j.pieces.length, dh = j.q[0].length, names = j.pieces.map(label);
  const vectors = (id, name, M) => el("div", { class: "scroll-x" }, el("table", { class: "numbers-table vectors", id: `inside-${id}` },
    el("tr", {}, el("th", {}, "piece"), ...range(dh).map((e) => el("th", {}, `${name}${e}`))),
    ...M.map((row, i) => el("tr", {}, el("td", {}, `${i} ${names[i]}`), ...row.map((v) => el("td", { class: "num" }, v.toFixed(3)))))));
  const size = side(Math.max(160, Math.min(320, 40 * S)), S);
  const scoreText = (v) => (v === -Infinity ? "−∞" : v.toFixed(Math.abs(v) >= 10 ? 0 : Math.abs(v) >= 1 ? 1 : 2));
  const tipText = (what, note = () => "") => (r, c, v) =>
    `${what}, query ${names[r]} (${r}), key ${names[c]} (${c})${note(r, v)}: ${v === -Infinity ? "−∞ (not seen: weight 0)" : v.toFixed(4)}`;
  const legend = (what, bar) => el("div", { class: "legend-row" }, el("span", { class: "legend-title" }, what), bar);
  const step = (id, title, equation, map, legendRow) =>
    el("div", { class: "side step", id: `inside-${id}` }, el("h3", {}, title), el("p", { class: "equation" }, equation), map.root, legendRow);
  // A map before the softmax: each cell's colour says how far below its row's largest value it is (the
  // softmax sees only that: adding a number to a whole row changes no weight); the cell prints the value.
  const belowMax = (id, title, equation, M, what, format) => {
    const top = M.map((row) => Math.max(...row.filter(Number.isFinite)));
    const gaps = M.flatMap((row, r) => row.filter(Number.isFinite).map((v) => top[r] - v));
    const span = Math.max(1e-6, ...gaps);
    const f = (r, v) => (Number.isFinite(v) ? 1 - (top[r] - v) / span : null);
    const map = heatmap({ rows: S, cols: S, width: size, height: size, numbers: true, rowLabels: names, colLabels: names,
      mark: trained(), corner: "key →\nquery ↓", format: format || scoreText,
      colourAt: (r, c, v) => (f(r, v) === null ? UNSEEN : ramp(BELOW_MAX, f(r, v))),
      darkAt: (r, c, v) => f(r, v) !== null && f(r, v) > 0.55,
      tip: tipText(what, (r, v) => (Number.isFinite(v) ? `, ${(v - top[r]).toFixed(4)} from its row's largest` : "")) });
    map.draw(M);
    return step(id, title, equation, map, legend(`${what} − its row's largest`, colourBar(BELOW_MAX, -span, 0)));
  };
  const weightsStep = (n) => {
    const map = heatmap({ rows: S, cols: S, width: size, height: size, numbers: true, rowLabels: names, colLabels: names,
      mark: trained(), colour: attentionColour, corner: "key →\nquery ↓", tip: tipText("attention weight") });
    map.draw(j.weights);
    return step("weights", `${n}. softmax of each row`, j.equations.weights, map, legend("attention weight", colourBar(SEQUENTIAL, 0, 1)));
  };
  const parts = [el("p", {}, `Layer ${j.layer}, head ${j.head} of A, ${j.positions ? "with" : "without"} positions: each piece's ` +
    `query q and key k (dh = ${dh}), the scores of every query (row) with every key (column), their softmax along ` +
    "each row (the weights of the maps above), and what the head does with the weights: it mixes the pieces' values v.")];
  if (j.rope) {
    parts.push(el("p", {}, "Rope acts here, on q and k, before any score: ", el("span", { class: "equation" }, j.rope.equation),
      ". The position is in the angle, so q_i·k_j depends on the pieces and on i − j only."),
      el("h3", {}, "q before the rotation"), vectors("q-before", "q", j.rope.q_before),
      el("h3", {}, "q after it (what the scores use)"), vectors("q", "q", j.q),
      el("h3", {}, "k before the rotation"), vectors("k-before", "k", j.rope.k_before),
      el("h3", {}, "k after it"), vectors("k", "k", j.k));
  } else {
    parts.push(el("h3", {}, "q, one row per piece"), vectors("q", "q", j.q), el("h3", {}, "k, one row per piece"), vectors("k", "k", j.k));
  }
  parts.push(el("p", { class: "muted" }, "The maps before the softmax are drawn in reds, each row relative to its own largest value " +
    "(dark: the row's largest; pale: far below it), since the softmax sees only those differences; the number in a cell is the " +
    "value itself. The weights after the softmax keep the blues of every other map on this page."));
  const steps = [];
  if (j.alibi) {
    steps.push(belowMax("scores", "1. q·k/√dh", "s_ij = q_i · k_j / √dh", j.alibi.scores, "score"),
      belowMax("bias", `2. + ${biasName()}`, j.alibi.equation, unseen(j.alibi.bias), "bias b_ij", biasText),
      belowMax("biased", "3. = the softmax's input", j.equations.scaled_scores, unseen(j.scaled_scores), "score + bias"));
  } else {
    steps.push(belowMax("scores", "1. q·k/√dh", j.equations.scaled_scores, j.scaled_scores, "score"));
  }
  steps.push(weightsStep(steps.length + 1));
  parts.push(el("div", { class: "sides steps" }, ...steps));
  if (j.parts) parts.push(...drawParts(j, names));
  else if (j.layer > 0 && model.positional_encoding !== "none" && ["sinusoidal", "learned"].includes(model.positional_encoding))
    parts.push(el("p", { class: "muted", id: "inside-parts-missing" }, "The split of the scores into content and position is " +
      "shown for layer 0, where it is exact: from layer 1 on, every vector has mixed content and positions (ordo attention --parts " +
      "prints the same split for any layer, taking the run without positions as the content)."));
  parts.push(el("h3", {}, "After the softmax: each piece's value v, and the head's output A·v"),
    el("p", {}, "The weights mix the values: row i of the output is Σ_j A_ij v_j, each piece's value weighted by how much " +
      "piece i looks at it. ", el("span", { class: "equation" }, j.equations.output), ". The heads' outputs, side by side, go " +
      "through W_o and are added to the input (the residual)."),
    el("h3", {}, `v, one row per piece (${j.equations.v})`), vectors("v", "v", j.v),
    el("h3", {}, "A·v, one row per piece: what this head hands on"), vectors("output", "o", j.output));
  box.replaceChildren(...parts);
}

// Layer 0 with positions added to the input: the scores split by where q and k come from. The four maps
// share one colour scale; added, they are step 1's scores.
function drawParts(j, names) {
  const S = names.length, P = j.parts, size = side(Math.max(120, Math.min(200, 32 * S)), S); // four to a row
  const list = [["content_content", "content · content", "q_c·k_c/√dh: the pieces alone"],
    ["content_position", "content · position", "q_c·k_p/√dh: piece i's query, key j's position"],
    ["position_content", "position · content", "q_p·k_c/√dh: query i's position, piece j's key"],
    ["position_position", "position · position", "q_p·k_p/√dh: the two positions alone"]];
  const big = Math.max(1e-6, ...list.map(([k]) => largest(P[k])));
  const maps = list.map(([k, title, equation]) => {
    const map = heatmap({ rows: S, cols: S, width: size, height: size, numbers: true, rowLabels: names, colLabels: names,
      mark: trained(), corner: "key →\nquery ↓", colour: (v) => ramp(PARTS, (v / big + 1) / 2),
      format: (v) => v.toFixed(Math.abs(v) >= 10 ? 0 : Math.abs(v) >= 1 ? 1 : 2), dark: (v) => Math.abs(v / big) > 0.55,
      tip: (r, c, v) => `${title}, query ${names[r]} (${r}), key ${names[c]} (${c}): ${v.toFixed(4)}` });
    map.draw(P[k]);
    return el("div", { class: "side part", id: `inside-part-${k.replace("_", "-")}` }, el("h3", {}, title),
      el("p", { class: "equation" }, equation), map.root);
  });
  return [el("h3", { id: "inside-parts" }, "The scores split: content and position (layer 0, exact)"),
    el("p", {}, `In layer 0 each input is x_t = E[id_t]${model.scale_embedding ? "·√d" : ""} + PE(t), and q, k are linear in it: ` +
      "q = q_c + q_p with q_c the piece's part (the same run without positions) and q_p = PE(t)·W_qᵀ its position's, likewise k. " +
      "So q·k splits into four parts exactly, and they add up to step 1's scores (the numbers of ordo attention --parts). " +
      "Where a row's largest parts sit says what the head follows: places (the position parts) or pieces (content · content)."),
    el("div", { class: "sides steps" }, ...maps),
    el("div", { class: "legend-row" }, el("span", { class: "legend-title" }, "part of the score"), colourBar(PARTS, -big, big))];
}

const live = { asked: 0, updates: 0, updateMs: null, timer: null };

// After a pause in typing (150 ms), the texts go to the server and the page is drawn again from its answer.
function startLive() {
  const a = document.getElementById("text-a"), b = document.getElementById("text-b");
  document.getElementById("live").hidden = false;
  document.getElementById("inside").hidden = false;
  if (data.standalone) document.getElementById("live-source").textContent = "Computed in this page by ordo's engine (WebAssembly)";
  a.value = texts[0].text;
  b.value = texts.length > 1 ? texts[1].text : "";
  const status = document.getElementById("live-status");
  const send = async () => {
    const ask = ++live.asked, t0 = performance.now();
    const shown = (on) => { for (const e of [document.querySelector("main"), document.getElementById("controls"), document.getElementById("run-note")]) e.hidden = !on; };
    if (!a.value.trim()) { // nothing to show yet (a box just cleared): no question the server can only refuse,
      status.textContent = "type a text in A"; // and no title or sections of the text that was there
      document.getElementById("title").textContent = "ordo view";
      shown(false);
      return;
    }
    try {
      const next = await post("/view", b.value ? { a: a.value, b: b.value } : { a: a.value });
      if (ask !== live.asked) return; // the reader has typed on since
      next.live = true;
      next.standalone = data.standalone;
      data = next, model = data.model, texts = data.texts;
      state.hover = null; // the pieces under the pointer may be gone
      matchPieces();
      renderTitle();
      renderAll();
      shown(true);
      status.textContent = "";
      requestAnimationFrame(() => requestAnimationFrame(() => {
        live.updateMs = performance.now() - t0;
        live.updates++;
      }));
    } catch (e) {
      if (ask === live.asked) status.textContent = e.message;
    }
  };
  for (const box of [a, b])
    box.addEventListener("input", () => {
      clearTimeout(live.timer);
      live.timer = setTimeout(send, 150);
    });
}

renderHeader();
renderAll();
if (data.live) startLive();
// Section 3's maps take their size from the page's width: drawn again when the width changes.
let laidOutWidth = document.documentElement.clientWidth, relayout = 0;
window.addEventListener("resize", () => {
  cancelAnimationFrame(relayout);
  relayout = requestAnimationFrame(() => {
    if (document.documentElement.clientWidth === laidOutWidth) return;
    laidOutWidth = document.documentElement.clientWidth;
    renderGrids();
    update();
  });
});

window.ordoView = {
  get data() { return data; }, state, setRun, shown, permutationGap, scriptMs: performance.now() - started, renderMs: null,
  get updates() { return live.updates; }, get updateMs() { return live.updateMs; }, get inside() { return inside.data; },
  get engineMs() { return engineMs; },
  // The questions of `ordo serve`, answered by the server or by the engine in this file: ask("/fill", { text }).
  ask: post,
};
// The second animation frame starts once the first, holding everything drawn above, has been painted.
requestAnimationFrame(() => requestAnimationFrame(() => (window.ordoView.renderMs = performance.now())));
