#!/usr/bin/env node
// zarrita.js side of the Zarr v3 benchmark (bench/bench_v3.py runs it; not part of the tests).
//
//   node v3_read.mjs whole  STORE OUT
//   node v3_read.mjs random STORE OFFSETS OUT BUDGET_S
//
// STORE is a directory holding a root Zarr v3 array (STORE/zarr.json), read through the local
// DirStore of the integration tests (node:fs; getRange for the sharded layouts).
//
// whole:  zarr.open, then time `zarr.get(arr, null)` only (Node startup, module loading and
//         zarr.open are outside the timing, as bench.py times `z[:]` after `zarr.open`); then
//         write the result, every element in C order, little-endian, to OUT for the byte-exact
//         check of zarrfs's reads.
// random: OFFSETS holds little-endian int64 byte offsets into the flat C-order array, each a
//         multiple of 4096 in a 2-D float32 array whose rows are a multiple of 1024 elements.
//         Read each as `zarr.get(arr, [i, zarr.slice(j, j + 1024)])` (the same 4096 bytes), in
//         order, until all are read or BUDGET_S seconds have passed; write the n results
//         back to back to OUT.
//
// One JSON line on stdout: {"mode", "seconds", "cpu_s", "nbytes" | "n", "max_rss_kib", ...}.
// cpu_s is the process's user + system time over the timed part (all threads: Node's
// DecompressionStream inflates on the libuv thread pool).
//
// zarrita is imported from tests/integration/js/node_modules (npm ci --prefix tests/integration/js),
// or from ZF_BENCH_JS_DIR/node_modules.

import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const jsDir = process.env.ZF_BENCH_JS_DIR || path.join(here, "..", "tests", "integration", "js");
const zarr = await import(
	pathToFileURL(path.join(jsDir, "node_modules", "zarrita", "dist", "src", "index.js")).href
);
const { DirStore } = await import(pathToFileURL(path.join(jsDir, "zarrfs_store.mjs")).href);

function cpuSeconds(start) {
	const u = process.cpuUsage(start);
	return (u.user + u.system) / 1e6;
}

function isCOrder(shape, stride) {
	let step = 1;
	for (let d = shape.length - 1; d >= 0; d--) {
		if (shape[d] > 1 && stride[d] !== step) return false;
		step *= shape[d];
	}
	return true;
}

function bytesOf(chunk) {
	if (!isCOrder(chunk.shape, chunk.stride)) {
		throw new Error(`zarrita returned strides ${chunk.stride} for shape ${chunk.shape}`);
	}
	const d = chunk.data;
	return new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
}

function writeAll(file, bytes) {
	const fd = fs.openSync(file, "w");
	try {
		let off = 0;
		while (off < bytes.length) {
			off += fs.writeSync(fd, bytes, off, Math.min(bytes.length - off, 1 << 26));
		}
	} finally {
		fs.closeSync(fd);
	}
}

async function openArray(storeDir) {
	const store = new DirStore(storeDir);
	const arr = await zarr.open(zarr.root(store), { kind: "array" });
	if (arr.dtype !== "float32" || arr.shape.length !== 2) {
		throw new Error(`expected a 2-D float32 array, got ${arr.dtype} ${arr.shape}`);
	}
	return arr;
}

async function whole(storeDir, out) {
	const arr = await openArray(storeDir);
	const c0 = process.cpuUsage();
	const t0 = performance.now();
	const got = await zarr.get(arr, null);
	const seconds = (performance.now() - t0) / 1e3;
	const cpu_s = cpuSeconds(c0);
	const bytes = bytesOf(got);
	writeAll(out, bytes);
	return { mode: "whole", seconds, cpu_s, nbytes: bytes.length, shape: arr.shape };
}

async function random(storeDir, offsetsFile, out, budgetS) {
	const arr = await openArray(storeDir);
	const cols = arr.shape[1];
	if (cols % 1024 !== 0) throw new Error(`${cols} columns: not a multiple of 1024`);
	const raw = fs.readFileSync(offsetsFile);
	const offsets = new BigInt64Array(raw.buffer, raw.byteOffset, raw.byteLength / 8);
	const result = new Uint8Array(offsets.length * 4096);
	let n = 0;
	const c0 = process.cpuUsage();
	const t0 = performance.now();
	let seconds = 0;
	for (const off of offsets) {
		const e = Number(off) / 4;
		const i = Math.floor(e / cols);
		const j = e % cols;
		const got = await zarr.get(arr, [i, zarr.slice(j, j + 1024)]);
		result.set(bytesOf(got), n * 4096);
		n += 1;
		seconds = (performance.now() - t0) / 1e3;
		if (seconds >= budgetS) break;
	}
	const cpu_s = cpuSeconds(c0);
	writeAll(out, result.subarray(0, n * 4096));
	return { mode: "random", seconds, cpu_s, n };
}

const [mode, ...args] = process.argv.slice(2);
let res;
if (mode === "whole" && args.length === 2) {
	res = await whole(args[0], args[1]);
} else if (mode === "random" && args.length === 4) {
	res = await random(args[0], args[1], args[2], Number(args[3]));
} else {
	console.error("usage: v3_read.mjs whole STORE OUT | random STORE OFFSETS OUT BUDGET_S");
	process.exit(2);
}
res.max_rss_kib = process.resourceUsage().maxRSS;
process.stdout.write(`${JSON.stringify(res)}\n`);
