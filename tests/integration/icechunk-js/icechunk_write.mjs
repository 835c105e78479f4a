#!/usr/bin/env node
// Icechunk repositories written by Icechunk itself (@earthmover/icechunk 2.2.2, its WebAssembly
// build), with Zarr arrays written through zarrita, into a plain directory laid out as
// Icechunk's local file-system storage lays it out (fs_storage.mjs). For the zarrfs integration
// tests and benchmarks; tests/integration/icechunk_fixtures.py calls it.
//
//   node icechunk_write.mjs history DIR --spec 1|2 [--facts FILE]
//   node icechunk_write.mjs commit DIR --branch NAME [--array PATH] [--grow N] [--seed S]
//   node icechunk_write.mjs facts DIR [--facts FILE] [--no-values] [--virtual URL_PREFIX=DIR]
//   node icechunk_write.mjs big DIR [--spec 1|2] --nodes N
//   node icechunk_write.mjs big DIR [--spec 1|2] --chunks N [--split N] [--inline-threshold B]
//   node icechunk_write.mjs load DIR --from PLAIN_DIR [--spec 1|2] [--inline-threshold B]
//
// history: a repository with several commits on main, a branch from an older commit with a
// commit of its own, a branch reset to an older commit, a deleted branch, tags and a deleted
// tag (the steps are listed in HISTORY below). Then, as `facts`, writes DIR.facts.json (or
// FILE): what Icechunk itself reports of the repository (see facts() below).
//
// commit: one more commit on an existing repository's branch: the array (default: the first
// array of the branch head, in path order) grows by N (default 1) along its first dimension and
// every element gets a new value. Prints one JSON line: {"snapshot", "parent", "branch",
// "array", "shape", "values"}.
//
// big --nodes N: 1 root group, ceil(N/100) groups, and arrays (4 int32 elements, one inline
// chunk) to make N nodes in all, in one commit. big --chunks N: one int32 array of N chunks of
// 4 elements (inline below the threshold, default 512 bytes; `--inline-threshold 0` makes each
// chunk a native chunk file), whose references Icechunk splits into manifests of --split
// (default N/8) chunks each. Both print one JSON line of facts (snapshot, nodes, chunks,
// manifest files, seconds taken).
//
// load --from PLAIN_DIR: every file of a plain Zarr v3 directory store set as the key of its
// relative path (`zarr.json` documents first, shallowest first; then the chunks, encoded as they
// are in the files), in one commit — what a Zarr library writing through Icechunk's store does.
// Chunks of fewer bytes than --inline-threshold (default Icechunk's) are inline, the others
// chunk files. Prints one JSON line of facts (snapshot, keys, bytes, manifest files, seconds).

import * as fs from "node:fs";
import * as zarr from "zarrita";
import { fsStorage } from "./fs_storage.mjs";

const { Repository } = await import("@earthmover/icechunk");

// ---------------------------------------------------------------------------------------------
// arguments

function parseArgs(argv) {
	const pos = [], opt = {};
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		if (a.startsWith("--")) {
			const k = a.slice(2);
			if (k.startsWith("no-")) opt[k.slice(3)] = false;
			else if (i + 1 < argv.length && !argv[i + 1].startsWith("--")) opt[k] = argv[++i];
			else opt[k] = true;
		} else pos.push(a);
	}
	return { pos, opt };
}

function die(msg) {
	console.error(`icechunk_write.mjs: ${msg}`);
	process.exit(2);
}

function specOf(opt) {
	const s = Number(opt.spec ?? 2);
	if (s !== 1 && s !== 2) die(`--spec must be 1 or 2, not ${opt.spec}`);
	return s;
}

function mustBeEmpty(dir) {
	if (fs.existsSync(dir) && fs.readdirSync(dir).length > 0) die(`${dir} is not empty`);
	fs.mkdirSync(dir, { recursive: true });
}

// ---------------------------------------------------------------------------------------------
// zarrita helpers over an Icechunk session's store

