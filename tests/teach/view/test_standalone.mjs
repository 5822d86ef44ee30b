// The page of `ordo view --standalone` in headless Chromium, opened from disk with the network off: the
// page carries ordo compiled to WebAssembly (tools/web) and the model, and computes every answer itself.
//
//   node test_standalone.mjs ORDO MODEL_DIR PAGE [--sentences N] [--timing]
//
// Checks: the page loads nothing (every request but the file's own is refused, and the browser is offline)
// and logs no console error; for each sentence typed into box A (some with a text B), the page redraws,
// its pieces are the command line's (ordo fill's for a text with <mask>) and its attention maps (rounded
// to 4 decimals) are the weights of `ordo trace --json`; and the page's engine answers the questions of
// `ordo serve` as the command line does, numbers within 1e-5 (relative above 1): /trace with and without
// positions (attention weights, hidden states, the pooled vector, the head's guesses; the stages inside a
// layer within 1e-4), /fill, /score, and the inside of a head (its weights, v and A·v; in layer 0 the four parts of
// `ordo attention --parts`); the training length read from the model's training.json. Prints the size of the file, its first paint and the redraw time after typing
// (request to painted, median of the typed sentences of 20 pieces or fewer) without judging them.
// Exit 0 pass, 1 fail, 77 skip (no Chromium).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { check, failures, launch, loadPuppeteer, openPage, parseParts } from "./harness.mjs";

const [ordo, modelDir, pagePath, ...flags] = process.argv.slice(2);
const flag = (name, d) => (flags.includes(name) ? flags[flags.indexOf(name) + 1] : d);
const count = +flag("--sentences", 20);
const TOLERANCE = 1e-5;
const ROUNDED = 5.01e-5 + TOLERANCE; // the page's maps: the weights rounded to 4 decimals

const SENTENCES = [
  "the cat sat on the mat",
  "It is a truth universally acknowledged, that a single man in possession of a good fortune must be in want of a wife.",
  "the <mask> sat on the mat",
  "Emma Woodhouse, handsome, clever, and rich, had lived nearly twenty-one years",
  "a dog chased the ball across the wet grass",
  "She was the youngest of the two daughters",
  "the mat sat on the cat",
  "Ａｂｃ ﬁne ① café naïve",
  "日本語 and emoji 👍🏽 mixed in",
  "   spaces    everywhere   ",
  "numbers 1234 and 3.14159 and -7",
  "the river ran <mask> the old stone bridge",
  "a",
  "Why? Because! (Parentheses) [brackets] {braces}",
  "quick brown foxes jump over lazy dogs",
  "the teacher read the letter to the class",
  "Mr. Darcy bowed, and said nothing",
  "she walked to the <mask> and bought some bread",
  "tabs\tand other ¡¿ punctuation — dashes …",
  "a house with a red door and a small garden",
].slice(0, count);
const WITH_B = { 0: "the mat sat on the cat", 6: "the cat sat on the mat", 14: "lazy dogs jump over quick brown foxes" };

const cli = (...args) => JSON.parse(execFileSync(ordo, [...args, "--model", modelDir], { encoding: "utf8", maxBuffer: 1 << 28 }));

