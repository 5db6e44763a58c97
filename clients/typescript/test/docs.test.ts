/**
 * The TypeScript examples of docs/guides/typescript.md run, in page order, against a live
 * `oam serve`: each fenced block titled `*.ts` is type-checked (strict) against this package's
 * own types, compiled, and run with Node in a folder holding `alice.key`; what its
 * `// prints: X` comments say it prints, it must print (in order). As in the Python docs
 * tests, `8080` stands for the test server's port.
 */

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";

import ts from "typescript";

import { PACKAGE_DIR, REPO_DIR, startServer, type TestServer } from "./server.js";

const run = promisify(execFile);
const PAGE = join(REPO_DIR, "docs", "guides", "typescript.md");
/** Inside the package, so that `import ... from "recallwell"` resolves to it (self-reference). */
const OUT = join(PACKAGE_DIR, "build-test", "docs");

interface Example {
  title: string;
  line: number;
  code: string;
}

/** The page's fenced blocks titled `<name>.ts`, in order. */
export function examples(markdown: string): Example[] {
  const found: Example[] = [];
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = /^(`{3,})\s*(\w*)\s+.*title="([\w.-]+\.ts)"/.exec(lines[i] ?? "");
    if (!open) continue;
    const fence = open[1] as string;
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && lines[j]?.trim() !== fence) body.push(lines[j++] ?? "");
    assert.ok(j < lines.length, `${PAGE}:${i + 1}: unclosed fence`);
    found.push({ title: open[3] as string, line: i + 1, code: body.join("\n") + "\n" });
    i = j;
  }
  return found;
}

function prints(code: string): string[] {
  const out: string[] = [];
  for (const line of code.split("\n")) {
    const match = /\/\/\s*prints:\s?(.*)$/.exec(line);
    if (match) out.push((match[1] ?? "").trim());
  }
  return out;
}

let server: TestServer;
let cwd: string;

before(async () => {
  server = await startServer();
  cwd = mkdtempSync(join(tmpdir(), "recallwell-docs-"));
  writeFileSync(join(cwd, "alice.key"), server.keys.alice + "\n");
});

after(async () => {
  await server?.stop();
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

test("the page has the quick start and the tool example", () => {
  const titles = examples(readFileSync(PAGE, "utf8")).map((e) => e.title);
  assert.deepEqual(titles, ["quickstart.ts", "context-tool.ts"]);
});

test("every example type-checks and compiles against this package's types", () => {
  const found = examples(readFileSync(PAGE, "utf8"));
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(OUT, { recursive: true });
  const port = new URL(server.url).port;
  const files = found.map((example) => {
    const file = join(OUT, example.title);
    writeFileSync(file, example.code.replaceAll("8080", port));
    return file;
  });
  const program = ts.createProgram(files, {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    noEmitOnError: true,
    skipLibCheck: true,
    types: ["node"],
    lib: ["lib.es2022.d.ts", "lib.dom.d.ts"],
    outDir: OUT,
    rootDir: OUT,
  });
  const result = program.emit();
  const diagnostics = [...ts.getPreEmitDiagnostics(program), ...result.diagnostics];
  const text = ts.formatDiagnostics(diagnostics, {
    getCanonicalFileName: (f) => f, getCurrentDirectory: () => OUT, getNewLine: () => "\n",
  });
  assert.equal(text, "", "the examples do not compile");
});

test("the examples run in page order and print what the page says", async () => {
  for (const example of examples(readFileSync(PAGE, "utf8"))) {
    const script = join(OUT, example.title.replace(/\.ts$/, ".js"));
    let stdout: string;
    try {
      ({ stdout } = await run(process.execPath, [script], { cwd, timeout: 60_000 }));
    } catch (error) {
      const e = error as { stdout?: string; stderr?: string };
      assert.fail(`${PAGE}:${example.line} (${example.title}) failed:\n${e.stdout}\n${e.stderr}`);
    }
    const got = stdout.split("\n").map((line) => line.trim());
    let at = 0;
    for (const expected of prints(example.code)) {
      const found = got.indexOf(expected, at);
      assert.ok(found >= 0,
        `${example.title} does not print ${JSON.stringify(expected)}; it printed:\n${stdout}`);
      at = found + 1;
    }
  }
});
