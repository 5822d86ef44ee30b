// The WebAssembly engine's speed in node (the V8 of Chromium): one text through /view (what the page
// asks after typing: both runs, the head's guesses, the outputs) and through /trace with the fast
// encoder and with the plain reference (docs/serve.md has the figures). Medians of fresh calls.
//   node tools/web/bench.mjs WEB_DIR MODEL_DIR [TEXT] [--runs N]
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const [webDir, modelDir, ...rest] = process.argv.slice(2);
const runs = rest.includes("--runs") ? +rest[rest.indexOf("--runs") + 1] : 15;
const text = rest[0] && !rest[0].startsWith("--") ? rest[0]
  : "It is a truth universally acknowledged, that a single man in possession of a good fortune";
const ordoWeb = createRequire(import.meta.url)(path.resolve(webDir, "ordo_web.js"));
const M = await ordoWeb({ wasmBinary: fs.readFileSync(path.join(webDir, "ordo_web.wasm")) });
M.FS.mkdirTree("/ordo/model");
const config = JSON.parse(fs.readFileSync(path.join(modelDir, "config.json"), "utf8"));
for (const f of ["config.json", "model.safetensors", config.tokenizer])
  M.FS.writeFile(`/ordo/model/${f}`, fs.readFileSync(path.join(modelDir, f)));
const error = M.ccall("ordo_web_load", "string", ["string", "string"], ["/ordo/model", "model"]);
if (error) throw new Error(error);
const ask = (p, body) => {
  const j = JSON.parse(M.ccall("ordo_web_answer", "string", ["string", "string"], [p, JSON.stringify(body)]));
  if (M.ccall("ordo_web_status", "number", [], []) !== 200) throw new Error(j.error.message);
  return j;
};
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
const time = (f) => {
  f();
  const t = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    f();
    t.push(performance.now() - t0);
  }
  return median(t);
};
const pieces = ask("/tokenize", { text }).pieces.length;
console.log(`${pieces} pieces, median of ${runs}:`);
console.log(`  /view (what the page asks after typing): ${time(() => ask("/view", { a: text })).toFixed(1)} ms`);
console.log(`  /trace, fast encoder: ${time(() => ask("/trace", { text })).toFixed(1)} ms`);
console.log(`  /trace, reference encoder: ${time(() => ask("/trace", { text, reference: true })).toFixed(1)} ms`);
