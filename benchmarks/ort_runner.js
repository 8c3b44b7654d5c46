// The ONNX Runtime anchor of `python3 -m static_runtime bench`: a long-lived node process that
// times session.run on request, so the bench tool can interleave ONNX Runtime with the other
// runtimes round by round. Timing happens here, with process.hrtime, so neither node's start-up
// nor the pipe to Python is part of any number.
//
//   node ort_runner.js CONFIG.json
//
// CONFIG: {"model": "m.onnx", "binding_twin": "twin.onnx", "threads": 1, "warmup": 20,
//          "inputs": [{"name": "x", "type": "float32", "dims": [8, 64], "file": "x.bin"}],
//          "output_dir": "DIR"}
// "binding_twin" is a model with the same inputs that returns outputs of the model's shapes and
// dtypes without computing them (static_runtime.ort.BindingTwin): timing it in the same process
// gives the binding's per-call cost (JS tensors in, promise, output wrapping), which the caller
// subtracts. After loading and warming up both sessions, prints one JSON line
// {"ready": true, "version": ..., "outputs": [{"name", "type", "dims", "file"}]} (the model's
// outputs on the given inputs, written raw to output_dir so the caller can check them). Then
// reads one JSON request per line:
//   {"calls": N, "untimed": U}  runs each session U times untimed, then times N model runs and
//                 N twin runs, alternating (so drift hits both alike); replies
//                 {"model_s": [per-call seconds...], "binding_s": [...]}
//   {"quit": true} exits.
// Errors are printed as {"error": "..."} and exit with status 1.
'use strict';

const fs = require('fs');
const path = require('path');
const readline = require('readline');

let ort;
try {
  ort = require('onnxruntime-node');
} catch (error) {
  fail(`cannot load onnxruntime-node (run 'npm install --ignore-scripts' in ${__dirname}): ` +
       error.message);
}

function fail(message) {
  process.stdout.write(JSON.stringify({error: message}) + '\n');
  process.exit(1);
}

const kArrays = {
  float32: Float32Array,
  float64: Float64Array,
  int32: Int32Array,
  int64: BigInt64Array,
  bool: Uint8Array,
};

function loadInput(spec) {
  const Array = kArrays[spec.type];
  if (!Array) {
    fail(`input '${spec.name}': unsupported type '${spec.type}'; expected one of ` +
         Object.keys(kArrays).join(', '));
  }
  const bytes = fs.readFileSync(spec.file);
  // A copy into a fresh, aligned buffer: the file's Buffer may sit at any offset of a pool.
  const data = new Array(bytes.byteLength / Array.BYTES_PER_ELEMENT);
  new Uint8Array(data.buffer).set(bytes);
  return new ort.Tensor(spec.type, data, spec.dims);
}

async function createSession(file, threads) {
  return ort.InferenceSession.create(file, {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
  });
}

async function timeOne(session, feeds) {
  const start = process.hrtime.bigint();
  await session.run(feeds);
  return Number(process.hrtime.bigint() - start) * 1e-9;
}

// Per-call seconds of `calls` runs of each session, alternating between them, after `untimed`
// runs of each.
async function timeBoth(model, twin, feeds, calls, untimed = 0) {
  for (let i = 0; i < untimed; ++i) {
    await model.run(feeds);
    await twin.run(feeds);
  }
  const model_s = new Array(calls);
  const binding_s = new Array(calls);
  for (let i = 0; i < calls; ++i) {
    model_s[i] = await timeOne(model, feeds);
    binding_s[i] = await timeOne(twin, feeds);
  }
  return {model_s, binding_s};
}

function writeOutputs(results, dir) {
  return Object.entries(results).map(([name, tensor], index) => {
    const file = path.join(dir, `ort_output_${index}.bin`);
    const data = tensor.data;
    fs.writeFileSync(file, Buffer.from(data.buffer, data.byteOffset, data.byteLength));
    return {name, type: tensor.type, dims: tensor.dims, file};
  });
}

async function main() {
  if (process.argv.length !== 3) {
    fail('usage: node ort_runner.js CONFIG.json');
  }
  const config = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const feeds = {};
  for (const spec of config.inputs) {
    feeds[spec.name] = loadInput(spec);
  }
  const model = await createSession(config.model, config.threads);
  const twin = await createSession(config.binding_twin, config.threads);
  const outputs = writeOutputs(await model.run(feeds), config.output_dir);
  await timeBoth(model, twin, feeds, config.warmup);
  process.stdout.write(
      JSON.stringify({ready: true, version: ort.env.versions.node || '', outputs}) + '\n');

  const lines = readline.createInterface({input: process.stdin});
  for await (const line of lines) {
    const request = JSON.parse(line);
    if (request.quit) {
      break;
    }
    const times = await timeBoth(model, twin, feeds, request.calls, request.untimed || 0);
    process.stdout.write(JSON.stringify(times) + '\n');
  }
  process.exit(0);
}

main().catch((error) => fail(error.message || String(error)));
