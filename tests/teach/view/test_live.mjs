// The page `ordo serve` serves at /, live, in headless Chromium (puppeteer-core, the system Chromium).
//
//   node test_live.mjs ORDO MODEL_DIR [--no-timing]
//
// Starts `ordo serve --port 0` (a free port, read from its first line), opens its page and checks: the
// text boxes are shown; typing a sentence redraws the pieces (those of POST /tokenize), L × H maps per
// text and the data of POST /view for the same texts; the switch shows the other run's maps and asks
// for the chosen head's inside again (q, k, q·k/√dh and its softmax, which are the maps' weights; for rope
// q and k before the rotation, for alibi the bias, each what POST /trace reports for that head; after the
// softmax v and A·v, POST /trace's value and head output; in layer 0 of a model that adds its positions,
// the scores split into content and position as `ordo attention --parts` prints them, and no split
// elsewhere); a
// <mask> is filled; a second text brings the compare report; the page asks only its own server and
// logs no console error. Prints the update time (request to painted, the median of 7 keystroke pauses
// on a 20-piece sentence) without judging it. Exit 0 pass, 1 fail, 77 skip (no Chromium).
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { check, failures, launch, loadPuppeteer, openPage, parseParts } from "./harness.mjs";

const ROUNDED = 1.01e-4; // the page's attention is rounded to 4 decimals
const [ordo, modelDir, ...flags] = process.argv.slice(2);
const timing = !flags.includes("--no-timing"); // the update-time loop: 7 more redraws

const puppeteer = await loadPuppeteer();

const server = spawn(ordo, ["serve", "--model", modelDir, "--port", "0"], { stdio: ["ignore", "ignore", "pipe"] });
const port = await new Promise((resolve, reject) => {
  const lines = readline.createInterface({ input: server.stderr });
  lines.once("line", (line) => {
    const m = /listening on http:\/\/127\.0\.0\.1:(\d+)\//.exec(line);
    m ? resolve(+m[1]) : reject(new Error(`ordo serve did not start: ${line}`));
    lines.on("line", () => {}); // the request log: read and dropped, so the pipe never fills
  });
  server.once("exit", (code) => reject(new Error(`ordo serve ended with ${code}`)));
});
const origin = `http://127.0.0.1:${port}`;
const post = async (p, body) => (await fetch(origin + p, { method: "POST", body: JSON.stringify(body) })).json();
// JSON has no −∞: a score or bias of a key an alibi head does not see arrives as null.
const unseen = (M) => M.map((row) => row.map((v) => (v === null ? -Infinity : v)));
const maxDiff = (X, Y) => {
  const x = [X].flat(Infinity), y = [Y].flat(Infinity);
  return x.length !== y.length ? Infinity : x.reduce((m, v, i) => Math.max(m, Math.abs(v - y[i])), 0);
};

