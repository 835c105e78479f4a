// A read/write zarrita store over a local directory, with node:fs only (zarrita's own
// @zarrita/storage/fs is a transitive dependency we do not import directly).
//
// Keys are zarrita's absolute paths ("/a/b/zarr.json"). A missing key (ENOENT, or ENOTDIR when
// a path component is a file) is `undefined`, as zarrita's stores report "not found".
//
// float16: zarrita 0.7.5 decodes float16 only through globalThis.Float16Array, which Node 20
// lacks. With `float16AsUint16`, zarr.json documents of float16 arrays are handed to zarrita
// relabelled as uint16 (fill value converted to its IEEE 754 binary16 bit pattern), so zarrita
// still runs its whole codec pipeline and the bytes are the float16 bytes.

import * as fs from "node:fs";
import * as path from "node:path";

function notFound(err) {
	return err && (err.code === "ENOENT" || err.code === "ENOTDIR");
}

// IEEE 754 binary16 bits of a JS number (round to nearest even), or of "NaN"/"Infinity"/...
export function halfBits(v) {
	if (typeof v === "string") {
		if (v === "NaN") return 0x7e00;
		if (v === "Infinity") return 0x7c00;
		if (v === "-Infinity") return 0xfc00;
		if (/^0x[0-9a-fA-F]+$/.test(v)) return Number.parseInt(v.slice(2), 16);
		throw new Error(`float16 fill value ${v} not understood`);
	}
	if (Number.isNaN(v)) return 0x7e00;
	const f32 = new Float32Array([v]);
	const x = new Uint32Array(f32.buffer)[0];
	const sign = (x >>> 16) & 0x8000;
	let exp = (x >>> 23) & 0xff;
	let mant = x & 0x7fffff;
	if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
	// re-bias: float32 bias 127, float16 bias 15
	let e = exp - 127 + 15;
	if (e >= 0x1f) return sign | 0x7c00; // overflow -> inf
	if (e <= 0) {
		if (e < -10) return sign; // underflow -> signed zero
		mant |= 0x800000;
		const shift = 14 - e;
		let half = mant >>> shift;
		const rem = mant & ((1 << shift) - 1);
		const halfway = 1 << (shift - 1);
		if (rem > halfway || (rem === halfway && (half & 1))) half += 1;
		return sign | half;
	}
	let half = (e << 10) | (mant >>> 13);
	const rem = mant & 0x1fff;
	if (rem > 0x1000 || (rem === 0x1000 && (half & 1))) half += 1;
	return sign | half;
}

function relabelFloat16(doc) {
	if (doc && doc.node_type === "array" && doc.data_type === "float16") {
		doc.data_type = "uint16";
		doc.fill_value = halfBits(doc.fill_value ?? 0);
		doc._zarrfs_float16 = true;
	}
	return doc;
}

export class DirStore {
	constructor(root, { float16AsUint16 = false } = {}) {
		this.root = root;
		this.float16AsUint16 = float16AsUint16 && typeof globalThis.Float16Array === "undefined";
		this.float16Keys = new Set();
	}

	#file(key) {
		const rel = key.replace(/^\/+/, "");
		return path.join(this.root, rel);
	}

	async get(key) {
		let bytes;
		try {
			bytes = await fs.promises.readFile(this.#file(key));
		} catch (err) {
			if (notFound(err)) return undefined;
			throw err;
		}
		if (this.float16AsUint16 && key.endsWith("zarr.json")) {
			const doc = JSON.parse(new TextDecoder().decode(bytes));
			if (doc.node_type === "array" && doc.data_type === "float16") {
				this.float16Keys.add(key);
				return new TextEncoder().encode(JSON.stringify(relabelFloat16(doc)));
			}
		}
		return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
	}

	async getRange(key, range) {
		let fh;
		try {
			fh = await fs.promises.open(this.#file(key), "r");
			const size = (await fh.stat()).size;
			let offset;
			let length;
			if ("suffixLength" in range) {
				length = Math.min(range.suffixLength, size);
				offset = size - length;
			} else {
				offset = range.offset;
				length = range.length;
			}
			const buf = Buffer.alloc(length);
			const { bytesRead } = await fh.read(buf, 0, length, offset);
			if (bytesRead !== length) {
				throw new Error(`${key}: short read ${bytesRead} of ${length} at ${offset}`);
			}
			return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
		} catch (err) {
			if (notFound(err)) return undefined;
			throw err;
		} finally {
			await fh?.close();
		}
	}

	async has(key) {
		try {
			await fs.promises.access(this.#file(key));
			return true;
		} catch {
			return false;
		}
	}

	async set(key, value) {
		const fp = this.#file(key);
		await fs.promises.mkdir(path.dirname(fp), { recursive: true });
		await fs.promises.writeFile(fp, value);
	}

	async delete(key) {
		await fs.promises.unlink(this.#file(key));
		return true;
	}
}
