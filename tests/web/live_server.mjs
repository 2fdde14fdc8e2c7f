// Starts the real slicestream-server and slicestream-detector for the browser tests and the
// viewer benchmark, and Debian's Chromium through playwright-core (no browser download).
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export function env(name, fallback) {
  const value = process.env[name] ?? fallback;
  if (value === undefined) throw new Error(`${name} is not set (ctest sets it; see tests/web/CMakeLists.txt)`);
  return value;
}

// playwright-core from the viewer's own node_modules (clients/web, installed by the build).
export function playwright() {
  const require = createRequire(resolve(env('SLICESTREAM_WEB_MODULES'), 'package.json'));
  return require('playwright-core');
}

export const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
  '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export async function launchBrowser(viewport = { width: 1600, height: 1000 }) {
  const { chromium } = playwright();
  const context = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), 'slicestream-chromium-')), {
    executablePath: env('CHROMIUM', '/usr/bin/chromium'),
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport,
  });
  return context;
}

// A running server: its addresses (parsed from its "ready" line) and log.
export async function startServer({ http = '127.0.0.1:0', args = [] } = {}) {
  const argv = ['--backend', 'cpu', '--threads', '2', '--data', 'tcp://127.0.0.1:*',
    '--slices', 'tcp://127.0.0.1:*', '--requests', 'tcp://127.0.0.1:*', '--http', http,
    '--http-root', env('SLICESTREAM_WEB_ROOT'), '--stats-interval', '0', ...args];
  const child = spawn(env('SLICESTREAM_SERVER'), argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const ready = new Promise((resolve, reject) => {
    const onData = (chunk) => {
      log += chunk;
      const m = log.match(/ready: data (\S+) \| slices (\S+) \| requests (\S+) \| http (\S+)/);
      if (m) resolve({ data: m[1], slices: m[2], requests: m[3], http: m[4] });
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => reject(new Error(`slicestream-server exited (${code}):\n${log}`)));
    setTimeout(() => reject(new Error(`slicestream-server did not start:\n${log}`)), 30000);
  });
  const addresses = await ready;
  return {
    ...addresses,
    child,
    log: () => log,
    stop: () => new Promise((resolve) => {
      if (child.exitCode !== null) return resolve(child.exitCode);
      child.once('exit', (code) => resolve(code));
      child.kill('SIGTERM');
    }),
  };
}

// A simulated detector streaming a small cone-beam Shepp-Logan scan (FleX-ray geometry, fewer
// pixels) for `rotations` rotations at `fps` frames per second.
export function startDetector(server, { rows = 64, cols = 96, projections = 60, rotations = 200, fps = 40, extra = [] } = {}) {
  const argv = ['simulate', '--preset', 'flexray', '--rows', String(rows), '--cols', String(cols),
    '--projections-per-rotation', String(projections), '--rotations', String(rotations),
    '--fps', String(fps), '--darks', '2', '--flats', '2', '--data', server.data,
    '--requests', server.requests, '--description', 'browser test phantom', '--quiet', ...extra];
  const child = spawn(env('SLICESTREAM_DETECTOR'), argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout.on('data', (c) => { log += c; });
  child.stderr.on('data', (c) => { log += c; });
  return { child, log: () => log, stop: () => { if (child.exitCode === null) child.kill('SIGTERM'); } };
}

export async function waitFor(page, predicate, arg, timeout = 30000) {
  await page.waitForFunction(predicate, arg, { timeout, polling: 100 });
}
