#!/usr/bin/env node
// Read whole Zarr arrays with zarrita (the reference reader of the zarrfs integration tests).
//
//   node zarrita_read.mjs STORE OUTDIR ARRAY_PATH [ARRAY_PATH ...]
//
// For the i-th ARRAY_PATH (relative to STORE, "" or "." for a root array) zarrita opens the array,
// reads all of it with `zarr.get(arr, null)` and this script writes OUTDIR/<i>.bin: every element
// in C (row-major) order, little-endian — the flat encoding zarrfs exposes for final Zarr v3. One
// JSON line per array goes to stdout:
//   {"i": 0, "path": "...", "ok": true, "file": ".../0.bin", "shape": [...], "data_type": "int16",
//    "typestr": "<i2", "nbytes": N, "fill_value": ..., "attributes": {...},
//    "dimension_names": [...] | null, "float16_as_uint16": false}
// or, when zarrita cannot read it, {"i": 0, "path": "...", "ok": false, "error": "..."}.
// With --consolidated the store is wrapped in zarrita's withConsolidatedMetadata (format v3:
// the root zarr.json's "consolidated_metadata") and a first line {"contents": [{path, kind}]}
// lists the nodes zarrita knows from it; metadata then comes from the consolidated document.
// Zero-size arrays (a 0 in the shape) are not read (zarrita's get() throws on them) and give an
// empty file with "zero_size_not_read": true.
// Variable-length "string" arrays read fine in zarrita; their values come back as "strings" (a
// JSON list in C order) and no .bin file is written.

import * as fs from "node:fs";
import * as path from "node:path";
import * as zarr from "zarrita";
import { DirStore } from "./zarrfs_store.mjs";

const TYPESTR = {
	bool: "|b1",
	int8: "|i1",
	uint8: "|u1",
	int16: "<i2",
	uint16: "<u2",
	int32: "<i4",
	uint32: "<u4",
	int64: "<i8",
	uint64: "<u8",
	float16: "<f2",
	float32: "<f4",
	float64: "<f8",
};

function cStrides(shape) {
	const s = new Array(shape.length);
	let step = 1;
	for (let i = shape.length - 1; i >= 0; i--) {
		s[i] = step;
		step *= shape[i];
	}
	return s;
}

function sameStrides(a, b) {
	return a.length === b.length && a.every((x, i) => x === b[i] || false);
}

// Bytes of a zarrita chunk {data, shape, stride} in C order.
function cOrderBytes(chunk) {
	const { data, shape, stride } = chunk;
	const n = shape.reduce((a, b) => a * b, 1);
	const bpe = data.BYTES_PER_ELEMENT;
	const src = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
	if (n === 0) return new Uint8Array(0);
	if (sameStrides(stride, cStrides(shape))) return src.subarray(0, n * bpe);
	const out = new Uint8Array(n * bpe);
	const idx = new Array(shape.length).fill(0);
	for (let k = 0; k < n; k++) {
		let off = 0;
		for (let d = 0; d < shape.length; d++) off += idx[d] * stride[d];
		out.set(src.subarray(off * bpe, off * bpe + bpe), k * bpe);
		for (let d = shape.length - 1; d >= 0; d--) {
			if (++idx[d] < shape[d]) break;
			idx[d] = 0;
		}
	}
	return out;
}

function scalarBytes(dataType, v) {
	const ctr = {
		bool: Uint8Array,
		int8: Int8Array,
		uint8: Uint8Array,
		int16: Int16Array,
		uint16: Uint16Array,
		int32: Int32Array,
		uint32: Uint32Array,
		int64: BigInt64Array,
		uint64: BigUint64Array,
		float32: Float32Array,
		float64: Float64Array,
	}[dataType];
	if (!ctr) throw new Error(`0-d array of ${dataType}`);
	const a = new ctr(1);
	a[0] = dataType === "bool" ? (v ? 1 : 0) : v;
	return new Uint8Array(a.buffer);
}

function jsonSafe(v) {
	return JSON.parse(
		JSON.stringify(v, (_k, x) => {
			if (typeof x === "bigint") return x.toString();
			if (typeof x === "number" && !Number.isFinite(x)) return String(x);
			return x;
		}),
	);
}

async function readOne(store, float16Keys, outdir, i, rel) {
	const p = rel === "" || rel === "." ? "/" : `/${rel.replace(/^\/+/, "")}`;
	const arr = await zarr.open(zarr.root(store).resolve(p), { kind: "array" });
	const f16 = float16Keys.has(`${p === "/" ? "" : p}/zarr.json`);
	const dataType = f16 ? "float16" : arr.dtype;
	const res = {
		i,
		path: rel,
		ok: true,
		shape: arr.shape,
		chunks: arr.chunks,
		data_type: dataType,
		typestr: TYPESTR[dataType] ?? null,
		fill_value: jsonSafe(arr.fillValue),
		attributes: jsonSafe(arr.attrs),
		dimension_names: arr.dimensionNames ?? null,
		float16_as_uint16: f16,
	};
	if (arr.shape.length > 0 && arr.shape.some((d) => d === 0)) {
		// zarrita 0.7.5's get() throws "Input contains an empty iterator" on zero-size arrays:
		// there is nothing to read, so the flat bytes are empty.
		const file = path.join(outdir, `${i}.bin`);
		fs.writeFileSync(file, new Uint8Array(0));
		return { ...res, file, nbytes: 0, zero_size_not_read: true };
	}
	const got = await zarr.get(arr, null);
	if (dataType === "string" || dataType === "v2:object") {
		const vals = arr.shape.length === 0 ? [got] : Array.from(got.data);
		res.strings = vals;
		return res;
	}
	let bytes;
	if (arr.shape.length === 0) {
		bytes = scalarBytes(f16 ? "uint16" : dataType, got);
	} else {
		bytes = cOrderBytes(got);
	}
	const file = path.join(outdir, `${i}.bin`);
	fs.writeFileSync(file, bytes);
	res.file = file;
	res.nbytes = bytes.length;
	return res;
}

async function main() {
	let args = process.argv.slice(2);
	const consolidated = args[0] === "--consolidated";
	if (consolidated) args = args.slice(1);
	const [store_dir, outdir, ...paths] = args;
	if (!store_dir || !outdir) {
		console.error("usage: zarrita_read.mjs [--consolidated] STORE OUTDIR ARRAY_PATH...");
		process.exit(2);
	}
	fs.mkdirSync(outdir, { recursive: true });
	const dirStore = new DirStore(store_dir, { float16AsUint16: !consolidated });
	let store = dirStore;
	if (consolidated) {
		store = await zarr.withConsolidatedMetadata(dirStore, { format: "v3" });
		const contents = store.contents().map(({ path: p, kind }) => ({ path: p, kind }));
		process.stdout.write(`${JSON.stringify({ contents })}\n`);
	}
	for (let i = 0; i < paths.length; i++) {
		let line;
		try {
			line = await readOne(store, dirStore.float16Keys, outdir, i, paths[i]);
		} catch (err) {
			line = { i, path: paths[i], ok: false, error: `${err?.name}: ${err?.message}` };
			if (err?.cause) line.error += ` (cause: ${err.cause?.message ?? err.cause})`;
		}
		process.stdout.write(`${JSON.stringify(line)}\n`);
	}
}

await main();
