#!/usr/bin/env node
// Write final Zarr v3 hierarchies with zarrita (`zarr.create` + `zarr.set`).
//
//   node zarrita_write.mjs SPEC.json STORE
//
// SPEC.json is {"nodes": [...]} (gen_v3_zarrita.py builds it; the same file computes the
// expected arrays with numpy from the same description):
//   {"kind": "group", "path": "a/b", "attributes": {...}}
//   {"kind": "array", "path": "a/x", "data_type": "int16", "shape": [7, 9],
//    "chunk_shape": [3, 4], "codecs": [...], "fill_value": 7,
//    "fill_value_json": "9223372036854774784"      (optional: exact JSON text of the fill value)
//    "separator": "/" | ".",                         (default chunk key encoding's separator)
//    "chunk_key_encoding": {...},                    (optional: replaces zarrita's "default")
//    "dimension_names": [...], "attributes": {...},
//    "seed": 3,
//    "writes": [{"sel": [[0, 6], [2, 9]]}, {"sel": null, "scalar": 5}, ...]}
// Each write stores, over the selection (null = the whole array, a [start, stop) pair per
// dimension), either `scalar` or the generated values of the elements there: value(k) of the
// element's flat C-order index k over the whole array (`valueAt` below; gen_v3_zarrita.py has
// the numpy twin). Writes happen in order; chunks no write touches are never stored.
//
// What zarrita 0.7.5 can encode itself: bytes (little/big), transpose, blosc/zstd/lz4 (through
// numcodecs.js WebAssembly), numcodecs.delta, numcodecs.shuffle. It cannot encode gzip, zlib,
// crc32c (encode throws UnsupportedError), sharding (`set` on sharded arrays throws) or
// float16 (no Float16Array in Node 20). This script adds, through zarrita's codec registry,
// encoders for gzip (node:zlib) and crc32c (table-driven, RFC 3720 polynomial) and maps v3
// blosc's string "shuffle" to numcodecs.js's numbers (zarrita passes the string through, which
// numcodecs.js treats as noshuffle); float16 arrays are written as uint16 bit patterns and
// relabelled float16 in zarr.json afterwards.

import * as fs from "node:fs";
import * as path from "node:path";
import * as zlib from "node:zlib";
import * as zarr from "zarrita";
import { DirStore, halfBits } from "./zarrfs_store.mjs";

// ---------------------------------------------------------------------------------------------
// codec registry additions

const CRC32C_TABLE = (() => {
	const t = new Uint32Array(256);
	for (let n = 0; n < 256; n++) {
		let c = n;
		for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
		t[n] = c >>> 0;
	}
	return t;
})();

export function crc32c(bytes) {
	let c = 0xffffffff;
	for (let i = 0; i < bytes.length; i++) c = CRC32C_TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
	return (c ^ 0xffffffff) >>> 0;
}

function withEncoder(name, makeEncode) {
	const original = zarr.registry.get(name);
	zarr.registry.set(name, async () => {
		const Base = await original();
		return {
			kind: Base.kind,
			fromConfig(config, meta) {
				const codec = Base.fromConfig(config, meta);
				codec.encode = makeEncode(config ?? {});
				return codec;
			},
		};
	});
}

withEncoder("gzip", (config) => async (bytes) => {
	const out = zlib.gzipSync(bytes, { level: config.level ?? 6 });
	return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
});

withEncoder("crc32c", () => (bytes) => {
	const out = new Uint8Array(bytes.length + 4);
	out.set(bytes, 0);
	new DataView(out.buffer).setUint32(bytes.length, crc32c(bytes), true);
	return out;
});

const SHUFFLE = { noshuffle: 0, shuffle: 1, bitshuffle: 2 };
{
	const original = zarr.registry.get("blosc");
	zarr.registry.set("blosc", async () => {
		const Base = await original();
		return {
			fromConfig(config, meta) {
				const c = { ...config };
				if (typeof c.shuffle === "string") c.shuffle = SHUFFLE[c.shuffle];
				return Base.fromConfig(c, meta);
			},
		};
	});
}

// ---------------------------------------------------------------------------------------------
// generated values (the numpy twin is gen_v3_zarrita.values)

const M64 = (1n << 64n) - 1n;
const BITS = { int8: 8, int16: 16, int32: 32, int64: 64, uint8: 8, uint16: 16, uint32: 32, uint64: 64 };

function floatBase(k, seed) {
	const r = (k * 37 + seed) % 2001;
	const m = k % 53;
	if (m === 7) return Number.NaN;
	if (m === 11) return Number.POSITIVE_INFINITY;
	if (m === 13) return Number.NEGATIVE_INFINITY;
	if (m === 17) return -0;
	return r;
}

export function valueAt(dataType, k, seed) {
	if (dataType === "bool") return (k * 7 + seed) % 3 === 0;
	const bits = BITS[dataType];
	if (bits) {
		let h = (BigInt(k) * 0x9e3779b97f4a7c15n + BigInt(seed) * 0x632be59bd9b4e019n + 0x1234567n) & M64;
		h >>= BigInt(64 - bits);
		if (dataType.startsWith("int")) h = BigInt.asIntN(bits, h);
		return bits === 64 ? h : Number(h);
	}
	const b = floatBase(k, seed);
	if (!Number.isFinite(b) || Object.is(b, -0)) return b;
	if (dataType === "float16") return (b - 1000) * 0.125;
	if (dataType === "float32" || dataType === "float64") return (b - 1000) * 0.1;
	throw new Error(`no generated values for ${dataType}`);
}