const BYTES = { name: "bytes", configuration: { endian: "little" } };
const ZSTD = { name: "zstd", configuration: { level: 1, checksum: false } };

const CTORS = {
	int8: Int8Array, int16: Int16Array, int32: Int32Array, int64: BigInt64Array,
	uint8: Uint8Array, uint16: Uint16Array, uint32: Uint32Array, uint64: BigUint64Array,
	float32: Float32Array, float64: Float64Array,
};

const prod = (shape) => shape.reduce((a, b) => a * b, 1);
const cStrides = (shape) => {
	const s = new Array(shape.length);
	let n = 1;
	for (let i = shape.length - 1; i >= 0; i--) {
		s[i] = n;
		n *= shape[i];
	}
	return s;
};

// value(k) of the element of flat C-order index k, for a seed: small integers, exact in every
// data type used here (floats get a fraction that float32 holds exactly).
function valueAt(dtype, k, seed) {
	const v = ((k * 7 + seed * 13) % 101) - (dtype.startsWith("uint") ? 0 : 50);
	if (dtype.startsWith("float")) return v + 0.25 * (k % 4);
	if (dtype.endsWith("64")) return BigInt(v);
	return v;
}

function chunkOf(dtype, shape, seed) {
	const Ctor = CTORS[dtype];
	const data = new Ctor(prod(shape));
	for (let k = 0; k < data.length; k++) data[k] = valueAt(dtype, k, seed);
	return { data, shape, stride: cStrides(shape) };
}

async function createGroup(store, path, attributes) {
	await zarr.create(zarr.root(store).resolve(path), { attributes });
}

async function createArray(store, path, { shape, chunks, dtype, fill, codecs, dims, attributes }) {
	return zarr.create(zarr.root(store).resolve(path), {
		shape, chunkShape: chunks, dtype, fillValue: fill, codecs: codecs ?? [BYTES],
		dimensionNames: dims, attributes: attributes ?? {},
	});
}

async function openArray(store, path) {
	return zarr.open(zarr.root(store).resolve(path), { kind: "array" });
}

async function writeWhole(store, path, seed) {
	const arr = await openArray(store, path);
	if (arr.shape.length === 0) await zarr.set(arr, null, valueAt(arr.dtype, 0, seed));
	else await zarr.set(arr, null, chunkOf(arr.dtype, arr.shape, seed));
}

const enc = new TextEncoder(), dec = new TextDecoder();
const keyOf = (path, name) => (path === "/" ? name : `${path.slice(1)}/${name}`);

async function readDoc(store, path) {
	const b = await store.get(keyOf(path, "zarr.json"));
	if (b === null || b === undefined) throw new Error(`no node ${path}`);
	return JSON.parse(dec.decode(b));
}

async function writeDoc(store, path, doc) {
	await store.set(keyOf(path, "zarr.json"), Buffer.from(enc.encode(JSON.stringify(doc))));
}

// Change an array's shape in its zarr.json (what zarr-python's resize does to the metadata).
async function resize(store, path, shape) {
	const doc = await readDoc(store, path);
	doc.shape = shape;
	await writeDoc(store, path, doc);
}

// ---------------------------------------------------------------------------------------------
// the history repository

// Inline chunks are those of fewer bytes than this (Icechunk's inline_chunk_threshold_bytes):
// the 8-byte int16 chunks, the 2-byte uint16 scalar and small zstd frames are inline; the
// 48-byte float32 and 96-byte int64 chunks are chunk files.
const INLINE_THRESHOLD = 40;

// /grid/temperature's references are split one manifest per row of chunks (Axis 0, 1 chunk),
// so that array has several ManifestRefs; every other array has one manifest.
const SPLITTING = {
	split_sizes: [
		[{ name_matches: { regex: "^temperature$" } }, [{ condition: { Axis: 0 }, num_chunks: 1 }]],
	],
};

