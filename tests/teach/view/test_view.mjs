// The page `ordo view` writes, in a real browser: Debian's Chromium, headless, driven by puppeteer-core.
//
//   node test_view.mjs PAGE.html [--layers L --heads H] [--predictions N] [--loads N] [--cpu] [--trace TRACE.json ...]
//                      [--parts L,H,PARTS.txt] [--trained N] [--boxes [--boxes-shots DIR]]
//                      [--screenshot FILE.png [--full-page | --shot-from CSS] [--shot-hover CSS] [--shot-head L,H]]
//   node test_view.mjs --template TEMPLATE.html --data DATA.json --out PAGE.html [...]   (fill a template first)
//
// Checks: the page loads from file:// with no console error and no request for anything but itself; it
// shows L × H attention panels per text; pointing at a piece marks its row in every map of its text (and
// the same piece's row in the other text); the head view draws that row's lines and values; the switch
// changes the maps the page shows; without positions B's maps are A's with rows and columns permuted (the
// permutation worked out here from the ids, not taken from the page), with positions they are not; mask
// predictions are listed when the data has them; section 5 shows what the model applies (the sinusoid or
// learned table only for a model that adds one; rope's angles t·θ_i; alibi's bias of every head); for
// each --trace (the JSON of `ordo trace --json --inside L,H` for text A), picking that head shows in
// section 2b the engine's numbers: for rope q and k before and after the rotation, for alibi the bias as
// a step between the scores and the softmax, the scores drawn relative to each row's largest in a hue with no
// blue (the row's largest the darkest), and after the softmax v and A·v (the engine's value and head output
// stages, and A·v = Σ_j A_ij v_j from the page's own numbers); for --parts L,H,FILE (the output of `ordo
// attention --parts` for text A), that head's content/position split, cell by cell; --trained N: the
// dashed line at position N on the maps and the row across section 4's table where a text is longer, none
// where it is not; section 4's distance bars have a scale; --boxes: the layout (below); a screenshot is not blank. Prints the render time
// (the median over --loads page loads) but does not judge it: speed belongs to measurements, not tests.
// Exit 0 pass, 1 fail, 77 skip (no Chromium).
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { check, failures, launch, loadPuppeteer, openPage, parseParts } from "./harness.mjs";

const TOLERANCE = 1.01e-4;
// JSON has no −∞: a score of a key an alibi head does not see arrives as null.
const unseenRows = (M) => M.map((row) => row.map((v) => (v === null ? -Infinity : v))); // two attention weights rounded to 4 decimals, each apart by at most 0.5e-4

const args = process.argv.slice(2);
const option = (name, fallback = null) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const positional = args.filter((a, i) => !a.startsWith("--") && (i === 0 || !args[i - 1].startsWith("--")));
const every = (name) => args.flatMap((a, i) => (a === `--${name}` ? [args[i + 1]] : []));


const puppeteer = await loadPuppeteer();

