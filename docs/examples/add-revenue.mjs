// add-revenue.mjs: a stage in JavaScript for sluice's exec. It reads an
// Arrow IPC stream on stdin and writes it on stdout with one more column,
// revenue = l_extendedprice * (1 - l_discount) (null where either is), as
//
//   sluice run 'scan ./lineitem | exec -- node add-revenue.mjs | show'
//
// does the same as sluice's own
//
//   sluice run "scan ./lineitem | extend 'l_extendedprice * (1 - l_discount) as revenue' | show"
//
// It needs the npm package apache-arrow (npm install apache-arrow@21.1.0;
// NODE_PATH may point at the node_modules it went to). Batches stream
// through one at a time, with Node's backpressure: memory stays that of a
// few batches whatever the input.
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createRequire } from 'node:module';

// require honours NODE_PATH, which ES module imports do not.
const { RecordBatchReader, RecordBatchStreamWriter, RecordBatch, Schema, Field, Float64, Struct, makeData } =
  createRequire(import.meta.url)('apache-arrow');

const revenueField = new Field('revenue', new Float64(), true);
let outSchema = null;

function addRevenue(batch) {
  outSchema ??= new Schema([...batch.schema.fields, revenueField], batch.schema.metadata);
  const price = batch.getChild('l_extendedprice');
  const discount = batch.getChild('l_discount');
  if (!price || !discount) {
    throw new Error('the input has no l_extendedprice or l_discount column');
  }
  const n = batch.numRows;
  const values = new Float64Array(n);
  const valid = new Uint8Array((n + 7) >> 3);
  let nulls = 0;
  for (let i = 0; i < n; i++) {
    const p = price.get(i), d = discount.get(i);
    if (p === null || d === null) {
      nulls++;
      continue;
    }
    values[i] = p * (1 - d);
    valid[i >> 3] |= 1 << (i & 7);
  }
  const revenue = makeData({ type: revenueField.type, length: n, nullCount: nulls, data: values, nullBitmap: nulls ? valid : null });
  const data = makeData({ type: new Struct(outSchema.fields), length: n, nullCount: 0, children: [...batch.data.children, revenue] });
  return new RecordBatch(outSchema, data);
}

await pipeline(
  process.stdin,
  RecordBatchReader.throughNode(),
  new Transform({
    objectMode: true,
    transform(batch, _, done) {
      try {
        done(null, addRevenue(batch));
      } catch (err) {
        done(err);
      }
    },
  }),
  RecordBatchStreamWriter.throughNode(),
  process.stdout,
);
