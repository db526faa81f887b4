// Runs an ONNX model in onnxruntime-node (the reference runtime).
// Usage: node run-ort.js MODEL.onnx INPUT_NAME IN.npy OUT_DIR
// Reads a little-endian float32 .npy, writes each output as OUT_DIR/<name>.npy.
const fs = require('fs');
const path = require('path');
const ort = require(path.join(process.env.GRAFT_SOURCE_DIR, 'tests/node/node_modules/onnxruntime-node'));

function readNpy(file) {
  const buf = fs.readFileSync(file);
  const headerLen = buf.readUInt16LE(8);
  const header = buf.toString('latin1', 10, 10 + headerLen);
  if (!header.includes("'descr': '<f4'") || header.includes("'fortran_order': True"))
    throw new Error(`${file}: only C-order little-endian float32 .npy is supported`);
  const dims = header.match(/'shape': \(([^)]*)\)/)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  const start = 10 + headerLen;
  const data = new Float32Array(buf.buffer.slice(buf.byteOffset + start, buf.byteOffset + buf.length));
  return new ort.Tensor('float32', data, dims);
}

function writeNpy(file, tensor) {
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${tensor.dims.join(', ')}${tensor.dims.length === 1 ? ',' : ''}), }`;
  while ((10 + header.length + 1) % 64 !== 0) header += ' ';
  header += '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1; head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  const data = Buffer.from(new Float32Array(tensor.data).buffer);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'), data]));
}

async function main() {
  const [model, inputName, inputFile, outDir] = process.argv.slice(2);
  const session = await ort.InferenceSession.create(model);
  const results = await session.run({ [inputName]: readNpy(inputFile) });
  fs.mkdirSync(outDir, { recursive: true });
  for (const name of session.outputNames)
    writeNpy(path.join(outDir, `${name}.npy`), results[name]);
}

main().catch(e => { console.error(`run-ort: ${e.message}`); process.exit(1); });