async function history(dir, spec) {
	mustBeEmpty(dir);
	const repo = await Repository.create(fsStorage(dir), {
		inlineChunkThresholdBytes: INLINE_THRESHOLD,
		manifest: { splitting: SPLITTING },
	}, spec);
	const labels = {};
	labels.init = (await repo.ancestry({ branch: "main" }))[0].id;
	const commit = async (branch, label, message, fn) => {
		const s = await repo.writableSession(branch);
		await fn(s.store);
		labels[label] = await s.commit(message);
		return labels[label];
	};

	// main 1: the structure, every array all fill value (no chunk written)
	await commit("main", "structure", "structure", async (st) => {
		await createGroup(st, "/", { title: "zarrfs Icechunk history", version: 1 });
		await createGroup(st, "/grid", { units: "K", nested: { a: [1, 2, 3] } });
		await createGroup(st, "/meta", { about: "deleted in a later commit" });
		await createGroup(st, "/données", { "clé": "valeur ✓" });
		await createArray(st, "/grid/temperature", {
			shape: [6, 8], chunks: [3, 4], dtype: "float32", fill: "NaN", dims: ["y", "x"],
			attributes: { long_name: "temperature" },
		});
		await createArray(st, "/grid/counts", { shape: [10], chunks: [4], dtype: "int16", fill: -1 });
		await createArray(st, "/grid/flags", { shape: [5, 5], chunks: [5, 5], dtype: "uint8", fill: 0 });
		await createArray(st, "/pressure", {
			shape: [20], chunks: [8], dtype: "float64", fill: 0, codecs: [BYTES, ZSTD],
		});
		await createArray(st, "/ids", { shape: [12], chunks: [12], dtype: "int64", fill: 0 });
		await createArray(st, "/scalar", { shape: [], chunks: [], dtype: "uint16", fill: 7 });
		await createArray(st, "/données/série", { shape: [3], chunks: [2], dtype: "int32", fill: 0 });
		// "/grid-x" sorts between "/grid" and "/grid/…" ('-' is 0x2D, '/' 0x2F): nodes are
		// sorted by the bytes of their whole path
		await createArray(st, "/grid-x", { shape: [2], chunks: [2], dtype: "uint32", fill: 0 });
	});
	// main 2: every array written
	await commit("main", "fill", "fill every array", async (st) => {
		let seed = 1;
		for (const p of ["/grid/temperature", "/grid/counts", "/grid/flags", "/pressure", "/ids",
			"/scalar", "/données/série", "/grid-x"]) await writeWhole(st, p, seed++);
	});
	// main 3: one chunk deleted (it reads as the fill value again)
	await commit("main", "delete_chunk", "delete a chunk", async (st) => {
		await st.delete("grid/counts/c/1");
	});
	// main 4: one array grows (new rows written), one shrinks
	await commit("main", "resize", "resize arrays", async (st) => {
		await resize(st, "/grid/temperature", [9, 8]);
		const t = await openArray(st, "/grid/temperature");
		await zarr.set(t, [zarr.slice(6, 9), null], chunkOf("float32", [3, 8], 9));
		await resize(st, "/grid/counts", [7]);
	});
	// main 5: attributes changed, a deep array added, a group deleted
	await commit("main", "nodes", "attributes and nodes", async (st) => {
		const root = await readDoc(st, "/");
		root.attributes.version = 2;
		await writeDoc(st, "/", root);
		await createGroup(st, "/grid/deep", {});
		await createGroup(st, "/grid/deep/er", { depth: 2 });
		await createArray(st, "/grid/deep/er/nested", { shape: [3], chunks: [3], dtype: "int8", fill: 0 });
		await writeWhole(st, "/grid/deep/er/nested", 11);
		await st.deleteDir("meta");
	});

	// a branch from an older commit, with a commit of its own
	await repo.createBranch("dev", labels.fill);
	await commit("dev", "dev", "dev: new temperature values and a group", async (st) => {
		await writeWhole(st, "/grid/temperature", 21);
		await createGroup(st, "/dev_only", { branch: "dev" });
	});
	// a branch reset to an older commit
	await repo.createBranch("rewound", labels.nodes);
	await repo.resetBranch("rewound", labels.structure);
	// a deleted branch
	await repo.createBranch("gone", labels.delete_chunk);
	await repo.deleteBranch("gone");
	// tags, one deleted
	await repo.createTag("v1", labels.fill);
	await repo.createTag("v2", labels.nodes);
	await repo.createTag("it works!", labels.resize);
	await repo.createTag("dev-tag", labels.dev);
	await repo.createTag("deleted", labels.delete_chunk);
	await repo.deleteTag("deleted");

	const f = await facts(repo, { values: true });
	f.inline_chunk_threshold_bytes = INLINE_THRESHOLD;
	f.labels = labels;
	f.deleted_branches = ["gone"];
	f.deleted_tags = ["deleted"];
	return f;
}

