// An Icechunk Storage over a local directory, for the WebAssembly build of
// @earthmover/icechunk, which has no local file-system storage of its own.
//
// Keys map to files exactly as Icechunk's own local file-system storage (object_store's
// LocalFileSystem under the repository directory) lays them out: `repo`, `config.yaml`,
// `snapshots/ID`, `manifests/ID`, `chunks/ID`, `transactions/ID`, `overwritten/repo.N.ID`,
// `refs/branch.NAME/ref.json` (spec 1). A missing object is an Error whose message starts with
// `ObjectNotFound` (what the binding maps to Icechunk's "object not found"). Conditional writes
// are honoured as Icechunk asks for them: a previous version with neither etag nor generation
// means "create, only if absent"; with an etag, "replace, only if the object still has it". The
// etag is the SHA-256 of the object's bytes.

import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";

process.env.NAPI_RS_FORCE_WASI ??= "error"; // the native build needs a newer glibc than Debian 12's
const { Storage } = await import("@earthmover/icechunk");

function etagOf(bytes) {
	return '"' + crypto.createHash("sha256").update(bytes).digest("hex") + '"';
}

function notFound(p) {
	return new Error(`ObjectNotFound: ${p}`);
}

function readOrNull(file) {
	try {
		return fs.readFileSync(file);
	} catch (e) {
		if (e.code === "ENOENT" || e.code === "ENOTDIR") return null;
		throw e;
	}
}

// Write through a temporary file and rename, as object_store's LocalFileSystem does.
function writeAtomic(file, data) {
	fs.mkdirSync(path.dirname(file), { recursive: true });
	const tmp = `${file}.${process.pid}.${crypto.randomBytes(4).toString("hex")}#tmp`;
	fs.writeFileSync(tmp, data);
	fs.renameSync(tmp, file);
}

function walk(dir, rel, out) {
	let entries;
	try {
		entries = fs.readdirSync(dir, { withFileTypes: true });
	} catch (e) {
		if (e.code === "ENOENT" || e.code === "ENOTDIR") return;
		throw e;
	}
	for (const e of entries) {
		const r = rel ? `${rel}/${e.name}` : e.name;
		const full = path.join(dir, e.name);
		if (e.isDirectory()) walk(full, r, out);
		else if (e.isFile() && !e.name.endsWith("#tmp")) out.push({ rel: r, full });
	}
}

// counters: optional object whose fields count the calls (gets, puts, lists, bytesRead)
export function fsStorage(root, counters = null) {
	const count = (k, n = 1) => {
		if (counters) counters[k] = (counters[k] ?? 0) + n;
	};
	const file = (key) => {
		if (key.split("/").some((s) => s === "" || s === "." || s === ".."))
			throw new Error(`bad key ${JSON.stringify(key)}`);
		return path.join(root, key);
	};
	return Storage.newCustom({
		canWrite: async () => true,

		getObjectRange: async (_err, { path: key, rangeStart, rangeEnd }) => {
			count("gets");
			const data = readOrNull(file(key));
			if (data === null) throw notFound(key);
			const start = rangeStart ?? 0;
			const end = rangeEnd ?? data.length;
			count("bytesRead", end - start);
			return { data: data.subarray(start, end), version: { etag: etagOf(data) } };
		},

		putObject: async (_err, { path: key, data, previousVersion }) => {
			count("puts");
			const f = file(key);
			if (previousVersion) {
				const current = readOrNull(f);
				const create = previousVersion.etag == null && previousVersion.generation == null;
				if (create ? current !== null : current === null || etagOf(current) !== previousVersion.etag)
					return { kind: "not_on_latest_version" };
			}
			writeAtomic(f, data);
			return { kind: "updated", newVersion: { etag: etagOf(data) } };
		},

		copyObject: async (_err, { from, to, version }) => {
			const data = readOrNull(file(from));
			if (data === null) throw notFound(from);
			if (version?.etag != null && etagOf(data) !== version.etag)
				return { kind: "not_on_latest_version" };
			writeAtomic(file(to), data);
			return { kind: "updated", newVersion: { etag: etagOf(data) } };
		},

		listObjects: async (_err, prefix) => {
			count("lists");
			const p = prefix.replace(/\/+$/, "");
			const out = [];
			walk(p ? path.join(root, p) : root, "", out);
			return out.map(({ rel, full }) => {
				const st = fs.statSync(full);
				return { id: rel, createdAt: st.mtime, sizeBytes: st.size };
			});
		},

		deleteBatch: async (_err, { prefix, batch }) => {
			let n = 0, bytes = 0;
			for (const { id } of batch) {
				const f = file(prefix ? `${prefix.replace(/\/+$/, "")}/${id}` : id);
				try {
					const st = fs.statSync(f);
					fs.unlinkSync(f);
					n++;
					bytes += st.size;
				} catch (e) {
					if (e.code !== "ENOENT") throw e;
				}
			}
			return { deletedObjects: n, deletedBytes: bytes };
		},

		getObjectLastModified: async (_err, key) => {
			try {
				return fs.statSync(file(key)).mtime;
			} catch (e) {
				if (e.code === "ENOENT") throw notFound(key);
				throw e;
			}
		},

		getObjectConditional: async (_err, { path: key, previousVersion }) => {
			count("gets");
			const data = readOrNull(file(key));
			if (data === null) throw notFound(key);
			const etag = etagOf(data);
			if (previousVersion?.etag === etag) return { kind: "on_latest_version" };
			return { kind: "modified", data, newVersion: { etag } };
		},
	});
}