// The largest difference between two JSON values, numbers within the tolerance (relative above 1), and
// the first place where they differ otherwise (a string, a length, a key), or null.
const gaps = { strict: 0, inner: 0 }; // the largest differences seen, for the report
function compare(a, b, where = "", tolerance = TOLERANCE, kind = "strict") {
  if (typeof a === "number" && typeof b === "number") {
    const d = Math.abs(a - b) / Math.max(1, Math.abs(b));
    gaps[kind] = Math.max(gaps[kind], d);
    return d <= tolerance ? null : `${where}: ${a} vs ${b}`;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) return `${where}: length ${a.length} vs ${b.length}`;
    for (let i = 0; i < a.length; i++) { const d = compare(a[i], b[i], `${where}[${i}]`, tolerance, kind); if (d) return d; }
    return null;
  }
  if (a && b && typeof a === "object" && typeof b === "object") {
    const ka = Object.keys(a).sort(), kb = Object.keys(b).sort();
    if (ka.join() !== kb.join()) return `${where}: keys ${ka} vs ${kb}`;
    for (const k of ka) { const d = compare(a[k], b[k], `${where}.${k}`, tolerance, kind); if (d) return d; }
    return null;
  }
  return a === b ? null : `${where}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
}
// Two answers of /trace (or ordo trace --json): the pieces, the attention weights, the hidden states,
// the pooled vector and the head's guesses within 1e-5; the stages inside a layer (q, k, v, the heads'
// outputs, the feed-forward's hidden units), where sums of hundreds of products meet another order of
// summation than the command line's kernels, within 1e-4.
const INNER = 1e-4;
function compareTrace(mine, cli) {
  const outer = (s) => s.name === "attention weights" || s.name === "pieces and ids";
  const strict = (j) => ({ ...j, stages: j.stages.filter(outer) });
  return compare(strict(mine), strict(cli)) ||
    compare(mine.stages.filter((s) => !outer(s)), cli.stages.filter((s) => !outer(s)), ".stages", INNER, "inner");
}
// The attention weights of `ordo trace --json`, [L][H][S][S], from its stages.
function traceAttention(trace) {
  const A = [];
  for (const s of trace.stages)
    if (s.head !== null && s.head !== undefined && /weights|softmax/i.test(s.name)) ((A[s.layer] ||= [])[s.head] = s.values);
  return A;
}
const maxDiff = (X, Y) => {
  const x = [X].flat(Infinity), y = [Y].flat(Infinity);
  return x.length !== y.length || x.length === 0 ? Infinity : x.reduce((m, v, i) => Math.max(m, Math.abs(v - y[i])), 0);
};
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];

const puppeteer = await loadPuppeteer();
const bytes = fs.statSync(pagePath).size;
console.log(`the file: ${(bytes / 1e6).toFixed(2)} MB`);
const { browser, profile } = await launch(puppeteer, "standalone");
try {
  const url = pathToFileURL(path.resolve(pagePath)).href;
  const { page, problems } = await openPage(browser, (u) => u === url);
  await page.setOfflineMode(true);
  await page.goto(url, { waitUntil: "load" });
  await page.waitForFunction(() => window.ordoView && window.ordoView.renderMs !== null, { timeout: 20000 });
  console.log(`first paint: ${(await page.evaluate(() => window.ordoView.renderMs)).toFixed(0)} ms from the start of loading`);
  await page.waitForFunction(() => window.ordoView.inside !== null, { timeout: 60000 });
  console.log(`the engine loaded in ${(await page.evaluate(() => window.ordoView.engineMs)).toFixed(0)} ms`);
  check(await page.$eval("#live", (e) => !e.hidden), "the page shows its text boxes");
  const ask = (p, body) => page.evaluate((p, body) => window.ordoView.ask(p, body), p, body);

  const type = async (selector, text) => {
    const before = await page.evaluate(() => window.ordoView.updates);
    await page.click(selector, { clickCount: 3 });
    await page.keyboard.press("Backspace");
    if (text) await page.type(selector, text);
    return before;
  };
  const times = [];
  let sentences = 0, numbers = 0;
  for (const [i, a] of SENTENCES.entries()) {
    const b = WITH_B[i] || "";
    await type("#text-b", b);
    const before = await type("#text-a", a);
    await page.waitForFunction((n, t) => window.ordoView.updates > n && window.ordoView.data.texts.map((x) => x.text).join("|") === t,
      { timeout: 30000 }, before, [a, b].filter((x) => x).join("|"));
    const data = await page.evaluate(() => window.ordoView.data);
    const ms = await page.evaluate(() => window.ordoView.updateMs);
    const problems0 = [];
    for (const [t, text] of [a, b].filter((x) => x).entries()) {
      // A <mask> is one piece on the page (ordo fill's rule); ordo trace reads the marker as text.
      const masked = text.includes("<mask>");
      if (masked) {
        const fill = cli("fill", "--json", text);
        if (compare(data.texts[t].pieces, fill.pieces)) problems0.push(`text ${t} pieces ${data.texts[t].pieces} vs ${fill.pieces}`);
        const d = compare(await ask("/fill", { text }), fill);
        if (d) problems0.push(`text ${t}: POST /fill in the page differs from ordo fill --json at ${d}`);
      }
      for (const [run, extra] of [["with_pe", []], ["without_pe", ["--no-pe"]]]) {
        const trace = cli("trace", "--json", ...extra, text);
        if (!masked) {
          if (compare(data.texts[t].pieces, trace.pieces)) problems0.push(`text ${t} pieces ${data.texts[t].pieces} vs ${trace.pieces}`);
          const gap = maxDiff(data.texts[t][run].attention, traceAttention(trace));
          if (!(gap <= ROUNDED)) problems0.push(`text ${t} ${run}: the page's maps differ from ordo trace by ${gap}`);
        }
        const mine = await ask("/trace", { text, positions: run === "with_pe" });
        delete mine.model, delete trace.model; // the name the model goes by
        const d = compareTrace(mine, trace);
        if (d) problems0.push(`text ${t} ${run}: POST /trace in the page differs from ordo trace --json at ${d}`);
        numbers += [JSON.stringify(trace).match(/-?\d+\.\d+(e-?\d+)?/g) || []].flat().length;
      }
    }
    if (data.texts[0].pieces.length <= 20) times.push(ms);
    check(problems0.length === 0, `"${a}"${b ? ` vs "${b}"` : ""} (${data.texts[0].pieces.length} pieces): pieces, the maps and ` +
      `every number of ordo trace --json, with and without positions` + (problems0.length ? `: ${problems0.slice(0, 3).join("; ")}` : ""));
    if (!problems0.length) sentences++;
  }
  console.log(`${sentences} of ${SENTENCES.length} sentences equal to the command line's (${numbers} numbers of ordo trace --json compared; ` +
    `largest difference ${gaps.strict.toExponential(1)} in pieces, weights, hidden states, pooled vectors, guesses; ` +
    `${gaps.inner.toExponential(1)} inside the layers)`);
  if (times.length) console.log(`redraw after typing: median ${median(times).toFixed(0)} ms over ${times.length} sentences of ≤ 20 pieces (request to painted)`);

  // fill and score, and the inside of a head: the page's engine against the command line.
  const masked = "the <mask> sat on the <mask>";
  check(!compare(await ask("/fill", { text: masked }), cli("fill", "--json", masked)), "POST /fill in the page equals ordo fill --json");
  const scored = "the cat sat on the mat";
  const score = cli("score", "--json", scored);
  const mineScore = await ask("/score", { text: scored });
  check(!compare(mineScore, Array.isArray(score) ? score[0] : score), `POST /score in the page equals ordo score --json (PLL ${mineScore.pll})`);
  const inside = await ask("/attention", { text: scored, layer: 1, head: 1, positions: true });
  const inTrace = cli("trace", "--json", "--inside", "1,1", scored);
  const w = traceAttention(inTrace)[1][1];
  check(maxDiff(inside.weights, w) <= TOLERANCE, "POST /attention (the inside of layer 1, head 1) has ordo trace's weights");
  const stageOf = (name) => inTrace.stages.find((x) => x.name === name && x.layer === 1 && x.head === 1).values;
  check(maxDiff(inside.v, stageOf("value")) <= TOLERANCE && maxDiff(inside.output, stageOf("head output")) <= TOLERANCE,
    "... and its v and A·v (ordo trace's value and head output)");
  // Layer 0 of a model that adds its positions to the input: the scores split as `ordo attention --parts`
  // splits them; none for rope and alibi, whose positions act inside the heads.
  const first = await ask("/attention", { text: scored, layer: 0, head: 1, positions: true });
  const pe = await page.evaluate(() => window.ordoView.data.model.positional_encoding);
  if (pe === "sinusoidal" || pe === "learned") {
    const parts = parseParts(execFileSync(ordo, ["attention", "--model", modelDir, "--layer", "0", "--head", "1", "--parts", scored],
      { encoding: "utf8" }), first.pieces.length);
    const partGaps = Object.keys(parts).map((k) => maxDiff(first.parts[k], parts[k]));
    check(partGaps.every((g) => g <= 5.1e-4), `POST /attention layer 0, head 1: the four parts of ordo attention --parts ` +
      `(largest gaps ${partGaps.map((g) => g.toFixed(5)).join(", ")})`);
  } else {
    check(first.parts === null, `POST /attention layer 0 (${pe}): no content/position split`);
  }
  const recorded = fs.existsSync(path.join(modelDir, "training.json")) ? JSON.parse(fs.readFileSync(path.join(modelDir, "training.json"), "utf8")).max_len ?? null : null;
  const trained = await page.evaluate(() => window.ordoView.data.model.training_length);
  check(trained === recorded, `the engine in the page reads the training length from the model's training.json: ${trained} (want ${recorded})`);
  // A refused question is an error line on the page, not a crash: a text of no pieces.
  const refused = await page.evaluate(() => window.ordoView.ask("/view", { a: "" }).then(() => "answered", (e) => e.message));
  check(/"a"|text|pieces/.test(refused) && refused !== "answered", `a refused question is the server's message: ${refused}`);
  check(problems.length === 0, `no request left the file and no console error${problems.length ? ": " + problems.slice(0, 3).join("; ") : ""}`);
} finally {
  await browser.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
process.exit(failures() ? 1 : 0);