// ---------------------------------------------------------------------------------------------
// facts: the repository as Icechunk reports it

// JSON for one element: integers (BigInt as a number when exact, else a string), floats with
// NaN/Infinity as the strings "NaN", "Infinity", "-Infinity".
function jsonValue(v) {
	if (typeof v === "bigint") return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
	if (typeof v === "number" && !Number.isFinite(v))
		return Number.isNaN(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity";
	if (typeof v === "boolean") return v;
	return v;
}

function nested(data, shape) {
	if (shape.length === 0) return jsonValue(data[0]);
	const strides = cStrides(shape);
	const rec = (d, off) =>
		d === shape.length - 1
			? Array.from({ length: shape[d] }, (_, i) => jsonValue(data[off + i]))
			: Array.from({ length: shape[d] }, (_, i) => rec(d + 1, off + i * strides[d]));
	return rec(0, 0);
}

// Microseconds since 1970 from Icechunk's RFC 3339 text ("2026-11-28T10:45:17.419690+00:00").
function micros(text) {
	const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/.exec(text);
	if (!m) return null;
	const sec = Date.parse(m[1] + m[3]) / 1000;
	const frac = (m[2] ?? "").padEnd(6, "0").slice(0, 6);
	return sec * 1e6 + Number(frac);
}

function info(s) {
	return {
		id: s.id, parent_id: s.parentId ?? null, message: s.message,
		written_at: s.writtenAt, written_at_us: micros(s.writtenAt), metadata: s.metadata ?? {},
	};
}

async function snapshotFacts(repo, id, { values }) {
	const session = await repo.readonlySession({ snapshotId: id });
	const st = session.store;
	const keys = (await st.list()).sort();
	const nodes = {};
	for (const k of keys) {
		if (k !== "zarr.json" && !k.endsWith("/zarr.json")) continue;
		const path = k === "zarr.json" ? "/" : "/" + k.slice(0, -"/zarr.json".length);
		const text = dec.decode(await st.get(k));
		const doc = JSON.parse(text);
		const n = { node_type: doc.node_type, zarr_json: doc };
		if (doc.node_type === "array") {
			n.chunks = {};
			const prefix = path === "/" ? "c" : `${path.slice(1)}/c`;
			for (const ck of keys) {
				if (ck === prefix || ck.startsWith(prefix + "/")) {
					const b = await st.get(ck);
					n.chunks[ck.slice(prefix.length - 1)] = b ? b.length : null;
				}
			}
			if (values) {
				const arr = await openArray(st, path);
				const got = await zarr.get(arr);
				n.values = arr.shape.length === 0 ? jsonValue(got) : nested(got.data, got.shape);
			}
		}
		nodes[path] = n;
	}
	const manifests = (await repo.lookupManifestFiles(id)).map((m) => ({
		id: m.id, size_bytes: m.sizeBytes, num_chunk_refs: m.numChunkRefs,
	}));
	return { nodes, manifest_files: manifests };
}

// {spec_version, writer, branches: {NAME: {head, ancestry: [info...]}}, tags: {NAME: id},
//  snapshots: {ID: {info..., nodes: {PATH: {node_type, zarr_json, chunks: {"c/0/1": bytes},
//  values}}, manifest_files: [{id, size_bytes, num_chunk_refs}]}}}
async function facts(repo, { values }) {
	const out = {
		writer: "@earthmover/icechunk 2.2.2 (wasm32-wasi), zarrita 0.7.5",
		spec_version: repo.specVersion,
		branches: {}, tags: {}, snapshots: {},
	};
	const seen = new Map();
	for (const b of (await repo.listBranches()).sort()) {
		const anc = (await repo.ancestry({ branch: b })).map(info);
		out.branches[b] = { head: await repo.lookupBranch(b), ancestry: anc };
		for (const s of anc) seen.set(s.id, s);
	}
	for (const t of (await repo.listTags()).sort()) {
		out.tags[t] = await repo.lookupTag(t);
		for (const s of (await repo.ancestry({ tag: t })).map(info)) seen.set(s.id, s);
	}
	for (const [id, s] of seen) out.snapshots[id] = { ...s, ...(await snapshotFacts(repo, id, { values })) };
	return out;
}

function writeFacts(f, file) {
	fs.writeFileSync(file, JSON.stringify(f, null, 1) + "\n");
}

// Open a repository; with `virtual` ("URL_PREFIX=DIR"), HTTP virtual chunks under URL_PREFIX
// are read from the files under DIR (no server), answered with the checksums nginx would send:
// ETag "MTIME-SIZE" (both in lowercase hex, MTIME in seconds) and Last-Modified = MTIME.
// Icechunk checks them against the references' own.
async function openWithVirtual(dir, virtual) {
	if (!virtual) return Repository.open(fsStorage(dir));
	const eq = virtual.indexOf("=");
	if (eq < 0) die("--virtual URL_PREFIX=DIR");
	const prefix = virtual.slice(0, eq), root = virtual.slice(eq + 1);
	const repo = await Repository.open(fsStorage(dir), undefined, { [prefix]: { type: "HttpAccess" } });
	await repo.setHttpVirtualChunkFetcher(async (_err, req) => {
		if (!req.url.startsWith(prefix)) throw new Error(`not under ${prefix}: ${req.url}`);
		const file = `${root}/${decodeURIComponent(req.url.slice(prefix.length))}`;
		const st = fs.statSync(file);
		const mtime = Math.floor(st.mtimeMs / 1000);
		const fd = fs.openSync(file, "r");
		try {
			const data = Buffer.alloc(req.rangeEnd - req.rangeStart);
			const n = fs.readSync(fd, data, 0, data.length, req.rangeStart);
			return { data: data.subarray(0, n), etag: `"${mtime.toString(16)}-${st.size.toString(16)}"`, lastModified: mtime };
		} finally {
			fs.closeSync(fd);
		}
	});
	return repo;
}

// ---------------------------------------------------------------------------------------------
// one more commit

async function oneCommit(dir, { branch, array, grow, seed }) {
	const repo = await Repository.open(fsStorage(dir));
	const parent = await repo.lookupBranch(branch);
	const s = await repo.writableSession(branch);
	const st = s.store;
	let path = array;
	if (!path) {
		const keys = (await st.list()).filter((k) => k.endsWith("zarr.json")).sort();
		for (const k of keys) {
			const p = k === "zarr.json" ? "/" : "/" + k.slice(0, -"/zarr.json".length);
			const d = await readDoc(st, p);
			if (d.node_type === "array" && d.shape.length > 0) {
				path = p;
				break;
			}
		}
		if (!path) die("no array of one dimension or more on that branch");
	}
	const doc = await readDoc(st, path);
	const shape = doc.shape.slice();
	if (shape.length === 0) die(`${path} is a scalar: it cannot grow`);
	shape[0] += grow;
	await resize(st, path, shape);
	await writeWhole(st, path, seed);
	const id = await s.commit(`grow ${path} to [${shape}] (seed ${seed})`);
	const ro = await repo.readonlySession({ snapshotId: id });
	const got = await zarr.get(await openArray(ro.store, path));
	return { snapshot: id, parent, branch, array: path, shape, values: nested(got.data, got.shape) };
}

// ---------------------------------------------------------------------------------------------
// big repositories (benchmarks, bounds)

function manifestSummary(ms) {
	return {
		manifest_files: ms.length,
		manifest_refs: ms.reduce((a, m) => a + m.numChunkRefs, 0),
		manifest_bytes: ms.reduce((a, m) => a + m.sizeBytes, 0),
		manifest_refs_max: ms.reduce((a, m) => Math.max(a, m.numChunkRefs), 0),
	};
}

async function bigNodes(dir, spec, n) {
	mustBeEmpty(dir);
	const t0 = performance.now();
	const repo = await Repository.create(fsStorage(dir), {}, spec);
	const s = await repo.writableSession("main");
	const st = s.store;
	await createGroup(st, "/", { nodes: n });
	let made = 1, g = 0;
	const groups = Math.max(1, Math.ceil(n / 100));
	for (; g < groups && made < n; g++, made++)
		await createGroup(st, `/g${String(g).padStart(4, "0")}`, { index: g });
	// arrays in batches of concurrent sets: zarr.json through zarrita, the one chunk (4
	// little-endian int32, the bytes codec's encoding) set directly
	const batch = [];
	for (let a = 0; made < n; a++, made++) {
		const p = `g${String(a % g).padStart(4, "0")}/a${String(a).padStart(5, "0")}`;
		const b = Buffer.alloc(16);
		for (let i = 0; i < 4; i++) b.writeInt32LE(a, 4 * i);
		batch.push(createArray(st, `/${p}`, { shape: [4], chunks: [4], dtype: "int32", fill: 0 })
			.then(() => st.set(`${p}/c/0`, b)));
		if (batch.length >= 500) await Promise.all(batch.splice(0));
	}
	await Promise.all(batch);
	const id = await s.commit(`${n} nodes`);
	return { snapshot: id, spec_version: spec, nodes: made, groups: g + 1, arrays: made - g - 1,
		array_shape: [4], array_value: "each element is the array's number aNNNNN",
		...manifestSummary(await repo.lookupManifestFiles(id)), seconds: (performance.now() - t0) / 1000 };
}

async function bigChunks(dir, spec, n, split, threshold) {
	mustBeEmpty(dir);
	const t0 = performance.now();
	const repo = await Repository.create(fsStorage(dir), {
		inlineChunkThresholdBytes: threshold,
		manifest: { splitting: { split_sizes: [[{ path_matches: { regex: ".*" } }, [{ condition: "Any", num_chunks: split }]]] } },
	}, spec);
	const s = await repo.writableSession("main");
	const st = s.store;
	await createGroup(st, "/", {});
	const arr = await createArray(st, "/big", { shape: [n * 4], chunks: [4], dtype: "int32", fill: -1 });
	// chunk c holds elements 4c..4c+3 of value k = their index, encoded by the bytes codec
	// (little-endian int32) and set directly, in batches of concurrent sets
	const t1 = performance.now();
	const batch = 1000;
	for (let c0 = 0; c0 < n; c0 += batch) {
		const sets = [];
		for (let c = c0; c < Math.min(n, c0 + batch); c++) {
			const b = Buffer.alloc(16);
			for (let i = 0; i < 4; i++) b.writeInt32LE(4 * c + i, 4 * i);
			sets.push(st.set(`big/c/${c}`, b));
		}
		await Promise.all(sets);
	}
	const t2 = performance.now();
	const id = await s.commit(`one array of ${n} chunks`);
	if (process.env.ICECHUNK_WRITE_TIMES) console.error(`sets ${(t2 - t1) / 1000} s, commit ${(performance.now() - t2) / 1000} s`);
	const manifests = await repo.lookupManifestFiles(id);
	return { snapshot: id, spec_version: spec, array: "/big", shape: [n * 4], chunk_shape: [4],
		dtype: "int32", value: "element k holds k", chunks: n, split, inline_threshold: threshold,
		...manifestSummary(manifests), seconds: (performance.now() - t0) / 1000 };
}

function plainFiles(dir, rel, out) {
	for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
		if (e.name.startsWith(".")) continue; // stamps and the like: not keys of the store
		const r = rel ? `${rel}/${e.name}` : e.name;
		if (e.isDirectory()) plainFiles(`${dir}/${e.name}`, r, out);
		else if (e.isFile()) out.push(r);
	}
	return out;
}

