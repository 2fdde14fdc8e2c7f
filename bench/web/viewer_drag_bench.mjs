// The time from a drag in the viewer's 3D view to the new slice on screen, in Debian's Chromium
// (headless, software WebGL) against the real server and detector: each sample runs from the
// pointer event that moved the slice to the animation frame after the one that drew the
// server's image of it (window.slicestreamViewer.latencies()). Prints a table; --json FILE.
//   node bench/web/viewer_drag_bench.mjs [--drags 20] [--slice-size 400] [--fps 83] [--json F]
// Environment as for tests/web (SLICESTREAM_SERVER, SLICESTREAM_DETECTOR, SLICESTREAM_WEB_ROOT,
// SLICESTREAM_WEB_MODULES, CHROMIUM); bench/web/README.md.
import { writeFileSync } from 'node:fs';
import { launchBrowser, startDetector, startServer, waitFor } from '../../tests/web/live_server.mjs';

const option = (name, fallback) => {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : fallback;
};
const drags = Number(option('drags', 20));
const sliceSize = Number(option('slice-size', 400));
const fps = Number(option('fps', 83));
const rows = Number(option('rows', 400));
const cols = Number(option('cols', 600));
const preview = option('preview', '1') === '1';
const json = option('json', '');

const server = await startServer({ args: ['--slice-size', String(sliceSize)] });
const detector = startDetector(server, { rows, cols, projections: 150, rotations: 1000, fps });
const browser = await launchBrowser();
const page = await browser.newPage();
await page.goto(`${server.http}/`);
await waitFor(page, () => window.slicestreamViewer.slices().filter((s) => s.image && s.image.projections >= 150).length >= 3
  && document.querySelector('.stages'), undefined, 180000);
if (!preview) await page.click('#show-preview');
const samples = [];
for (let d = 0; d < drags; d++) {
  const before = (await page.evaluate(() => window.slicestreamViewer.latencies())).length;
  const start = await page.evaluate(() => window.slicestreamViewer.screenPoint(2, 0.75, 0.25));
  await page.mouse.move(start.x, start.y);
  await page.mouse.down();
  const direction = d % 2 ? 1 : -1;
  for (let k = 1; k <= 5; k++) await page.mouse.move(start.x, start.y + direction * 8 * k);
  await page.mouse.up();
  await waitFor(page, (n) => window.slicestreamViewer.latencies().length > n, before, 60000);
  await new Promise((resolve) => setTimeout(resolve, 300));  // the last image of the drag
}
const latencies = (await page.evaluate(() => window.slicestreamViewer.latencies())).map((l) => l.ms);
const status = await page.evaluate(() => document.querySelector('#status').textContent.replace(/\s+/g, ' '));
detector.stop();
await browser.close();
await server.stop();

latencies.sort((a, b) => a - b);
const at = (q) => latencies[Math.min(latencies.length - 1, Math.ceil(q * latencies.length) - 1)];
const row = {
  samples: latencies.length, drags, slice: `${sliceSize}x${sliceSize}`, detector: `${rows}x${cols}`,
  offered_fps: fps, preview, p50_ms: at(0.5), p99_ms: at(0.99), max_ms: latencies[latencies.length - 1],
};
console.log('drag -> new slice on screen (browser)');
console.log(Object.entries(row).map(([k, v]) => `${k}: ${typeof v === 'number' ? Number(v.toFixed(1)) : v}`).join(' | '));
console.log(`status at the end: ${status.slice(0, 400)}`);
if (json) writeFileSync(json, JSON.stringify({ benchmark: 'viewer_drag_bench', rows: [row], latencies_ms: latencies }, null, 1));
