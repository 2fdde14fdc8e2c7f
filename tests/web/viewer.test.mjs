// The viewer as a person uses it, in Debian's Chromium (headless, through playwright-core),
// against the real server and a simulated detector: slices arrive and are not blank, a drag in
// the 3D view produces a new slice computed by the server, the status panel shows the rates, an
// invalid request shows its error, and stopping the server shows a lost connection, which comes
// back when the server does. Screenshots go to $SLICESTREAM_SCREENSHOTS.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { env, launchBrowser, startDetector, startServer, waitFor } from './live_server.mjs';

const screenshots = env('SLICESTREAM_SCREENSHOTS', join(process.cwd(), 'screenshots'));
mkdirSync(screenshots, { recursive: true });

let server;
let detector;
let browser;
let page;
const pageErrors = [];

before(async () => {
  server = await startServer({ args: ['--slice-size', '128', '--preview-size', '48', '--preview-interval', '0.5'] });
  detector = startDetector(server);
  browser = await launchBrowser();
  page = await browser.newPage();
  page.on('pageerror', (error) => pageErrors.push(String(error)));
  page.on('console', (message) => {
    // Failed WebSocket connections while the server is down are the browser's, not the page's.
    if (message.type() === 'error' && !/WebSocket connection to .* failed/.test(message.text())) {
      pageErrors.push(message.text());
    }
  });
  await page.goto(`${server.http}/`);
});

after(async () => {
  detector?.stop();
  await browser?.close();
  await server?.stop();
});

// Mean and standard deviation of a canvas' pixels (RGB).
async function canvasStats(selector) {
  return page.evaluate((s) => {
    const canvas = document.querySelector(s);
    const context = canvas.getContext('2d');
    const { data } = context.getImageData(0, 0, canvas.width, canvas.height);
    let sum = 0;
    let sum2 = 0;
    const n = data.length / 4;
    for (let i = 0; i < data.length; i += 4) {
      const v = (data[i] + data[i + 1] + data[i + 2]) / 3;
      sum += v;
      sum2 += v * v;
    }
    const mean = sum / n;
    return { mean, std: Math.sqrt(Math.max(0, sum2 / n - mean * mean)), width: canvas.width };
  }, selector);
}

test('live slices arrive and are not blank', async () => {
  await waitFor(page, () => window.slicestreamViewer?.connection() === 'open');
  await waitFor(page, () => window.slicestreamViewer.slices().filter((s) => s.image && s.image.projections > 60).length >= 3);
  for (const id of [0, 1, 2]) {
    const stats = await canvasStats(`.slice-panel[data-slice="${id}"] canvas`);
    assert.equal(stats.width, 128, `slice ${id} is 128 pixels wide`);
    assert.ok(stats.std > 10, `slice ${id} shows structure (pixel std ${stats.std.toFixed(1)})`);
  }
  // The 3D view draws the box, the planes and the preview.
  const view = await page.evaluate(() => {
    const canvas = document.querySelector('#view3d canvas');
    const probe = document.createElement('canvas');
    probe.width = canvas.width;
    probe.height = canvas.height;
    const context = probe.getContext('2d');
    context.drawImage(canvas, 0, 0);
    const { data } = context.getImageData(0, 0, probe.width, probe.height);
    const colours = new Set();
    for (let i = 0; i < data.length; i += 4 * 97) colours.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
    return colours.size;
  });
  assert.ok(view > 50, `the 3D view shows more than a background (${view} colours)`);
});

test('the status panel shows the scan, the frames and per-stage rates', async () => {
  await waitFor(page, () => {
    const rates = [...document.querySelectorAll('.stages .rate')].map((e) => Number(e.textContent));
    return rates.length === 5 && rates.some((r) => r > 0);
  });
  const text = (await page.textContent('#status')).replace(/\s+/g, ' ');
  assert.match(text, /Scan \d+ “browser test phantom”/);
  assert.match(text, /cone beam, 64×96 detector, 60 projections per rotation/);
  assert.match(text, /Frame → slice latency: p50 [\d.]+ ms, p99 [\d.]+ ms/);
  assert.match(text, /Backend cpu/);
  const received = Number(await page.textContent('.frames-received'));
  assert.ok(received > 0);
  await page.screenshot({ path: join(screenshots, 'viewer.png') });
});

test('refining the axial slice shows the refined image and what the refinement did', async () => {
  const id = await page.evaluate(() => window.slicestreamViewer.slices().find((s) => s.axial)?.id);
  assert.notEqual(id, undefined, 'a default axial slice is shown');
  const panel = `.slice-panel[data-slice="${id}"]`;
  await page.click(`${panel} label.refine input`);
  // The server's default refinement: FISTA with x >= 0 and TV, stopped by a rule it names.
  await waitFor(page, (p) => /fista, tv [\d.e-]+, x ≥ 0: stopped \(\w+\)/.test(document.querySelector(`${p} .residual`).textContent), panel);
  const text = await page.textContent(`${panel} .residual`);
  assert.match(text, /‖Ax−b‖\/‖b‖ [\d.e-]+ → [\d.e-]+/, `the residuals are shown (${text})`);
  await page.selectOption(`${panel} select.view`, 'refined');
  const stats = await canvasStats(`${panel} canvas`);
  assert.ok(stats.std > 10, `the refined image shows structure (pixel std ${stats.std.toFixed(1)})`);
  await page.screenshot({ path: join(screenshots, 'viewer_refined.png') });
  await page.click(`${panel} label.refine input`);
  await page.selectOption(`${panel} select.view`, 'fbp');
});

