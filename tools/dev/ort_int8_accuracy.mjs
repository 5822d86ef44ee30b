// ONNX Runtime int8 against its own fp32 on the same ids: the cosine of the mean-pooled outputs.
//
//   node tools/dev/ort_int8_accuracy.mjs FP32.onnx INT8.onnx NODE_MODULES_DIR < ids.jsonl
// reads one JSON array of token ids per line and prints one cosine per line.
import { createRequire } from "node:module";
import path from "node:path";
import readline from "node:readline";

const [fp32, int8, nodeModules] = process.argv.slice(2);
const require = createRequire(path.resolve(nodeModules, "package.json"));
const ort = require("onnxruntime-node");
const options = { intraOpNumThreads: 2, interOpNumThreads: 1, graphOptimizationLevel: "all" };
const a = await ort.InferenceSession.create(fp32, options);
const b = await ort.InferenceSession.create(int8, options);

const pooled = async (session, ids) => {
  const out = (await session.run({ ids: new ort.Tensor("int64", BigInt64Array.from(ids.map(BigInt)), [1, ids.length]) })).hidden;
  const d = out.dims[2], v = new Float64Array(d);
  for (let t = 0; t < ids.length; ++t) for (let j = 0; j < d; ++j) v[j] += out.data[t * d + j] / ids.length;
  return v;
};
for await (const line of readline.createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const ids = JSON.parse(line);
  const [x, y] = [await pooled(a, ids), await pooled(b, ids)];
  let xy = 0, xx = 0, yy = 0;
  for (let j = 0; j < x.length; ++j) (xy += x[j] * y[j]), (xx += x[j] * x[j]), (yy += y[j] * y[j]);
  process.stdout.write(`${xy / Math.sqrt(xx * yy)}\n`);
}
