// An independent Parquet reader and writer for our parquet format (readers/parquet.h): hyparquet (pure JavaScript,
// with hyparquet-compressors for gzip, zstd and lz4) and hyparquet-writer. Run by readers/parquet_js_test.cc.
//
//   node check_parquet.mjs read MANIFEST.json
//     MANIFEST: [{path, rows, row_groups: [rows...], codec: "ZSTD", columns: [{name, dtype, size}]}]; for every
//     file: the footer parses, num_rows, the row groups' rows, the top-level column names and the codec of every
//     chunk are the manifest's, every chunk has statistics (null_count 0, min <= max, floats in [0, 1)); rows 0, 1
//     and the last are read and decoded: every list column holds `size` values
//     of its dtype's range (floats in [0, 1), int8 in [-128, 127], ...). Prints "ok FILE" per file; exit 1 on the
//     first mismatch, naming the file and what differs.
//   node check_parquet.mjs write DIR
//     Writes files with the fork's schemas (flux's list<float32> columns, dlrm's scalar float16/float32/float64/int8
//     columns; snappy and uncompressed; several row groups) and DIR/expected.json: for each file its rows, the
//     bytes a reader reading every column by iterable mode issues (footer read as ours reads it: the last 64 KiB,
//     then the rest of a longer footer; each row group's span from its first chunk to the end of its last), and
//     the bytes of one row (values x item size).
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parquetMetadata, parquetReadObjects } from 'hyparquet'
import { compressors } from 'hyparquet-compressors'
import { parquetWriteBuffer } from 'hyparquet-writer'

const TAIL = 64 * 1024  // readers/parquet.cc kTailBytes

function fail(msg) {
  console.error(`check_parquet: ${msg}`)
  process.exit(1)
}

function arrayBufferOf(path) {
  const b = readFileSync(path)
  return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)
}

const RANGES = {
  int8: [-128, 127], uint8: [0, 255], int16: [-32768, 32767], uint16: [0, 65535],
  int32: [-(2 ** 31), 2 ** 31 - 1], uint32: [0, 2 ** 32 - 1],
}

function checkValue(file, col, row, v) {
  if (col.dtype.startsWith('float')) {
    if (typeof v !== 'number' || !(v >= 0 && v < 1)) fail(`${file}: ${col.name} row ${row}: ${v} is not in [0, 1)`)
  } else if (RANGES[col.dtype]) {
    const [lo, hi] = RANGES[col.dtype]
    if (!Number.isInteger(v) || v < lo || v > hi) fail(`${file}: ${col.name} row ${row}: ${v} is not a ${col.dtype}`)
  } else if (typeof v !== 'bigint' && typeof v !== 'number') {
    fail(`${file}: ${col.name} row ${row}: ${v} is not an integer`)
  }
}

async function read(manifestPath) {
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'))
  for (const f of manifest) {
    const file = arrayBufferOf(f.path)
    const md = parquetMetadata(file)
    if (Number(md.num_rows) !== f.rows) fail(`${f.path}: num_rows ${md.num_rows}, expected ${f.rows}`)
    const groups = md.row_groups.map(g => Number(g.num_rows))
    if (JSON.stringify(groups) !== JSON.stringify(f.row_groups)) {
      fail(`${f.path}: row groups ${JSON.stringify(groups)}, expected ${JSON.stringify(f.row_groups)}`)
    }
    const top = md.row_groups[0].columns.map(c => c.meta_data.path_in_schema[0])
    if (JSON.stringify(top) !== JSON.stringify(f.columns.map(c => c.name))) {
      fail(`${f.path}: columns ${JSON.stringify(top)}, expected ${JSON.stringify(f.columns.map(c => c.name))}`)
    }
    for (const g of md.row_groups) {
      g.columns.forEach((c, i) => {
        const m = c.meta_data
        if (m.codec !== f.codec) fail(`${f.path}: codec ${m.codec}, expected ${f.codec}`)
        // column-chunk statistics: no nulls; min <= max; floats within [0, 1)
        const st = m.statistics
        if (!st || Number(st.null_count) !== 0) fail(`${f.path}: ${m.path_in_schema[0]}: statistics without null_count 0`)
        const lo = Number(st.min_value), hi = Number(st.max_value)
        if (!(lo <= hi)) fail(`${f.path}: ${m.path_in_schema[0]}: statistics min ${st.min_value} > max ${st.max_value}`)
        if (f.columns[i].dtype.startsWith('float') && !(lo >= 0 && hi < 1)) {
          fail(`${f.path}: ${m.path_in_schema[0]}: float statistics [${lo}, ${hi}] outside [0, 1)`)
        }
      })
    }
    for (const row of [0, 1, f.rows - 1]) {
      if (row < 0 || row >= f.rows) continue
      const [obj] = await parquetReadObjects({ file, compressors, rowStart: row, rowEnd: row + 1 })
      for (const col of f.columns) {
        const values = obj[col.name]
        if (!Array.isArray(values) && !ArrayBuffer.isView(values)) fail(`${f.path}: ${col.name} row ${row} is not a list`)
        if (values.length !== col.size) fail(`${f.path}: ${col.name} row ${row} has ${values.length} values, expected ${col.size}`)
        for (const v of values) checkValue(f.path, col, row, v)
      }
    }
    console.log(`ok ${f.path}`)
  }
}