async function loadPlain(dir, spec, from, threshold) {
	mustBeEmpty(dir);
	const t0 = performance.now();
	const config = threshold === undefined ? {} : { inlineChunkThresholdBytes: threshold };
	const repo = await Repository.create(fsStorage(dir), config, spec);
	const s = await repo.writableSession("main");
	const st = s.store;
	const keys = plainFiles(from, "", []);
	const isDoc = (k) => k === "zarr.json" || k.endsWith("/zarr.json");
	const docs = keys.filter(isDoc).sort((a, b) => a.split("/").length - b.split("/").length || (a < b ? -1 : 1));
	for (const k of docs) await st.set(k, fs.readFileSync(`${from}/${k}`));
	let bytes = 0;
	const chunks = keys.filter((k) => !isDoc(k)).sort();
	for (let i = 0; i < chunks.length; i += 16) {
		await Promise.all(chunks.slice(i, i + 16).map((k) => {
			const b = fs.readFileSync(`${from}/${k}`);
			bytes += b.length;
			return st.set(k, b);
		}));
	}
	const id = await s.commit(`${chunks.length} chunks of ${from}`);
	return { snapshot: id, spec_version: spec, nodes: docs.length, chunks: chunks.length,
		chunk_bytes: bytes, inline_threshold: threshold ?? null,
		...manifestSummary(await repo.lookupManifestFiles(id)), seconds: (performance.now() - t0) / 1000 };
}

