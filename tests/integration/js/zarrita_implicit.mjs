#!/usr/bin/env node
// Write a final Zarr v3 hierarchy with zarrita whose nodes sit at deep paths below parents that
// have no zarr.json of their own ("implicit groups"), as zarrita writes them: `zarr.create` at
// "/groups/implicit/deeper/arr" stores groups/implicit/deeper/arr/zarr.json and its chunks, and
// nothing for groups/implicit or groups/implicit/deeper.
//
//   node zarrita_implicit.mjs SPEC.json STORE
//
// SPEC.json is {"nodes": [...]} (test_implicit_groups.py builds it and computes the expected
// arrays with numpy from the same description):
//   {"kind": "group", "path": "groups", "attributes": {...}}
//   {"kind": "array", "path": "groups/implicit/deeper/arr", "data_type": "int32",
//    "shape": [5, 7], "chunk_shape": [2, 3], "fill_value": 0, "seed": 3,
//    "written": [[0, 4], [0, 7]]}             (the region set; null = the whole array)
// The value of the element with flat C-order index k is (k * 3 + seed) in the data type
// (wrapping for the integer types), the numpy twin being values() in test_implicit_groups.py.
//
// Afterwards every array is opened again by its path alone (zarr.open(root.resolve(path),
// {kind: "array"}): zarrita finds it without any parent metadata) and every parent without
// zarr.json is opened as a node (zarrita: NotFoundError, since final v3 nodes need a document).
// One JSON line goes to stdout: {"ok": true, "arrays": [...paths opened by path...],
// "implicit": {path: "NotFoundError: ..."}}.

import * as fs from "node:fs";
import * as path from "node:path";
import * as zarr from "zarrita";
import { DirStore } from "./zarrfs_store.mjs";

const CTR = {
	int8: Int8Array,
	uint8: Uint8Array,
	int16: Int16Array,
	uint16: Uint16Array,
	int32: Int32Array,
	uint32: Uint32Array,
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

// A zarrita chunk {data, shape, stride} holding the generated values over region `sel`.
function regionChunk(node, sel) {
	const gstride = cStrides(node.shape);
	const rshape = sel.map(([a, b]) => b - a);
	const n = rshape.reduce((a, b) => a * b, 1);
	const data = new CTR[node.data_type](n);
	const idx = rshape.map(() => 0);
	for (let i = 0; i < n; i++) {
		let k = 0;
		for (let d = 0; d < rshape.length; d++) k += (sel[d][0] + idx[d]) * gstride[d];
		data[i] = k * 3 + (node.seed ?? 0); // typed arrays wrap integers as numpy's astype does
		for (let d = rshape.length - 1; d >= 0; d--) {
			if (++idx[d] < rshape[d]) break;
			idx[d] = 0;
		}
	}
	return { data, shape: rshape, stride: cStrides(rshape) };
}

function parents(p) {
	const parts = p.split("/");
	const out = [];
	for (let i = 1; i < parts.length; i++) out.push(parts.slice(0, i).join("/"));
	return out;
}

async function main() {
	const [specFile, storeDir] = process.argv.slice(2);
	if (!specFile || !storeDir) {
		console.error("usage: zarrita_implicit.mjs SPEC.json STORE");
		process.exit(2);
	}
	const spec = JSON.parse(fs.readFileSync(specFile, "utf8"));
	fs.mkdirSync(storeDir, { recursive: true });
	const store = new DirStore(storeDir);
	const root = zarr.root(store);
	const arrays = [];
	for (const node of spec.nodes) {
		const loc = root.resolve(`/${node.path}`);
		if (node.kind === "group") {
			await zarr.create(loc, { attributes: node.attributes ?? {} });
			continue;
		}
		const arr = await zarr.create(loc, {
			shape: node.shape,
			chunkShape: node.chunk_shape,
			dtype: node.data_type,
			fillValue: node.fill_value ?? 0,
			attributes: node.attributes ?? {},
		});
		const sel = node.written ?? node.shape.map((s) => [0, s]);
		await zarr.set(arr, sel.map(([a, b]) => zarr.slice(a, b)), regionChunk(node, sel));
		arrays.push(node.path);
	}
	// zarrita opens each array by its path, with no metadata for its parents
	const opened = [];
	for (const p of arrays) {
		const arr = await zarr.open(root.resolve(`/${p}`), { kind: "array" });
		if (!arr.shape) throw new Error(`${p}: opened without a shape`);
		opened.push(p);
	}
	// and finds no node at a parent without zarr.json
	const implicit = {};
	for (const node of spec.nodes) {
		for (const p of parents(node.path)) {
			if (p in implicit || fs.existsSync(path.join(storeDir, p, "zarr.json"))) continue;
			try {
				await zarr.open(root.resolve(`/${p}`));
				implicit[p] = "opened";
			} catch (err) {
				implicit[p] = `${err?.name}: ${err?.message}`;
			}
		}
	}
	console.log(JSON.stringify({ ok: true, arrays: opened, implicit }));
}

await main();