const CTR = {
	bool: Uint8Array,
	int8: Int8Array,
	int16: Int16Array,
	int32: Int32Array,
	int64: BigInt64Array,
	uint8: Uint8Array,
	uint16: Uint16Array,
	uint32: Uint32Array,
	uint64: BigUint64Array,
	float16: Uint16Array,
	float32: Float32Array,
	float64: Float64Array,
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

function encodeScalar(dataType, v) {
	if (dataType === "float16") return halfBits(v);
	if (dataType === "bool") return Boolean(v);
	if (dataType === "int64" || dataType === "uint64") return BigInt(v);
	if (typeof v === "string") return { NaN: Number.NaN, Infinity: Infinity, "-Infinity": -Infinity }[v];
	return v;
}

// A zarrita chunk {data, shape, stride} holding the generated values over `sel`.
function regionChunk(node, sel) {
	const { data_type: dt, shape } = node;
	const gstride = cStrides(shape);
	const rshape = sel.map(([a, b]) => b - a);
	const n = rshape.reduce((a, b) => a * b, 1);
	const Ctr = CTR[dt];
	const raw = new Ctr(n);
	const idx = rshape.map(() => 0);
	for (let i = 0; i < n; i++) {
		let k = 0;
		for (let d = 0; d < shape.length; d++) k += (sel[d][0] + idx[d]) * gstride[d];
		let v = valueAt(dt, k, node.seed ?? 0);
		if (dt === "float16") v = halfBits(v);
		else if (dt === "bool") v = v ? 1 : 0;
		raw[i] = v;
		for (let d = rshape.length - 1; d >= 0; d--) {
			if (++idx[d] < rshape[d]) break;
			idx[d] = 0;
		}
	}
	// zarrita represents bool as its BoolArray (1 byte per element)
	const data = dt === "bool" ? new zarr.BoolArray(raw.buffer) : raw;
	return { data, shape: rshape, stride: cStrides(rshape) };
}

// ---------------------------------------------------------------------------------------------

function zarrJsonPath(storeDir, rel) {
	return path.join(storeDir, rel, "zarr.json");
}

// Rewrite zarr.json: exact fill value text, chunk key encoding, the real data type.
function patchMetadata(storeDir, node, { relabel }) {
	const file = zarrJsonPath(storeDir, node.path);
	const doc = JSON.parse(fs.readFileSync(file, "utf8"));
	const PLACEHOLDER = "@@FILL_VALUE@@";
	if (relabel) doc.data_type = node.data_type;
	if (node.chunk_key_encoding) doc.chunk_key_encoding = node.chunk_key_encoding;
	doc.fill_value = PLACEHOLDER;
	const fillText = node.fill_value_json ?? JSON.stringify(node.fill_value);
	const text = JSON.stringify(doc, null, 2).replace(JSON.stringify(PLACEHOLDER), fillText);
	fs.writeFileSync(file, text);
}

async function writeArray(store, storeDir, node) {
	const dt = node.data_type;
	const isF16 = dt === "float16";
	const loc = zarr.root(store).resolve(`/${node.path}`);
	// zarrita JSON-encodes the fill value itself: BigInt cannot be, so hand it a placeholder
	// number and write the exact text afterwards (patchMetadata).
	await zarr.create(loc, {
		shape: node.shape,
		chunkShape: node.chunk_shape,
		dtype: isF16 ? "uint16" : dt,
		codecs: node.codecs,
		fillValue: 0,
		chunkSeparator: node.separator ?? "/",
		dimensionNames: node.dimension_names,
		attributes: node.attributes ?? {},
	});
	// write the data through zarrita with the real fill value; float16 as uint16 bit patterns
	patchMetadata(storeDir, { ...node, data_type: isF16 ? "uint16" : dt,
		fill_value: isF16 ? halfBits(node.fill_value) : node.fill_value,
		fill_value_json: isF16 ? undefined : node.fill_value_json }, { relabel: true });
	const arr = await zarr.open(loc, { kind: "array" });
	for (const w of node.writes ?? []) {
		const sel = w.sel ?? node.shape.map((s) => [0, s]);
		const zsel = node.shape.length === 0 ? null : sel.map(([a, b]) => zarr.slice(a, b));
		if ("scalar" in w) {
			await zarr.set(arr, zsel, encodeScalar(dt, w.scalar));
		} else if (node.shape.length === 0) {
			let v = valueAt(dt, 0, node.seed ?? 0);
			if (isF16) v = halfBits(v);
			await zarr.set(arr, null, v);
		} else {
			await zarr.set(arr, zsel, regionChunk(node, sel));
		}
	}
	patchMetadata(storeDir, node, { relabel: true });
}

async function main() {
	const [specFile, storeDir] = process.argv.slice(2);
	if (!specFile || !storeDir) {
		console.error("usage: zarrita_write.mjs SPEC.json STORE");
		process.exit(2);
	}
	const spec = JSON.parse(fs.readFileSync(specFile, "utf8"));
	fs.mkdirSync(storeDir, { recursive: true });
	const store = new DirStore(storeDir);
	let n = 0;
	for (const node of spec.nodes) {
		try {
			if (node.kind === "group") {
				await zarr.create(zarr.root(store).resolve(`/${node.path}`), {
					attributes: node.attributes ?? {},
				});
			} else {
				await writeArray(store, storeDir, node);
			}
			n++;
		} catch (err) {
			console.error(`zarrita_write: ${node.path}: ${err?.name}: ${err?.message}`);
			if (err?.cause) console.error(`  cause: ${err.cause?.message ?? err.cause}`);
			process.exit(1);
		}
	}
	console.log(JSON.stringify({ ok: true, nodes: n }));
}

await main();