// The bytes readers/parquet.cc issues for a file read whole in iterable mode, every column selected.
function iterableBytes(file) {
  const size = file.byteLength
  const footer = new DataView(file).getUint32(size - 8, true)
  let bytes = Math.min(size, TAIL)
  if (footer + 8 > Math.min(size, TAIL)) bytes += footer + 8
  for (const g of parquetMetadata(file).row_groups) {
    let start = Infinity, end = 0
    for (const c of g.columns) {
      const m = c.meta_data
      const dict = m.dictionary_page_offset !== undefined && Number(m.dictionary_page_offset) > 0
      const s = dict ? Math.min(Number(m.dictionary_page_offset), Number(m.data_page_offset)) : Number(m.data_page_offset)
      start = Math.min(start, s)
      end = Math.max(end, s + Number(m.total_compressed_size))
    }
    bytes += end - start
  }
  return bytes
}

function listColumn(name, rows, size, seed) {
  const data = []
  for (let r = 0; r < rows; ++r) {
    const row = new Array(size)
    for (let i = 0; i < size; ++i) row[i] = Math.fround(((r * 131 + i * 7 + seed) % 1000) / 1000)
    data.push(row)
  }
  return { name, data }
}

// The 3-level LIST of list<element> as pyarrow writes the fork's list columns.
function listSchema(name, type) {
  return [
    { name, repetition_type: 'OPTIONAL', num_children: 1, converted_type: 'LIST', logical_type: { type: 'LIST' } },
    { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
    { name: 'element', repetition_type: 'OPTIONAL', type },
  ]
}

function write(dir) {
  const expected = []
  const put = (name, args, rowBytes) => {
    const buf = parquetWriteBuffer(args)
    const path = join(dir, name)
    writeFileSync(path, new Uint8Array(buf))
    expected.push({ path, rows: args.columnData[0].data.length, iterable_bytes: iterableBytes(buf), row_bytes: rowBytes })
  }
  // flux: five float32 list columns (sizes scaled down), snappy (the writer's default), row groups of 5 rows
  const flux = [['t5_encodings', 600], ['clip_encodings', 41], ['mean', 82], ['logvar', 82], ['timestamp', 7]]
  const fluxData = flux.map(([n, s], k) => listColumn(n, 12, s, k))
  const fluxSchema = [{ name: 'schema', num_children: flux.length }].concat(...flux.map(([n]) => listSchema(n, 'FLOAT')))
  put('flux_like.parquet', { columnData: fluxData, schema: fluxSchema, rowGroupSize: 5 },
    flux.reduce((a, [, s]) => a + 4 * s, 0))
  // dlrm: scalar columns of the v3 dlrm_*.yaml dtypes, uncompressed, one row group
  const rows = 50
  const dlrm = [
    { name: 'feature_000', data: Array.from({ length: rows }, (_, i) => (i % 7) / 8), type: 'FLOAT16' },
    { name: 'feature_001', data: Array.from({ length: rows }, (_, i) => (i % 5) / 5), type: 'DOUBLE' },
    { name: 'feature_002', data: Array.from({ length: rows }, (_, i) => (i % 3) / 4), type: 'FLOAT' },
    { name: 'feature_003', data: Array.from({ length: rows }, (_, i) => (i % 200) - 100), type: 'INT32' },
  ]
  put('dlrm_like.parquet', { columnData: dlrm, codec: 'UNCOMPRESSED', rowGroupSize: rows }, 2 + 8 + 4 + 4)
  writeFileSync(join(dir, 'expected.json'), JSON.stringify(expected))
  console.log(`wrote ${expected.length} files`)
}

const [mode, arg] = process.argv.slice(2)
if (mode === 'read') await read(arg)
else if (mode === 'write') write(arg)
else fail('usage: check_parquet.mjs read MANIFEST.json | write DIR')