// ---------------------------------------------------------------------------------------------

async function main() {
	const [cmd, ...rest] = process.argv.slice(2);
	const { pos, opt } = parseArgs(rest);
	const dir = pos[0];
	if (!cmd || !dir) die("usage: icechunk_write.mjs history|commit|facts|big|load DIR [options] (see the header)");
	if (cmd === "history") {
		const f = await history(dir, specOf(opt));
		writeFacts(f, opt.facts ?? `${dir.replace(/\/+$/, "")}.facts.json`);
		console.log(JSON.stringify({ labels: f.labels, branches: Object.keys(f.branches), tags: f.tags }));
	} else if (cmd === "facts") {
		const repo = await openWithVirtual(dir, opt.virtual);
		writeFacts(await facts(repo, { values: opt.values !== false }), opt.facts ?? `${dir.replace(/\/+$/, "")}.facts.json`);
	} else if (cmd === "commit") {
		if (!opt.branch) die("commit needs --branch NAME");
		console.log(JSON.stringify(await oneCommit(dir, {
			branch: opt.branch, array: opt.array, grow: Number(opt.grow ?? 1), seed: Number(opt.seed ?? 31),
		})));
	} else if (cmd === "big") {
		if (opt.nodes) console.log(JSON.stringify(await bigNodes(dir, specOf(opt), Number(opt.nodes))));
		else if (opt.chunks) {
			const n = Number(opt.chunks);
			console.log(JSON.stringify(await bigChunks(dir, specOf(opt), n,
				Number(opt.split ?? Math.ceil(n / 8)), Number(opt["inline-threshold"] ?? 512))));
		} else die("big needs --nodes N or --chunks N");
	} else if (cmd === "load") {
		if (!opt.from) die("load needs --from PLAIN_DIR");
		const t = opt["inline-threshold"];
		console.log(JSON.stringify(await loadPlain(dir, specOf(opt), opt.from, t === undefined ? undefined : Number(t))));
	} else die(`unknown command ${cmd}`);
}

try {
	await main();
	process.exit(0); // the WebAssembly runtime's worker threads would keep node alive
} catch (e) {
	console.error(`icechunk_write.mjs: ${e?.stack ?? e}`);
	process.exit(1);
}