// The page: given, or a template filled with data as `ordo view` fills it.
let pagePath = positional[0];
if (option("template")) {
  const template = fs.readFileSync(option("template"), "utf8");
  const json = fs.readFileSync(option("data"), "utf8").trim().replace(/<\//g, "<\\/");
  pagePath = option("out");
  fs.writeFileSync(pagePath, template.replace("@ORDO_VIEW_DATA@", () => json));
}
if (!pagePath) {
  console.error("error: usage: node test_view.mjs PAGE.html [options] (see the comment at the top)");
  process.exit(2);
}
const pageUrl = pathToFileURL(path.resolve(pagePath)).href;
console.log(`page ${pagePath}: ${fs.statSync(pagePath).size} bytes`);

const { browser, profile } = await launch(puppeteer, "view");
try {
  const { page, problems } = await openPage(browser, (url) => url === pageUrl);

  // Load it --loads times; the render time is the page's own clock when it has drawn and painted.
  const loads = Math.max(1, +option("loads", 1));
  const times = { renderMs: [], scriptMs: [] };
  for (let n = 0; n < loads; ++n) {
    await page.goto(pageUrl, { waitUntil: "load" });
    await page.waitForFunction(() => window.ordoView && window.ordoView.renderMs !== null, { timeout: 20000 });
    for (const [k, v] of Object.entries(await page.evaluate(() => ({ renderMs: ordoView.renderMs, scriptMs: ordoView.scriptMs })))) times[k].push(v);
  }
  for (const [k, what] of [["renderMs", "render time (load to painted)"], ["scriptMs", "of which the page's script"]]) {
    const t = times[k].sort((a, b) => a - b);
    console.log(`${what}: median ${t[t.length >> 1].toFixed(0)} ms over ${loads} load(s) (min ${t[0].toFixed(0)}, max ${t[t.length - 1].toFixed(0)})`);
  }
  // On a busy machine the wall time above is mostly waiting; the renderer's main-thread CPU time for one
  // load (from a Chromium trace) is the page's own cost.
  if (option("cpu") !== null) {
    const tracePath = path.join(profile, "trace.json");
    await page.tracing.start({ path: tracePath });
    await page.goto(pageUrl, { waitUntil: "load" });
    await page.waitForFunction(() => window.ordoView && window.ordoView.renderMs !== null, { timeout: 20000 });
    await page.tracing.stop();
    const events = JSON.parse(fs.readFileSync(tracePath, "utf8")).traceEvents;
    const main = events.find((e) => e.ph === "M" && e.name === "thread_name" && e.args.name === "CrRendererMain");
    const cpu = events.filter((e) => main && e.pid === main.pid && e.tid === main.tid && e.ph === "X" && e.name === "RunTask")
      .reduce((ms, e) => ms + (e.tdur || 0) / 1000, 0);
    console.log(`renderer main thread CPU for one load: ${cpu.toFixed(0)} ms`);
  }

  const data = await page.evaluate(() => window.ordoView.data);
  const L = +option("layers", data.model.n_layers), H = +option("heads", data.model.n_heads);
  const T = data.texts.length;

  // Panels: layers × heads for each text.
  for (let t = 0; t < T; ++t) {
    const n = await page.$$eval(`#grids .panel[data-text="${t}"]`, (p) => p.length);
    check(n === L * H, `text ${t}: ${n} attention panels, want layers × heads = ${L} × ${H}`);
  }

  // The permutation from the ids: the k-th occurrence of an id in A goes to its k-th occurrence in B.
  let perm = null;
  if (T === 2) {
    const [a, b] = data.texts.map((x) => x.ids);
    const sorted = (v) => [...v].sort((x, y) => x - y).join();
    if (sorted(a) === sorted(b)) {
      const used = new Set();
      perm = a.map((id) => {
        const j = b.findIndex((x, j) => x === id && !used.has(j));
        used.add(j);
        return j;
      });
    }
  }

  // Pointing at a piece marks its row everywhere, and the head view draws its lines.
  const token = Math.min(1, data.texts[0].ids.length - 1);
  await page.hover(`.chip[data-text="0"][data-token="${token}"]`);
  const marks = (t) => page.$$eval(`#grids .panel[data-text="${t}"] .rowmark`, (ms) => ms.map((m) => {
    const cells = m.parentElement.getBoundingClientRect(), box = m.getBoundingClientRect();
    return { hidden: m.hidden, row: m.dataset.row, top: box.top - cells.top, cellH: cells.height };
  }));
  const S0 = data.texts[0].ids.length;
  const marksA = await marks(0);
  check(marksA.every((m) => !m.hidden && +m.row === token && Math.abs(m.top - (token * m.cellH) / S0) < 1.5),
    `pointing at piece ${token} of A marks row ${token} in all ${marksA.length} of A's maps, at the row's height`);
  if (perm) {
    const marksB = await marks(1);
    check(marksB.every((m) => !m.hidden && +m.row === perm[token]),
      `... and row ${perm[token]} (the same piece) in all of B's maps`);
  }
  const head = await page.evaluate((tok) => {
    const v = window.ordoView, A = v.shown(0, v.state.layer, v.state.head);
    const box = document.querySelectorAll(".headview-box")[0];
    return { lines: +box.dataset.lines, values: [...box.querySelectorAll(".values text")].map((e) => e.textContent),
      want: A[tok].filter((w) => w >= 0.005).length, row: A[tok].map((w) => w.toFixed(4)) };
  }, token);
  check(head.lines === head.want && head.values.join() === head.row.join(),
    `head view: ${head.lines} lines from the piece (want ${head.want}), its weights ${head.values.join(" ")}`);
  await page.mouse.move(5, 5);
  check((await marks(0)).every((m) => m.hidden), "moving the pointer away clears the marks");

  // The switch: the maps shown change, and they are the numbers the data holds for that run.
  const shownAll = () => page.evaluate(() => {
    const v = window.ordoView, m = v.data.model;
    return v.data.texts.map((_, t) => Array.from({ length: m.n_layers }, (_, l) => Array.from({ length: m.n_heads }, (_, h) => v.shown(t, l, h))));
  });
  const pixels = () => page.$$eval("#grids .panel canvas", (cs) => cs.map((c) => {
    const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    let s = 0;
    for (let i = 0; i < d.length; ++i) s = (s * 31 + d[i]) >>> 0;
    return s;
  }));
  const maxDiff = (X, Y) => {
    const x = X.flat(Infinity), y = Y.flat(Infinity);
    return x.length !== y.length ? Infinity : x.reduce((m, v, i) => Math.max(m, Math.abs(v - y[i])), 0);
  };
  const withPe = await shownAll(), withPixels = await pixels();
  await page.click("label:has(input[value=without_pe])");
  const withoutPe = await shownAll(), withoutPixels = await pixels();
  const run = await page.evaluate(() => window.ordoView.state.run);
  check(run === "without_pe", `clicking "without positions" switches the run (now ${run})`);
  const same = (x, want) => x.every((layers, t) => maxDiff(layers, want[t].attention) === 0);
  check(same(withPe, data.texts.map((x) => x.with_pe)) && same(withoutPe, data.texts.map((x) => x.without_pe)),
    "the maps shown are the data's, for each run");
  const change = maxDiff(withPe, withoutPe);
  if (data.model.positional_encoding === "none") {
    check(change === 0, `a model without positions: the switch changes nothing (largest change ${change})`);
  } else {
    check(change > 1e-3, `the switch changes the maps: largest change ${change.toFixed(4)}`);
    check(withPixels.some((p, i) => p !== withoutPixels[i]), "... and what the canvases draw");
  }

  // Without positions, B's maps are A's permuted; with positions, they are not.
  if (perm) {
    const gap = (maps) => {
      let g = 0;
      maps[0].forEach((layer, l) => layer.forEach((A, h) => {
        const B = maps[1][l][h];
        A.forEach((row, i) => row.forEach((v, j) => (g = Math.max(g, Math.abs(v - B[perm[i]][perm[j]])))));
      }));
      return g;
    };
    const gapOff = gap(withoutPe), gapOn = gap(withPe);
    check(gapOff <= TOLERANCE, `without positions: B's maps are A's with rows and columns permuted (largest gap ${gapOff.toFixed(5)})`);
    if (data.model.positional_encoding !== "none") check(gapOn > 1e-2, `with positions: they are not (largest gap ${gapOn.toFixed(4)})`);
    const claimed = await page.$$eval("#permutation td[data-run]", (tds) => Object.fromEntries(tds.map((td) => [td.dataset.run, +td.textContent])));
    check(Math.abs(claimed.without_pe - gapOff) < 1e-4 && Math.abs(claimed.with_pe - gapOn) < 1e-4,
      `the page states the same gaps (${claimed.with_pe} with, ${claimed.without_pe} without)`);
    await page.click("#a-order");
    const reordered = await shownAll();
    check(maxDiff(reordered[0], reordered[1]) <= TOLERANCE, "drawn in A's order, B's maps without positions are A's maps");
    await page.click("#a-order");
  }

  // Mask predictions: listed for each <mask> the data has predictions for.
  const wantPredictions = data.texts.reduce((n, x) => n + x.without_pe.predictions.length, 0);
  const listed = await page.$$eval(".prediction", (ps) => ps.map((p) => p.querySelector("li b").textContent));
  // The page's labels: "▁cat" as "cat", "s" (inside a word) as "·s", "<unk>" as it is.
  const label = (p) => (/^<.+>$/.test(p) ? p : p.startsWith("▁") ? p.slice(1) || "␣" : "·" + p);
  const firstPiece = data.texts.flatMap((x) => x.without_pe.predictions.map((p) => label(p.top[0].piece)));
  check(listed.length === wantPredictions && listed.join() === firstPiece.join(),
    `${listed.length} mask prediction list(s) shown, want ${wantPredictions}${listed.length ? `; first guesses ${listed.join(", ")}` : ""}`);
  if (option("predictions") !== null)
    check(wantPredictions === +option("predictions"), `the data holds ${wantPredictions} prediction list(s), want ${option("predictions")}`);

  // The compare report's verdict and the two texts' PLL, when the model has a head.
  if (data.compare && data.compare.verdict) {
    const shown = await page.$eval("#verdict", (p) => p.textContent).catch(() => "");
    check(shown === data.compare.verdict, `the verdict is shown: "${shown}"`);
    const pll = await page.$$eval("#compare td.num", (tds) => tds.map((td) => td.textContent));
    check(pll.includes(data.compare.pll.a.with_pe.toFixed(4)) && pll.includes(data.compare.pll.b.without_pe.toFixed(4)),
      "the PLL of A and B, with and without positions, are in the compare table");
  }

  // Section 5: what this model applies, and no sinusoid table where it adds none.
  await page.click("label:has(input[value=with_pe])");
  // Where the positions act (data.positions.kind, or a table for the sample data, which predates it).
  const kind = data.positions ? data.positions.kind || "table" : "none", H5 = data.model.n_heads;
  const section5 = await page.evaluate((H) => ({
    table: !!document.querySelector("#pe-table"), angles: !!document.querySelector("#pe-angles"),
    bias: Array.from({ length: H }, (_, h) => !!document.querySelector(`#pe-bias-${h}`)).filter((x) => x).length,
    text: document.getElementById("positions-body").textContent,
  }), H5);
  if (kind === "table")
    check(section5.table && !section5.angles && !section5.bias, `section 5 (${data.model.positional_encoding}): the model's table of encodings`);
  if (kind === "rotation" || kind === "bias") {
    check(!section5.table && /adds nothing to its pieces' vectors/.test(section5.text),
      `section 5 (${kind}): no table of encodings, since the model adds none to its pieces' vectors`);
  }
  if (kind === "rotation") {
    // The angles t·θ_i, θ_i = base^(−2i/dh), worked out here: the numbers printed in the cells.
    const cells = await page.$$eval("#pe-angles .numbers span", (ss) => ss.map((x) => x.textContent));
    const dh = data.model.head_dim, N = data.positions.count, want = [];
    for (let t = 0; t < N; ++t) for (let i = 0; i < dh / 2; ++i) want.push((t * data.model.pe_base ** (-2 * i / dh)).toFixed(2));
    check(section5.angles && cells.length === want.length && cells.every((c, k) => c === want[k]),
      `section 5 (rope): the rotation angles t·θ_i of ${N} positions × ${dh / 2} pairs (${cells.slice(8, 11).join(", ")} ...)`);
  }
  if (kind === "bias") check(section5.bias === H5, `section 5 (alibi): the bias of each of the ${H5} heads (${section5.bias} shown)`);

  // Section 2b in the file: the inside of the chosen head, with positions, as `ordo trace --inside` reports it.
  const numbersIn = (sel) => page.$$eval(`${sel} .numbers span`, (ss) => ss.map((x) => +x.textContent.replace(/^(-?)\./, "$10.")));
  const tableIn = (sel) => page.$$eval(`${sel} tr`, (rows) => rows.slice(1).map((r) => [...r.querySelectorAll("td.num")].map((td) => +td.textContent)));
  const gapTo = (got, want) => got.flat().reduce((m, v, k) => Math.max(m, Math.abs(v - want.flat()[k])), got.flat().length === want.flat().length ? 0 : Infinity);
  for (const file of every("trace")) {
    const trace = JSON.parse(fs.readFileSync(file, "utf8"));
    const stage = (name) => trace.stages.find((x) => x.name === name && x.head !== null);
    const q = stage("query"), L2 = q.layer, H2 = q.head, dh = q.shape[1], dm = data.model.d_model;
    await page.select("#pick-layer", String(L2));
    await page.select("#pick-head", String(H2));
    const shownHead = await page.evaluate(() => ({ hidden: document.getElementById("inside").hidden, title: document.querySelector("#inside-body p").textContent }));
    check(!shownHead.hidden && shownHead.title.startsWith(`Layer ${L2}, head ${H2} of A, with positions`), `section 2b shows layer ${L2}, head ${H2} (${file})`);
    const stepOrder = await page.$$eval("#inside-body .step", (ss) => ss.map((x) => x.id).join(" "));
    const bias = stage("ALiBi bias") || stage("T5 bucket bias");  // a bias added to the scores: alibi or t5-buckets
    if (bias) {
      // Two significant digits in each cell: within 5% of the engine's value (and of 0 where it is 0).
      const cells = await numbersIn("#inside-bias");
      const worst = bias.values.flat().reduce((m, v, k) => Math.max(m, Math.abs(cells[k] - v) / Math.max(Math.abs(v), 1e-3)), 0);
      check(cells.length === bias.values.flat().length && worst <= 0.05,
        `2b (alibi): the bias b_ij is the engine's, cell by cell (worst relative gap ${worst.toFixed(3)}; b(0,1) = ${bias.values[0][1]})`);
      check(stepOrder === "inside-scores inside-bias inside-biased inside-weights",
        `2b (alibi): the bias is a step of its own between the scores and the softmax (${stepOrder})`);
      const equation = await page.$eval("#inside-bias .equation", (e) => e.textContent);
      check(equation === bias.equation, `2b (alibi): with the engine's equation "${equation}"`);
      if (L2 === 0) {
        const pe = await numbersIn(`#pe-bias-${H2}`), n = data.positions.count;
        const want = bias.values.slice(0, n).map((row) => row.slice(0, n)).flat();
        const gap5 = want.reduce((m, v, k) => Math.max(m, Math.abs(pe[k] - v) / Math.max(Math.abs(v), 1e-3)), 0);
        check(pe.length === want.length && gap5 <= 0.05, `section 5 (alibi): head ${H2}'s bias is layer 0's, cell by cell`);
      }
    }
    const turned = trace.stages.find((x) => x.name === "q and k rotated (rope)" && x.layer === L2);
    if (turned) {
      const qkv = trace.stages.find((x) => x.name === "q | k | v" && x.layer === L2).values;
      const cols = (first) => qkv.map((row) => row.slice(first, first + dh));
      const gaps = [gapTo(await tableIn("#inside-q-before"), cols(H2 * dh)), gapTo(await tableIn("#inside-k-before"), cols(dm + H2 * dh)),
        gapTo(await tableIn("#inside-q"), q.values), gapTo(await tableIn("#inside-k"), stage("key").values)];
      // Printed with 3 decimals from values stored with 4: at most 0.0005 + 0.00005 apart.
      check(gaps.every((g) => g <= 5.6e-4), `2b (rope): q and k before the rotation (q | k | v's columns) and after (the head's query and key), ` +
        `as the engine computed them (largest gaps ${gaps.map((g) => g.toFixed(5)).join(", ")})`);
      check(gapTo(cols(H2 * dh), q.values) > 1e-2, "... and the rotation moved them");
    }
    if (!bias) check(stepOrder === "inside-scores inside-weights", `2b: the scores, then the softmax (${stepOrder})`);
    // The numbers in the cells; a map of many pieces has cells too small for them: then the page's data.
    let weights = await numbersIn("#inside-weights");
    if (!weights.length) weights = await page.evaluate(() => window.ordoView.inside.weights.flat());
    const A = data.texts[0].with_pe.attention[L2][H2].flat();
    check(weights.length === A.length && weights.every((w, k) => Math.abs(w - A[k]) <= 1e-4 + 1e-9), "2b: its softmax is the head's map of section 3");
    // After the softmax: v and A·v, printed with 3 decimals from values stored with 4.
    const v = await tableIn("#inside-v"), out = await tableIn("#inside-output");
    check(gapTo(v, stage("value").values) <= 5.6e-4 && gapTo(out, stage("head output").values) <= 5.6e-4,
      `2b: v and A·v are the engine's value and head output (largest gaps ${gapTo(v, stage("value").values).toFixed(5)}, ` +
      `${gapTo(out, stage("head output").values).toFixed(5)})`);
    const W = data.texts[0].with_pe.attention[L2][H2], vs = stage("value").values;
    const mixed = W.map((row) => vs[0].map((_, e) => row.reduce((sum, a, j) => sum + a * vs[j][e], 0)));
    check(gapTo(mixed, stage("head output").values) <= 2e-3, "... and A·v is Σ_j A_ij v_j of the weights shown and v");
    // The softmax's input, each row relative to its largest: that cell is the darkest colour, and no cell is blue.
    const input = unseenRows(stage(bias ? "scaled scores + bias" : "scaled scores").values);
    const colours = await page.$eval("#inside-" + (bias ? "biased" : "scores") + " canvas", (c) => {
      const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
      return Array.from({ length: c.height }, (_, r) => Array.from({ length: c.width }, (_, k) => [d[4 * (r * c.width + k)], d[4 * (r * c.width + k) + 1], d[4 * (r * c.width + k) + 2]]));
    });
    const darkest = input.every((row, r) => {
      const j = row.indexOf(Math.max(...row));
      return colours[r][j].join() === "153,0,13";
    });
    const blue = colours.flat().filter(([R, , B]) => B > R).length;
    check(darkest && blue === 0, `2b: the softmax's input is drawn relative to each row's largest (darkest there: ${darkest}), ` +
      `in a hue with no blue (${blue} blue cells)`);
  }
  // --parts L,H,FILE: the scores split into content and position, as `ordo attention --parts` prints them.
  if (option("parts")) {
    const [l, h, ...rest] = option("parts").split(","), file = rest.join(",");
    await page.select("#pick-layer", l);
    await page.select("#pick-head", h);
    const S = data.texts[0].ids.length, want = parseParts(fs.readFileSync(file, "utf8"), S);
    const got = await page.evaluate(() => window.ordoView.inside.parts);
    const gaps = Object.keys(want).map((k) => gapTo(got[k], want[k]));
    const maps = await page.$$eval("#inside-body [id^=inside-part-] canvas", (cs) => cs.length);
    check(maps === 4 && gaps.every((g) => g <= 6e-4), `2b, layer ${l} head ${h}: the four parts of the scores are ` +
      `ordo attention --parts's (largest gaps ${gaps.map((g) => g.toFixed(5)).join(", ")}), in ${maps} maps`);
    const sum = got.content_content.map((row, i) => row.map((x, j) => x + got.content_position[i][j] + got.position_content[i][j] + got.position_position[i][j]));
    check(gapTo(sum, data.inside.heads[l][h].scaled_scores) <= 3e-4, "... and they add up to the scaled scores");
    await page.select("#pick-layer", "1");
    const note = await page.$("#inside-parts-missing");
    const none = await page.evaluate(() => window.ordoView.inside.parts === null);
    check(none && !!note, "in layer 1 there is no split (it is exact in layer 0 only), and the page says so");
  }
  if (data.inside) {
    await page.click("label:has(input[value=without_pe])");
    const note = await page.$eval("#inside-body", (b) => b.textContent);
    check(/with positions only/.test(note), "2b in a file, without positions: says it carries the run with positions only");
    await page.click("label:has(input[value=with_pe])");
  }

  // --trained N: the training length marked where a text is longer than N, and nowhere else.
  if (option("trained") !== null) {
    const N = +option("trained");
    check(data.model.training_length === N, `the data gives the training length ${data.model.training_length}, want ${N}`);
    for (let t = 0; t < T; ++t) {
      const S = data.texts[t].ids.length;
      const marks = await page.$eval(`#big-${t}`, (b) => {
        const cells = b.querySelector(".cells").getBoundingClientRect();
        return [...b.querySelectorAll(".trained-mark")].map((m) => {
          const r = m.getBoundingClientRect();
          return m.classList.contains("row") ? ["row", (r.top + 1 - cells.top) / cells.height] : ["col", (r.left + 1 - cells.left) / cells.width];
        });
      });
      const rowAt = await page.$$eval(`#output-tables tr[data-text="${t}"]`, (trs) => trs.findIndex((tr) => tr.previousElementSibling.classList.contains("trained-row")));
      if (S > N)
        check(marks.length === 2 && marks.every(([, f]) => Math.abs(f - N / S) < 0.01) && rowAt === N,
          `text ${t} (${S} pieces): dashed lines at position ${N} of its map (${marks.map(([k, f]) => `${k} ${(f * S).toFixed(1)}`).join(", ")}), ` +
          `and a row across section 4's table before piece ${rowAt}`);
      else check(marks.length === 0 && rowAt === -1, `text ${t} (${S} pieces): no mark, it is within the training length`);
    }
  }
  // Section 4's distances: a scale from 0 to the largest.
  const scales = await page.$$eval("#output-tables .bar-scale", (ss) => ss.map((s) => [...s.children].map((c) => c.textContent)));
  check(scales.length === T && scales.every((s, t) => s[0] === "0" && Math.abs(+s[2] - Math.max(...data.texts[t].outputs.distance)) < 0.1),
    `section 4: each distance column has a scale, 0 .. the largest (${scales.map((s) => s.join(" ")).join("; ")})`);

  // --boxes: the layout at 1280 × 800 and 1920 × 1080, with positions and without: no two pieces of text
  // overlap (each text's own box, from a Range over it, cut to what its scrolling box shows), no text covers
  // a map, no map or text leaves the page's width, the page does not scroll sideways, and the sticky bar
  // stays one line high. --boxes-shots DIR keeps a screenshot of each case there.
  if (option("boxes") !== null) {
    for (const [w, h] of [[1280, 800], [1920, 1080]]) {
      await page.setViewport({ width: w, height: h });
      for (const run of ["with_pe", "without_pe"]) {
        await page.click(`label:has(input[value=${run}])`);
        await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
        const layout = await page.evaluate(() => {
          const width = document.documentElement.clientWidth;
          const visible = (e) => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== "hidden";
          // What a box shows of a rectangle: cut by every ancestor that clips (overflow not visible).
          const cut = (r, e) => {
            let { left, top, right, bottom } = r;
            for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
              if (getComputedStyle(a).overflowX === "visible" && getComputedStyle(a).overflowY === "visible") continue;
              const c = a.getBoundingClientRect();
              (left = Math.max(left, c.left)), (top = Math.max(top, c.top)), (right = Math.min(right, c.right)), (bottom = Math.min(bottom, c.bottom));
            }
            return right - left > 0.5 && bottom - top > 0.5 ? { left, top, right, bottom } : null;
          };
          const where = (e) => {
            const s = e.closest("section, header, #controls, #live, footer");
            return `${s ? "#" + (s.id || s.tagName.toLowerCase()) : "?"} ${e.tagName.toLowerCase()}${e.className && typeof e.className === "string" ? "." + e.className.split(" ")[0] : ""}`;
          };
          const texts = [];
          const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
          for (let n = walker.nextNode(); n; n = walker.nextNode()) {
            const e = n.parentElement;
            if (!n.textContent.trim() || !e || e.closest("script, style, #tip, [hidden]") || !visible(e)) continue;
            const range = document.createRange();
            range.selectNodeContents(n);
            for (const r of range.getClientRects()) {
              const box = cut(r, e);
              if (box) texts.push({ box, e, text: n.textContent.trim().slice(0, 24) });
            }
          }
          const maps = [...document.querySelectorAll("main canvas")].filter((c) => visible(c) && !c.closest(".headview-box"))
            .map((c) => ({ box: c.getBoundingClientRect(), e: c }));
          const overlap = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 0.5 && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 0.5;
          const problems = [];
          texts.sort((a, b) => a.box.top - b.box.top);
          for (let i = 0; i < texts.length && problems.length < 6; ++i)
            for (let k = i + 1; k < texts.length && texts[k].box.top < texts[i].box.bottom; ++k)
              if (texts[i].e !== texts[k].e && overlap(texts[i].box, texts[k].box))
                problems.push(`text "${texts[i].text}" (${where(texts[i].e)}) overlaps "${texts[k].text}" (${where(texts[k].e)})`);
          for (const t of texts) {
            if (t.box.right > width + 0.5 || t.box.left < -0.5) problems.push(`text "${t.text}" (${where(t.e)}) leaves the page: ${t.box.left.toFixed(0)} .. ${t.box.right.toFixed(0)} of ${width}`);
            for (const m of maps)  // a map's own numbers are inside it by design
              if (!t.e.closest(".cells") && overlap(t.box, m.box)) problems.push(`text "${t.text}" (${where(t.e)}) covers a map (${where(m.e)})`);
          }
          maps.forEach((m, i) => maps.slice(i + 1).forEach((n) => {
            if (overlap(m.box, n.box)) problems.push(`two maps overlap (${where(m.e)}, ${where(n.e)})`);
          }));
          for (const m of maps)
            if (m.box.right > width + 0.5 || m.box.left < -0.5) problems.push(`a map (${where(m.e)}) leaves the page: ${m.box.left.toFixed(0)} .. ${m.box.right.toFixed(0)} of ${width}`);
          if (document.documentElement.scrollWidth > width) problems.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} px wide in ${width}`);
          return { problems: problems.slice(0, 12), texts: texts.length, maps: maps.length, bar: document.getElementById("controls").offsetHeight };
        });
        check(layout.problems.length === 0, `${w} × ${h}, ${run}: ${layout.texts} pieces of text and ${layout.maps} maps, none overlapping, ` +
          `none off the page${layout.problems.length ? ":\n  " + layout.problems.join("\n  ") : ""}`);
        check(layout.bar <= 60, `${w} × ${h}, ${run}: the sticky bar is ${layout.bar} px high (at most 60: it hides no heading)`);
        if (option("boxes-shots")) await page.screenshot({ path: path.join(option("boxes-shots"), `boxes-${w}-${run}.png`), fullPage: true });
      }
    }
    await page.setViewport({ width: 1280, height: 900 });
  }

  // A screenshot, with positions, that is not blank: many colours, much of it not white.
  // --shot-head L,H picks that head first (section 2 then shows it).
  if (option("shot-head")) {
    const [l, h] = option("shot-head").split(",");
    await page.select("#pick-layer", l);
    await page.select("#pick-head", h);
  }
  // --shot-from CSS puts that element at the top (under the sticky switch); --shot-hover CSS points at one.
  await page.click("label:has(input[value=with_pe])");
  if (option("shot-from")) await page.$eval(option("shot-from"), (e) => window.scrollTo(0, e.getBoundingClientRect().top + window.scrollY - document.getElementById("controls").offsetHeight - 8));
  if (option("shot-hover")) await page.hover(option("shot-hover"));
  const shotPath = option("screenshot", path.join(profile, "view.png"));
  const png = await page.screenshot({ path: shotPath, fullPage: option("full-page") !== null });
  const look = await (await browser.newPage()).evaluate(async (b64) => {
    const img = new Image();
    img.src = `data:image/png;base64,${b64}`;
    await img.decode();
    const c = document.createElement("canvas");
    (c.width = img.width), (c.height = img.height);
    const ctx = c.getContext("2d");
    ctx.drawImage(img, 0, 0);
    const d = ctx.getImageData(0, 0, c.width, c.height).data;
    const colours = new Set();
    let inked = 0;
    for (let i = 0; i < d.length; i += 4) {
      colours.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
      if (d[i] + d[i + 1] + d[i + 2] < 600) inked++;
    }
    return { w: c.width, h: c.height, colours: colours.size, inked: inked / (d.length / 4) };
  }, Buffer.from(png).toString("base64"));
  check(look.colours >= 64 && look.inked > 0.03,
    `screenshot ${shotPath} (${look.w} x ${look.h}): ${look.colours} colours, ${(100 * look.inked).toFixed(1)}% not white`);

  check(problems.length === 0, `no console error or warning, no request but the page itself${problems.length ? ":\n  " + problems.join("\n  ") : ""}`);
} finally {
  await browser.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
console.log(failures() ? `${failures()} check(s) failed` : "all checks passed");
process.exit(failures() ? 1 : 0);
