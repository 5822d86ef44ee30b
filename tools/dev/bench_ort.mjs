// ONNX Runtime side of tools/dev/bench_peers.py: times one forward pass of an exported encoder.
//
//   node tools/dev/bench_ort.mjs MODEL.onnx NODE_MODULES_DIR THREADS
// then reads lines "B S REPEAT" from stdin and answers each with one JSON line
// {"batch", "seq", "ms_median", "ms_min"}: REPEAT timed runs on random ids after one warm-up.
import { createRequire } from "node:module";
import path from "node:path";
import readline from "node:readline";

const [model, nodeModules, threads] = process.argv.slice(2);
const require = createRequire(path.resolve(nodeModules, "package.json"));
const ort = require("onnxruntime-node");

const session = await ort.InferenceSession.create(model, {
  intraOpNumThreads: Number(threads),
  interOpNumThreads: 1,
  executionMode: "sequential",
  graphOptimizationLevel: "all",
});
const vocab = Number(process.env.ORDO_BENCH_VOCAB || 8000);

// The same fixed-seed ids on every run (a linear congruential generator).
function randomIds(n) {
  const ids = new BigInt64Array(n);
  let state = 20170612n;
  for (let i = 0; i < n; ++i) {
    state = (state * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
    ids[i] = (state >> 33n) % BigInt(vocab);
  }
  return ids;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b), n = s.length;
  return n % 2 ? s[(n - 1) / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
};

const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  const [B, S, repeat] = line.trim().split(/\s+/).map(Number);
  const feeds = { ids: new ort.Tensor("int64", randomIds(B * S), [B, S]) };
  await session.run(feeds);  // warm-up
  const ms = [];
  for (let r = 0; r < repeat; ++r) {
    const start = process.hrtime.bigint();
    await session.run(feeds);
    ms.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  process.stdout.write(JSON.stringify({ batch: B, seq: S, ms_median: median(ms), ms_min: Math.min(...ms) }) + "\n");
}
