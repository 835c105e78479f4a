#!/usr/bin/env node
// Write v3 bool arrays with zarrita's own metadata, unpatched (zarrita 0.7 writes a bool
// array's "fill_value" as the number it was given, e.g. 0, where the spec says false).
//
//   node zarrita_bool_fill.mjs STORE
//
// STORE/zero and STORE/one: fillValue 0 and 1. Each is 10 x 7 in 4 x 3 chunks; rows 0-3 and columns 0-2 (the first
// chunk) are written with element (i, j) = (i + 2j) % 3 == 0, so every other chunk is absent
// and reads as the fill value.
import * as zarr from "zarrita";
import { DirStore } from "./zarrfs_store.mjs";

const [storeDir] = process.argv.slice(2);
if (!storeDir) {
	console.error("usage: zarrita_bool_fill.mjs STORE");
	process.exit(2);
}
const store = new DirStore(storeDir);
await zarr.create(zarr.root(store), { attributes: {} });
for (const [name, fill] of [["zero", 0], ["one", 1]]) {
	const opts = { shape: [10, 7], chunkShape: [4, 3], dtype: "bool", fillValue: fill };
	const arr = await zarr.create(zarr.root(store).resolve(`/${name}`), opts);
	const data = new zarr.BoolArray(12);
	for (let i = 0; i < 4; i++) for (let j = 0; j < 3; j++) data.set(i * 3 + j, (i + 2 * j) % 3 === 0);
	await zarr.set(arr, [zarr.slice(0, 4), zarr.slice(0, 3)], { data, shape: [4, 3], stride: [3, 1] });
}
