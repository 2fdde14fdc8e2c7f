// One slice as a 2D image panel: the live FBP image (or its refined twin), colour-mapped, with
// the value and world position under the cursor, and the slice's controls.
import { colorize } from './colormaps.js';
import { element, formatValue } from './html.js';
import { axisOf, isAxial, norm, parts, pixelCentre } from './orientation.js';

const AXIS_NAMES = { x: 'x (y-z plane)', y: 'y (x-z plane)', z: 'z (axial)', oblique: 'oblique' };

export class SliceView {
  // callbacks: onRemove(id), onRefine(id, enabled), onViewChange(id)
  constructor(id, container, callbacks) {
    this.id = id;
    this.callbacks = callbacks;
    this.images = { fbp: null, refined: null };  // {values, width, height, header}
    this.showRefined = false;
    this.orientation = null;
    this.drawnAt = 0;

    const panel = element('section', 'slice-panel');
    panel.dataset.slice = String(id);
    const head = element('header');
    this.title = element('span', 'title', `slice ${id}`);
    this.meta = element('span', 'meta', 'waiting for the first image…');
    const remove = element('button', 'remove', '✕');
    remove.title = `remove slice ${id}`;
    remove.addEventListener('click', () => callbacks.onRemove(id));
    head.append(this.title, this.meta, remove);
    this.canvas = element('canvas');
    this.canvas.width = 1;
    this.canvas.height = 1;
    this.readout = element('div', 'readout', ' ');
    const foot = element('footer');
    this.refineLabel = element('label', 'refine');
    this.refineBox = element('input');
    this.refineBox.type = 'checkbox';
    this.refineBox.addEventListener('change', () => callbacks.onRefine(id, this.refineBox.checked));
    this.refineLabel.append(this.refineBox, document.createTextNode(' refine (CGLS)'));
    this.viewSelect = element('select', 'view');
    for (const [value, label] of [['fbp', 'FBP'], ['refined', 'refined']]) {
      const option = element('option', '', label);
      option.value = value;
      this.viewSelect.append(option);
    }
    this.viewSelect.addEventListener('change', () => {
      this.showRefined = this.viewSelect.value === 'refined';
      callbacks.onViewChange(id);
    });
    this.residual = element('span', 'residual', '');
    foot.append(this.refineLabel, this.viewSelect, this.residual);
    panel.append(head, this.canvas, this.readout, foot);
    container.append(panel);
    this.panel = panel;
    this.canvas.addEventListener('pointermove', (e) => this.showValueAt(e));
    this.canvas.addEventListener('pointerleave', () => { this.readout.textContent = ' '; });
    this.setRefinementAvailable(false);
  }

  setOrientation(orientation, width, height) {
    this.orientation = orientation;
    this.size = [width, height];
    // Shown in the slice's physical proportions (its pixels need not be square).
    const { xAxis, yAxis } = parts(orientation);
    this.canvas.style.aspectRatio = `${norm(xAxis)} / ${norm(yAxis)}`;
    this.title.textContent = `slice ${this.id} · ${AXIS_NAMES[axisOf(orientation)]}`;
    this.setRefinementAvailable(isAxial(orientation));
  }

  setRefinementAvailable(available) {
    this.refineLabel.hidden = !available;
    this.viewSelect.hidden = !available || !this.images.refined;
  }

  setRefinement(enabled, text) {
    this.refineBox.checked = enabled;
    this.residual.textContent = text;
  }

  setImage(kind, image) {
    this.images[kind] = image;
    if (kind === 'refined') this.viewSelect.hidden = this.refineLabel.hidden;
  }

  current() {
    return (this.showRefined && this.images.refined) || this.images.fbp;
  }

  draw(lut, low, high) {
    const image = this.current();
    if (!image) return;
    const { values, width, height, header } = image;
    if (this.canvas.width !== width || this.canvas.height !== height) {
      this.canvas.width = width;
      this.canvas.height = height;
      this.pixels = null;
    }
    const context = this.canvas.getContext('2d');
    if (!this.pixels) this.pixels = context.createImageData(width, height);
    colorize(values, width, height, lut, low, high, this.pixels.data, true);
    context.putImageData(this.pixels, 0, 0);
    const slice = header.slice;
    const kind = image === this.images.refined ? 'refined · ' : '';
    this.meta.textContent = `${kind}${width}×${height} · ${slice.projections_integrated} proj. · #${slice.sequence}`;
    this.drawnAt = performance.now();
  }

  showValueAt(event) {
    const image = this.current();
    if (!image) return;
    const rect = this.canvas.getBoundingClientRect();
    const { values, width, height, header } = image;
    const i = Math.floor(((event.clientX - rect.left) / rect.width) * width);
    const row = Math.floor(((event.clientY - rect.top) / rect.height) * height);
    if (i < 0 || i >= width || row < 0 || row >= height) return;
    const j = height - 1 - row;  // row 0 of a slice is at the bottom
    const value = values[j * width + i];
    const p = pixelCentre(header.slice.orientation.values, width, height, i, j);
    this.readout.textContent =
      `(${p.map((c) => c.toFixed(1)).join(', ')}) mm: ${formatValue(value)} mm⁻¹`;
  }

  remove() {
    this.panel.remove();
  }
}
