// Bundles the viewer into the folder the server serves (no CDN at run time: everything the page
// needs is in these files).   node build.mjs [--outdir DIR]   (default: dist)
import { build } from 'esbuild';
import { copyFile, mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const at = process.argv.indexOf('--outdir');
const outdir = at >= 0 ? process.argv[at + 1] : join(here, 'dist');

await mkdir(outdir, { recursive: true });
await build({
  entryPoints: [join(here, 'src', 'main.js')],
  bundle: true,
  format: 'esm',
  target: ['es2020'],
  minify: true,
  sourcemap: true,
  outfile: join(outdir, 'viewer.js'),
  logLevel: 'warning',
  legalComments: 'linked',
});
for (const file of ['index.html', 'viewer.css']) await copyFile(join(here, 'src', file), join(outdir, file));
console.log(`slicestream viewer built into ${outdir}`);
