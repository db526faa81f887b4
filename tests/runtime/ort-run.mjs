// Runs an ONNX model in onnxruntime-node: the numeric and speed reference
// for Graft's runtime.
//
//   node ort-run.mjs MODEL [--input NAME=FILE.npy]... [--random] [--seed N]
//        [--dim NAME=VALUE]... [-o DIR] [--threads N] [--repeat N]
//
// Random inputs use the same generator as nothing else: tests that compare
// outputs feed the same .npy files to both runtimes. Prints
// "median time per run: X ms" like graft-cli run.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '..', 'node', 'package.json'));
const ort = require('onnxruntime-node');

const DTYPES = {
  '<f4': ['float32', Float32Array, 4], '<f8': ['float64', Float64Array, 8],
  '|i1': ['int8', Int8Array, 1], '|u1': ['uint8', Uint8Array, 1],
  '<i2': ['int16', Int16Array, 2], '<u2': ['uint16', Uint16Array, 2],
  '<i4': ['int32', Int32Array, 4], '<u4': ['uint32', Uint32Array, 4],
  '<i8': ['int64', BigInt64Array, 8], '<u8': ['uint64', BigUint64Array, 8],
  '|b1': ['bool', Uint8Array, 1],
};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 10 || buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const off = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', off, off + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${file}: fortran_order`);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  const [type, Ctor, size] = DTYPES[descr] || (() => { throw new Error(`${file}: dtype ${descr}`); })();
  const start = off + hlen;
  const n = shape.reduce((a, b) => a * b, 1);
  const bytes = buf.subarray(start, start + n * size);
  const data = new Ctor(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + n * size));
  return new ort.Tensor(type, type === 'bool' ? Uint8Array.from(data) : data, shape);
}

function writeNpy(file, tensor) {
  const descr = Object.keys(DTYPES).find(k => DTYPES[k][0] === tensor.type);
  if (!descr) throw new Error(`cannot save ${tensor.type}`);
  const shape = tensor.dims.length === 1 ? `(${tensor.dims[0]},)` : `(${tensor.dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  const pad = 64 - ((10 + header.length + 1) % 64);
  header += ' '.repeat(pad % 64) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1; head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  const data = Buffer.from(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'), data]));
}

// mulberry32: a small seeded generator
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function main() {
  const args = process.argv.slice(2);
  const opts = { inputs: [], dims: {}, random: false, seed: 0, out: null, threads: 1, repeat: 1 };
  let model = null;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--input' || a === '-i') opts.inputs.push(args[++i]);
    else if (a === '--dim') { const [k, v] = args[++i].split('='); opts.dims[k] = Number(v); }
    else if (a === '--random') opts.random = true;
    else if (a === '--seed') opts.seed = Number(args[++i]);
    else if (a === '-o') opts.out = args[++i];
    else if (a === '--threads') opts.threads = Number(args[++i]);
    else if (a === '--repeat') opts.repeat = Number(args[++i]);
    else if (!model) model = a;
    else throw new Error(`unexpected argument ${a}`);
  }
  if (!model) throw new Error('usage: ort-run.mjs MODEL [options]');
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: opts.threads, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const feeds = {};
  const given = opts.inputs.map(s => { const k = s.indexOf('='); return k > 0 ? [s.slice(0, k), s.slice(k + 1)] : [null, s]; });
  session.inputNames.forEach((name, i) => {
    const entry = given.find(([n]) => n === name) || (given[i] && given[i][0] === null ? given[i] : null);
    if (entry) { feeds[name] = readNpy(entry[1]); return; }
    if (!opts.random) throw new Error(`input '${name}' was not given`);
    const meta = session.inputMetadata ? session.inputMetadata[i] : null;
    const shape = (meta && meta.shape ? meta.shape : []).map(d => typeof d === 'number' ? d : opts.dims[d]);
    if (shape.some(d => d === undefined)) throw new Error(`input '${name}': give its symbolic dims with --dim`);
    const n = shape.reduce((a, b) => a * b, 1);
    const r = rng(opts.seed + i);
    const data = new Float32Array(n);
    for (let k = 0; k < n; k++) data[k] = r() * 2 - 1;
    feeds[name] = new ort.Tensor('float32', data, shape);
  });
  const times = [];
  let results;
  for (let r = 0; r < opts.repeat; r++) {
    const start = process.hrtime.bigint();
    results = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  if (opts.out) {
    fs.mkdirSync(opts.out, { recursive: true });
    for (const name of session.outputNames)
      writeNpy(path.join(opts.out, name.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\./, '_') + '.npy'), results[name]);
  }
  times.sort((a, b) => a - b);
  const median = times.length % 2 ? times[(times.length - 1) / 2] : (times[times.length / 2 - 1] + times[times.length / 2]) / 2;
  console.log(`median time per run: ${median.toFixed(3)} ms over ${opts.repeat} runs (${opts.threads} threads)`);
}

main().catch(e => { console.error(`ort-run: ${e.message}`); process.exit(1); });
