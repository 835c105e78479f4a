// The Cloud Storage emulator of firebase-tools without the `firebase` command (which wants Java
// and a download): its StorageEmulator served by createApp on 127.0.0.1:PORT, offline, for
// tests/integration/test_remote_gcs.py. Usage: node emulator.js NODE_MODULES_DIR PORT
// It serves the JSON API (/storage/v1/b/BUCKET/o...), media uploads and XML-style GETs, and exits
// on SIGTERM or when its standard input closes (the test died).
"use strict";
const path = require("path");
const [modules, port] = process.argv.slice(2);
const lib = path.join(modules, "firebase-tools", "lib", "emulator");
const { StorageEmulator } = require(path.join(lib, "storage"));
const { EmulatorRegistry } = require(path.join(lib, "registry"));
const { createApp } = require(path.join(lib, "storage", "server"));

(async () => {
  const emulator = new StorageEmulator({
    projectId: "zarrfs-test", host: "127.0.0.1", port: Number(port), auto_download: false,
    rules: [],
  });
  EmulatorRegistry.set(emulator.getName(), emulator);
  const app = await createApp("zarrfs-test", emulator);
  const server = app.listen(Number(port), "127.0.0.1", () => {
    process.stdout.write(`listening ${port}\n`);
  });
  const bye = () => { server.close(); process.exit(0); };
  process.on("SIGTERM", bye);
  process.stdin.on("end", bye);
  process.stdin.resume();
})().catch((e) => { console.error(e); process.exit(1); });