const { browser, profile } = await launch(puppeteer, "live");
try {
  const { page, problems } = await openPage(browser, (url) => url.startsWith(origin + "/"));
  await page.goto(origin + "/", { waitUntil: "load" });
  await page.waitForFunction(() => window.ordoView && window.ordoView.inside !== null, { timeout: 20000 });
  check(await page.$eval("#live", (e) => !e.hidden), "the live page shows its text boxes");
  const view = () => page.evaluate(() => window.ordoView.data);

  // Typing: after the pause the page is drawn again from the server's answer.
  const type = async (selector, text) => {
    const before = await page.evaluate(() => window.ordoView.updates);
    await page.click(selector, { clickCount: 3 });
    await page.keyboard.press("Backspace");
    await page.type(selector, text);
    await page.waitForFunction((n) => window.ordoView.updates > n && window.ordoView.updateMs !== null, { timeout: 20000 }, before);
    await page.waitForFunction((t) => window.ordoView.data.texts.map((x) => x.text).join("|") === t, { timeout: 20000 },
      [await page.$eval("#text-a", (e) => e.value), await page.$eval("#text-b", (e) => e.value)].filter((x) => x).join("|"));
  };
  // A cleared box is not sent (the server could only refuse a text without pieces): the page says what to do.
  await page.click("#text-a", { clickCount: 3 });
  await page.keyboard.press("Backspace");
  await page.waitForFunction(() => document.getElementById("live-status").textContent === "type a text in A", { timeout: 5000 })
    .then(() => check(true, "a cleared text box asks for a text and sends nothing"),
          () => check(false, "a cleared text box asks for a text and sends nothing"));
  const cleared = await page.evaluate(() => ({ title: document.getElementById("title").textContent,
    main: document.querySelector("main").hidden, controls: document.getElementById("controls").hidden,
    note: document.getElementById("run-note").hidden }));
  check(cleared.title === "ordo view" && cleared.main && cleared.controls && cleared.note,
    `a cleared text box leaves no title or sections of the old text (${JSON.stringify(cleared)})`);
  const sentence = "the old man walked slowly along the river and then sat down under a tall tree near his house";
  await type("#text-a", sentence);
  await type("#text-b", "");
  const tokens = await post("/tokenize", { text: sentence });
  let data = await view();
  const L = data.model.n_layers, H = data.model.n_heads, S = tokens.pieces.length;
  const back = await page.evaluate(() => ({ main: document.querySelector("main").hidden,
    line: document.getElementById("model-line").textContent }));
  check(!back.main && /^Model: [^:]+; \d+ layers? × \d+ heads?, /.test(back.line),
    `typing again shows the sections, under "Model: <name>; ..." (${back.line})`);
  const chips = await page.$$eval('.chip[data-text="0"] b', (bs) => bs.map((b) => b.textContent));
  check(data.texts.length === 1 && chips.join() === tokens.pieces.join(), `typing a sentence: its ${S} pieces are shown (${chips.length})`);
  const served = await post("/view", { a: sentence });
  check(maxDiff(data.texts[0].with_pe.attention, served.texts[0].with_pe.attention) === 0 &&
    JSON.stringify(data.positions) === JSON.stringify(served.positions), "the page's data is POST /view's for that text");
  const panels = await page.$$eval('#grids .panel[data-text="0"]', (p) => p.length);
  check(panels === L * H, `${panels} maps, one per layer × head (${L} × ${H})`);
  const shownAll = () => page.evaluate(() => {
    const v = window.ordoView, m = v.data.model;
    return Array.from({ length: m.n_layers }, (_, l) => Array.from({ length: m.n_heads }, (_, h) => v.shown(0, l, h)));
  });
  check(maxDiff(await shownAll(), data.texts[0].with_pe.attention) === 0, "the maps drawn are the new text's, with positions");
  const kind = data.positions ? data.positions.kind : "none"; // where the positions act: table, rotation, bias
  const pe = await page.$$eval("#positions-body canvas", (cs) => cs.map((c) => c.height));
  if (kind === "table")
    check(data.positions.count === S && pe.length === 2 && pe[1] === S, `the PE table and similarity cover the ${S} positions`);
  if (kind === "rotation")
    check(data.positions.count === S && pe.length === 1 && pe[0] === S && !(await page.$("#pe-table")),
      `rope: the rotation angles of the ${S} positions, and no table of encodings`);
  if (kind === "bias")
    check(pe.length === H && !(await page.$("#pe-table")), `alibi: the bias of each of the ${H} heads, and no table of encodings`);

  // The chosen head from the inside: the weights are the softmax of the scaled scores, and the maps'.
  await page.select("#pick-layer", "1");
  await page.select("#pick-head", "1");
  await page.waitForFunction(() => { const i = window.ordoView.inside; return i.layer === 1 && i.head === 1 && i.positions; }, { timeout: 20000 });
  const softmaxGap = (j) => Math.max(...unseen(j.scaled_scores).map((row, r) => {
    const m = Math.max(...row), e = row.map((v) => Math.exp(v - m)), z = e.reduce((a, b) => a + b, 0);
    return Math.max(...e.map((v, c) => Math.abs(v / z - j.weights[r][c])));
  }));
  let inside = await page.evaluate(() => window.ordoView.inside);
  check(inside.q.length === S && inside.k.length === S && inside.q[0].length === data.model.head_dim,
    `inside layer 1 head 1: q and k of each of the ${S} pieces (dh = ${inside.q[0].length})`);
  check(softmaxGap(inside) < 1e-5 && maxDiff(inside.weights, data.texts[0].with_pe.attention[1][1]) <= ROUNDED,
    "its softmax(q·k/√dh) is the head's map, with positions");
  const cells = await page.$$eval("#inside-q tr", (rows) => rows.length - 1);
  check(cells === S, `the q table has a row per piece (${cells})`);
  // Where rope and alibi act: the same numbers as the engine's stages in POST /trace for that head.
  const trace = await post("/trace", { text: sentence, inside: [1, 1] });
  const stage = (name) => trace.stages.find((x) => x.name === name && x.layer === 1);
  const steps = await page.$$eval("#inside-body .step", (ss) => ss.map((x) => x.id).join(" "));
  if (kind === "rotation") {
    const qkv = stage("q | k | v").values, dh = data.model.head_dim, d = data.model.d_model;
    const cols = (first) => qkv.map((row) => row.slice(first, first + dh));
    check(maxDiff(inside.rope.q_before, cols(dh)) === 0 && maxDiff(inside.rope.k_before, cols(d + dh)) === 0 &&
      maxDiff(inside.q, stage("query").values) === 0 && maxDiff(inside.k, stage("key").values) === 0,
      "rope: q and k before the rotation and after it are the engine's (POST /trace's q | k | v, query, key)");
    check(!!(await page.$("#inside-q-before")) && !!(await page.$("#inside-k-before")), "... and the page shows both");
  }
  if (kind === "bias") {
    const bias = stage("ALiBi bias");
    check(maxDiff(inside.alibi.bias, bias.values) === 0 && inside.alibi.equation === bias.equation,
      `alibi: the bias is the engine's (b(0,1) = ${bias.values[0][1]})`);
    // The map of S² cells is too small for printed numbers: point at the far corners (a key far ahead of
    // the query, one far behind) and read the tooltip, which gives the value with 4 decimals.
    const box = await page.$eval("#inside-bias canvas", (c) => { c.scrollIntoView({ block: "center" }); const r = c.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; });
    const tipAt = async (r, c) => {
      await page.mouse.move(box[0] + ((c + 0.5) * box[2]) / S, box[1] + ((r + 0.5) * box[3]) / S);
      return page.$eval("#tip", (t) => t.textContent);
    };
    const corners = [[0, S - 1], [S - 1, 0]];
    const tips = [];
    for (const [r, c] of corners) tips.push(await tipAt(r, c));
    const shown = (v) => (v === null ? "−∞ (not seen: weight 0)" : v.toFixed(4));
    check(corners.every(([r, c], n) => tips[n].endsWith(`: ${shown(bias.values[r][c])}`)),
      `... and shown: pointing at b(0, ${S - 1}) and b(${S - 1}, 0) reads ${tips.map((t) => t.split(": ").pop()).join(" and ")}`);
    await page.mouse.move(5, 5);
  }
  check(steps === (kind === "bias" ? "inside-scores inside-bias inside-biased inside-weights" : "inside-scores inside-weights"),
    `the steps from the scores to the softmax: ${steps}`);
  // After the softmax: each piece's value v and the head's output A·v, the engine's stages, and shown.
  const vRows = await page.$$eval("#inside-v tr", (rows) => rows.length - 1), outRows = await page.$$eval("#inside-output tr", (rows) => rows.length - 1);
  check(maxDiff(inside.v, stage("value").values) === 0 && maxDiff(inside.output, stage("head output").values) === 0 &&
    vRows === S && outRows === S, `after the softmax: v and A·v are POST /trace's value and head output, ${vRows} and ${outRows} rows shown`);
  check(inside.parts === null && (kind !== "table" || !!(await page.$("#inside-parts-missing"))),
    "layer 1: no content/position split (exact in layer 0 only)" + (kind === "table" ? ", and the page says so" : ""));
  // Layer 0: the split, where the positions are added to the input (sinusoidal, learned).
  await page.select("#pick-layer", "0");
  await page.waitForFunction(() => { const i = window.ordoView.inside; return i.layer === 0 && i.head === 1; }, { timeout: 20000 });
  const first = await page.evaluate(() => window.ordoView.inside);
  if (kind === "table") {
    const printed = execFileSync(ordo, ["attention", "--model", modelDir, "--layer", "0", "--head", "1", "--parts", sentence], { encoding: "utf8" });
    const want = parseParts(printed, S), gaps = Object.keys(want).map((k) => maxDiff(first.parts[k], want[k]));
    const maps = await page.$$eval("#inside-body [id^=inside-part-] canvas", (cs) => cs.length);
    check(gaps.every((g) => g <= 5.1e-4) && maps === 4, `layer 0 head 1: the four parts of the scores are ordo attention --parts's ` +
      `(largest gaps ${gaps.map((g) => g.toFixed(5)).join(", ")}), in ${maps} maps`);
  } else {
    check(first.parts === null && !(await page.$("#inside-parts")), `${kind}: no content/position split (the positions are not added to the input)`);
  }
  await page.select("#pick-layer", "1");
  await page.waitForFunction(() => { const i = window.ordoView.inside; return i.layer === 1 && i.head === 1; }, { timeout: 20000 });

  // The switch: the other run's maps, and the inside asked again without positions.
  await page.click("label:has(input[value=without_pe])");
  await page.waitForFunction(() => window.ordoView.inside.positions === false, { timeout: 20000 });
  inside = await page.evaluate(() => window.ordoView.inside);
  check(maxDiff(await shownAll(), data.texts[0].without_pe.attention) === 0, "the switch: the maps are the run without positions");
  check(softmaxGap(inside) < 1e-5 && maxDiff(inside.weights, data.texts[0].without_pe.attention[1][1]) <= ROUNDED,
    "the switch acts on the inside: its weights are the map without positions");
  check(maxDiff(inside.weights, data.texts[0].with_pe.attention[1][1]) > 1e-3, "... and differ from those with positions");
  await page.click("label:has(input[value=with_pe])");

  // The update time after a pause in typing, for this 20-odd piece sentence.
  const times = [];
  for (let n = 0; n < (timing ? 7 : 0); ++n) {
    await type("#text-a", n % 2 ? sentence : sentence + ".");
    times.push(await page.evaluate(() => window.ordoView.updateMs));
  }
  times.sort((a, b) => a - b);
  if (timing) console.log(`update time for ${S} pieces (request sent to painted): median ${times[3].toFixed(0)} ms over 7 ` +
    `(min ${times[0].toFixed(0)}, max ${times[6].toFixed(0)})`);

  // A <mask>, and a second text: the fill and the compare report.
  await type("#text-a", "she opened the <mask> and went out");
  data = await view();
  const filled = await page.$$eval(".prediction li b", (bs) => bs.map((b) => b.textContent));
  check(data.texts[0].with_pe.predictions.length === 1 && filled.length === 5, `the <mask> is filled: ${filled.join(", ")}`);
  await type("#text-a", "the cat sat on the mat");
  await type("#text-b", "the mat sat on the cat");
  data = await view();
  const verdict = await page.$eval("#verdict", (p) => p.textContent).catch(() => "");
  check(data.texts.length === 2 && verdict === data.compare.verdict && verdict.length > 0, `B brings the compare report: "${verdict}"`);
  const panelsB = await page.$$eval('#grids .panel[data-text="1"]', (p) => p.length);
  check(panelsB === L * H && !(await page.$eval("#a-order-box", (e) => e.hidden)), "B has its maps and the reorder box");
  check(problems.length === 0, `no console error, no request but to the server${problems.length ? ":\n  " + problems.join("\n  ") : ""}`);
} finally {
  await browser.close();
  fs.rmSync(profile, { recursive: true, force: true });
  server.kill("SIGTERM");
}
console.log(failures() ? `${failures()} check(s) failed` : "all checks passed");
process.exit(failures() ? 1 : 0);
