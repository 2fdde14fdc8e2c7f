// The screenshots of docs/viewer.md and the README: the viewer on a simulated FleX-ray scan (the
// 3D Shepp-Logan phantom, cone beam), a moved and rotated slice, refinement on, a lost
// connection. Same environment as the browser test (tests/web/CMakeLists.txt).
//   node tests/web/take_screenshots.mjs OUT_DIR [--rows 200 --cols 300 --fps 40 --slice-size 256]
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { launchBrowser, startDetector, startServer, waitFor } from './live_server.mjs';

const out = process.argv[2] || 'screenshots';
const option = (name, fallback) => {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? Number(process.argv[at + 1]) : fallback;
};
mkdirSync(out, { recursive: true });
const server = await startServer({
  args: ['--slice-size', String(option('slice-size', 256)), '--preview-size', '64', '--preview-interval', '1'],
});
const detector = startDetector(server, {
  rows: option('rows', 200), cols: option('cols', 300), projections: 150, rotations: 1000, fps: option('fps', 40),
  extra: ['--geometry', 'cone'],
});
const browser = await launchBrowser({ width: 1600, height: 1000 });
const page = await browser.newPage();
await page.goto(`${server.http}/?encoding=f32`);
await waitFor(page, () => window.slicestreamViewer.slices().filter((s) => s.image && s.image.projections >= 150).length >= 3
  && document.querySelector('.stages'), undefined, 180000);
await page.selectOption('#colormap', 'gray');
await new Promise((resolve) => setTimeout(resolve, 3000));
await page.screenshot({ path: join(out, 'viewer.png') });

// Move the axial slice up, rotate slice 0 about an edge, colour map viridis.
const drag = async (id, u, v, dx, dy) => {
  const p = await page.evaluate(([i, a, b]) => window.slicestreamViewer.screenPoint(i, a, b), [id, u, v]);
  await page.mouse.move(p.x, p.y);
  await page.mouse.down();
  for (let k = 1; k <= 8; k++) await page.mouse.move(p.x + (dx * k) / 8, p.y + (dy * k) / 8);
  await page.mouse.up();
};
await drag(2, 0.75, 0.25, 0, -50);
await drag(0, 0.5, 0.95, 60, 0);
await page.selectOption('#colormap', 'viridis');
await new Promise((resolve) => setTimeout(resolve, 4000));
await page.screenshot({ path: join(out, 'viewer-moved.png') });

await server.stop();
detector.stop();
await waitFor(page, () => document.body.dataset.connection === 'lost');
await page.screenshot({ path: join(out, 'viewer-lost.png') });
await browser.close();
console.log(`screenshots in ${out}`);