test('a drag in the 3D view moves a slice and the server reconstructs it there', async () => {
  const before = (await page.evaluate(() => window.slicestreamViewer.slices())).find((s) => s.id === 2);
  // A point of the axial slice in the quadrant towards the camera (the other planes cross its
  // centre), away from its edges (a press there would rotate it).
  const start = await page.evaluate(() => window.slicestreamViewer.screenPoint(2, 0.75, 0.25));
  assert.ok(start, 'slice 2 is on screen');
  await page.mouse.move(start.x, start.y);
  await page.mouse.down();
  for (let k = 1; k <= 10; k++) await page.mouse.move(start.x, start.y - 6 * k);
  await page.mouse.up();
  // The slice's new place, the image's orientation: the server's reconstruction of it.
  await waitFor(page, (baseZ) => {
    const s = window.slicestreamViewer.slices().find((x) => x.id === 2);
    return s.orientation[8] > baseZ + 1 && s.image && Math.abs(s.image.orientation[8] - s.orientation[8]) < 1e-3;
  }, before.orientation[8]);
  const after = (await page.evaluate(() => window.slicestreamViewer.slices())).find((s) => s.id === 2);
  assert.ok(after.orientation[8] > before.orientation[8], 'moved up along its normal (z)');
  assert.deepEqual(after.orientation.slice(0, 6), before.orientation.slice(0, 6), 'same axes: a move');
  const stats = await canvasStats('.slice-panel[data-slice="2"] canvas');
  assert.ok(stats.std > 10, 'the moved slice shows structure');
  const latencies = await page.evaluate(() => window.slicestreamViewer.latencies());
  assert.ok(latencies.length >= 1, 'the drag -> slice on screen time was measured');
  await page.screenshot({ path: join(screenshots, 'viewer-moved.png') });
});

test('an invalid request shows the server\'s error and the form the values in force', async () => {
  const inForce = await page.inputValue('input[name="filter_cutoff"]');
  assert.notEqual(inForce, '5');
  await page.fill('input[name="filter_cutoff"]', '5');
  // The edit outlives the status refreshes (one a second) until the user applies it, even with
  // the focus elsewhere.
  await page.focus('input[name="publish_rate_hz"]');
  const refreshes = await page.evaluate(() => window.slicestreamViewer.statusRefreshes());
  await waitFor(page, (n) => window.slicestreamViewer.statusRefreshes() >= n + 2, refreshes);
  assert.equal(await page.inputValue('input[name="filter_cutoff"]'), '5');
  assert.deepEqual(await page.evaluate(() => window.slicestreamViewer.editedParameters()), ['filter_cutoff']);
  await page.screenshot({ path: join(screenshots, 'viewer-edited.png') });
  await page.click('form.parameters button[type="submit"]');
  await waitFor(page, () => window.slicestreamViewer.errors().some((e) => e.reason === 'bad_value'));
  const entry = await page.textContent('.error-list li');
  assert.match(entry, /INVALID_ARGUMENT/);
  assert.match(entry, /filter cutoff/);
  assert.equal(await page.inputValue('input[name="filter_cutoff"]'), inForce);
  assert.deepEqual(await page.evaluate(() => window.slicestreamViewer.editedParameters()), []);
});

test('Revert drops an edit and shows the values in force', async () => {
  const inForce = await page.inputValue('input[name="preview_interval_s"]');
  await page.fill('input[name="preview_interval_s"]', '123');
  assert.deepEqual(await page.evaluate(() => window.slicestreamViewer.editedParameters()), ['preview_interval_s']);
  await page.click('form.parameters button:has-text("Revert")');
  assert.equal(await page.inputValue('input[name="preview_interval_s"]'), inForce);
  assert.deepEqual(await page.evaluate(() => window.slicestreamViewer.editedParameters()), []);
});

test('stopping the server shows a lost connection, which comes back with the server', async () => {
  const port = new URL(server.http).port;
  assert.equal(await server.stop(), 0, 'the server drains and exits 0');
  detector.stop();
  await waitFor(page, () => document.body.dataset.connection === 'lost');
  assert.ok(await page.isVisible('#banner'));
  assert.match(await page.textContent('#banner'), /Connection to the server lost/);
  await page.screenshot({ path: join(screenshots, 'viewer-lost.png') });
  server = await startServer({ http: `127.0.0.1:${port}` });
  await waitFor(page, () => document.body.dataset.connection === 'open', undefined, 20000);
  assert.ok(!(await page.isVisible('#banner')));
  assert.deepEqual(pageErrors, [], 'no script errors on the page');
});
