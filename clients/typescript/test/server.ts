/**
 * A real `oam serve` for the tests: a temporary SQLite store, API keys made by `oam keys
 * create`, a free local port, and `/readyz` awaited.
 *
 * The `oam` executable is `$OAM_BIN`, else the repository's `.venv/bin/oam` (what `make
 * test-typescript` builds).
 */

import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);

/** clients/typescript, from build-test/test/server.js or test/server.ts alike. */
export const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const REPO_DIR = resolve(PACKAGE_DIR, "..", "..");
export const OAM_BIN = process.env.OAM_BIN ?? join(REPO_DIR, ".venv", "bin", "oam");

export interface Keys {
  /** alice only */
  alice: string;
  /** bob only */
  bob: string;
  /** every user, agents, purge */
  admin: string;
  /** created, then revoked */
  revoked: string;
}

export interface TestServer {
  url: string;
  dsn: string;
  dir: string;
  keys: Keys;
  /** Run `oam` with these arguments on this server's store; its standard output. */
  oam(...args: string[]): Promise<string>;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

async function oam(args: string[]): Promise<string> {
  try {
    const { stdout } = await run(OAM_BIN, args, { timeout: 120_000 });
    return stdout;
  } catch (error) {
    const e = error as { code?: string; stderr?: string; message: string };
    if (e.code === "ENOENT") {
      throw new Error(`no oam executable at ${OAM_BIN}: run \`make test-typescript\` from the `
        + "repository (it builds .venv), or set OAM_BIN");
    }
    throw new Error(`oam ${args.join(" ")} failed: ${e.stderr ?? e.message}`);
  }
}

async function newKey(dsn: string, ...args: string[]): Promise<string> {
  const out = await oam(["keys", "create", "--dsn", dsn, ...args]);
  return out.trim().split("\n").at(-1) ?? "";
}

/** Start `oam serve` on a fresh store (extra arguments are passed on). */
export async function startServer(...extra: string[]): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), "recallwell-ts-"));
  const dsn = join(dir, "memory.db");
  const keys: Keys = {
    alice: await newKey(dsn, "--user-id", "alice"),
    bob: await newKey(dsn, "--user-id", "bob"),
    admin: await newKey(dsn, "--admin"),
    revoked: await newKey(dsn, "--user-id", "alice", "--label", "revoked"),
  };
  const listed = await oam(["keys", "list", "--dsn", dsn]);
  const revokedLine = listed.split("\n").find((line) => line.includes("revoked"));
  const revokedId = revokedLine?.trim().split(/\s+/)[0];
  if (!revokedId) throw new Error(`no key labelled 'revoked' in:\n${listed}`);
  await oam(["keys", "revoke", "--dsn", dsn, revokedId]);

  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let log = "";
  const child: ChildProcess = spawn(
    OAM_BIN, ["serve", "--dsn", dsn, "--host", "127.0.0.1", "--port", String(port), ...extra],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  child.stdout?.on("data", (chunk: Buffer) => { log += chunk.toString(); });
  child.stderr?.on("data", (chunk: Buffer) => { log += chunk.toString(); });
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((done) => child.once("exit", done));
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };

  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`oam serve exited with ${child.exitCode}:\n${log}`);
    }
    try {
      const response = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) });
      if (response.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`oam serve was not ready (/readyz) in time:\n${log}`);
    }
    await new Promise((done) => setTimeout(done, 200));
  }
  return { url, dsn, dir, keys, oam: (...args) => oam(args), stop };
}
