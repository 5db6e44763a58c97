/**
 * What `npm pack` makes is a package that works: it holds the built ESM and its type
 * declarations (no sources, no tests), installs from the tarball offline (it has no
 * dependency), imports from a plain Node script, and type-checks in a TypeScript project.
 */

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";

import { PACKAGE_DIR, startServer, type TestServer } from "./server.js";

const run = promisify(execFile);
const NPM = process.platform === "win32" ? "npm.cmd" : "npm";

let server: TestServer;
let work: string;
let tarball: string;

before(async () => {
  server = await startServer();
  work = mkdtempSync(join(tmpdir(), "recallwell-pack-"));
});

after(async () => {
  await server?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

test("npm pack holds the built package and nothing else", async () => {
  // `npm test` has just built dist/ (pretest): the prepack build is not run twice.
  const { stdout } = await run(NPM, ["pack", "--json", "--ignore-scripts",
    "--pack-destination", work], { cwd: PACKAGE_DIR });
  const [info] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
  assert.ok(info);
  tarball = join(work, info.filename);
  const files = info.files.map((f) => f.path).sort();
  for (const needed of ["package.json", "README.md", "openapi.json", "dist/index.js",
    "dist/index.d.ts", "dist/client.js", "dist/client.d.ts", "dist/errors.js",
    "dist/schema.d.ts"]) {
    assert.ok(files.includes(needed), `${needed} is not in the package: ${files.join(", ")}`);
  }
  assert.deepEqual(files.filter((f) => !/^(dist\/|package\.json$|README\.md$|openapi\.json$)/
    .test(f)), []);
});

test("installed from the tarball, a plain Node script imports it and calls the server",
  async () => {
    const app = join(work, "app");
    await run("mkdir", ["-p", app]);
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true,
      type: "module" }));
    await run(NPM, ["install", "--offline", "--no-audit", "--no-fund", tarball], { cwd: app });
    writeFileSync(join(app, "main.mjs"), `
import { Recallwell, NotFoundError, RecallwellError } from "recallwell";

const client = new Recallwell({ baseUrl: process.argv[2], apiKey: process.argv[3] });
console.log(JSON.stringify(await client.health()));
console.log(NotFoundError.prototype instanceof RecallwellError);
try {
  await client.getMemory("no-such-memory");
} catch (error) {
  console.log(error.constructor.name, error.status, error.body.error.code);
}
`);
    const { stdout } = await run(process.execPath, ["main.mjs", server.url, server.keys.alice],
      { cwd: app });
    assert.deepEqual(stdout.trim().split("\n"),
      ['{"status":"ok"}', "true", "NotFoundError 404 not_found"]);

    // A TypeScript project type-checks against the package's declarations.
    writeFileSync(join(app, "main.ts"), `
import { Recallwell, type RecordOut, type SearchIn } from "recallwell";
const client = new Recallwell({ baseUrl: "http://127.0.0.1:8080" });
const query: SearchIn = { query: "x", user_id: "alice", strategy: "hybrid" };
const found = await client.search(query);
const first: RecordOut | undefined = found.results[0]?.record;
export { first };
`);
    writeFileSync(join(app, "tsconfig.json"), JSON.stringify({ compilerOptions: {
      target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true,
      noEmit: true, lib: ["ES2022", "DOM"], types: [] }, files: ["main.ts"] }));
    const tsc = join(PACKAGE_DIR, "node_modules", "typescript", "bin", "tsc");
    await run(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: app }).catch((error) => {
      assert.fail(`the package's types do not check: ${(error as { stdout?: string }).stdout}`);
    });
  });
