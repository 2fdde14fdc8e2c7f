// The slicestream viewer: wires the WebSocket, the 2D slice panels, the 3D view, the contrast
// controls, the status panel, the parameters form and the error log (docs/viewer.md).
import { Connection } from './connection.js';
import { COLORMAP_NAMES, colorize, colormap } from './colormaps.js';
import { histogram, percentileWindow } from './contrast.js';
import { element, formatValue } from './html.js';
import { ErrorLog } from './error_log.js';
import { axisSlice, isAxial, sameOrientation } from './orientation.js';
import { ParametersForm } from './parameters_form.js';
import { SliceView } from './slice_view.js';
import { renderStatus } from './status_panel.js';
import { VolumeView } from './volume_view.js';

const STATUS_INTERVAL_MS = 1000;
// The server's default refinement (FISTA, x >= 0, TV, discrepancy stop) with the iteration
// limit the command-line client uses; it usually stops earlier, at the noise level.
const REFINE_ITERATIONS = 50;
const REFINE_INTERVAL_S = 1;
const MAX_LATENCIES = 1000;

const $ = (id) => document.getElementById(id);
const url = new URL('ws', window.location.href);
url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
url.search = window.location.search;  // e.g. ?encoding=f32&rate=10

const state = {
  slices: new Map(),  // id -> {view, orientation, width, height, wanted, inFlight, awaiting[]}
  box: null,
  status: null,
  statusRefreshes: 0,  // status replies applied (tests wait on it)
  colormap: 'gray',
  contrast: 'auto',
  window: [0, 1],
  preview: null,
  showPreview: true,
  latencies: [],
  imagesReceived: 0,
};

const connection = new Connection(url.toString());
const errors = new ErrorLog($('errors'));
const volume = new VolumeView($('view3d'), { onDrag: dragged, onDragEnd: dragged });
const parameters = new ParametersForm($('parameters'), connection, errors);

// ---- connection state

connection.addEventListener('state', (e) => {
  const { state: s, reason, retryMs } = e.detail;
  const banner = $('banner');
  document.body.dataset.connection = s;
  $('connection').textContent = s === 'open' ? 'connected' : s;
  if (s === 'lost') {
    banner.hidden = false;
    banner.textContent = `Connection to the server lost (${reason}). Reconnecting in ${(retryMs / 1000).toFixed(1)} s…`;
    for (const slice of state.slices.values()) slice.inFlight = false;
  } else if (s === 'open') {
    banner.hidden = true;
    refreshStatus();
  }
});

connection.addEventListener('reply', (e) => {
  const reply = e.detail;
  if (reply.code !== 'STATUS_CODE_OK') errors.add('request', reply.code, reply.reason, reply.message);
});
connection.addEventListener('event', (e) => {
  const event = e.detail.event;
  if (event.kind === 'EVENT_KIND_ERROR' || event.kind === 'EVENT_KIND_WARNING') {
    errors.add(event.kind === 'EVENT_KIND_ERROR' ? 'server error' : 'server warning', '',
      event.reason, event.message);
  }
  if (event.kind === 'EVENT_KIND_SCAN_STARTED' || event.kind === 'EVENT_KIND_SCAN_ENDED') refreshStatus();
});
connection.addEventListener('notice', (e) => errors.add('notice', '', '', e.detail.message));

// ---- status

async function refreshStatus() {
  try {
    const { reply } = await connection.request({ get_status: {} });
    applyStatus(reply.status);
  } catch (error) {
    // Shown by the reply handler (server errors) or the banner (connection).
  }
}

setInterval(() => { if (connection.state === 'open') refreshStatus(); }, STATUS_INTERVAL_MS);

function boxOf(volumeBox) {
  const v = (p) => [p?.x ?? 0, p?.y ?? 0, p?.z ?? 0];
  return { min: v(volumeBox.min_mm), max: v(volumeBox.max_mm) };
}

function applyStatus(status) {
  state.status = status;
  state.statusRefreshes++;
  renderStatus($('status'), status);
  parameters.show(status.parameters);
  if (status.scan?.volume) {
    state.box = boxOf(status.scan.volume);
    volume.setBox(state.box);
  }
  const live = new Set();
  for (const spec of status.slices) {
    live.add(spec.slice_id);
    const slice = ensureSlice(spec.slice_id);
    if (!slice.inFlight && !slice.wanted && !isDragging(spec.slice_id)) {
      setOrientation(slice, spec.orientation.values, spec.width, spec.height);
    }
  }
  for (const [id, slice] of state.slices) {
    if (!live.has(id) && !slice.inFlight && !slice.adding) removeSliceView(id);
  }
  const refinements = new Map((status.refinements || []).map((r) => [r.slice_id, r]));
  for (const [id, slice] of state.slices) {
    const r = refinements.get(id);
    const text = r ? `${r.state}${r.refined_residual !== undefined
      ? ` · ‖Ax−b‖/‖b‖ ${formatValue(r.fbp_residual)} → ${formatValue(r.refined_residual)}` : ''}${
      describeSummary(r.summary)}` : '';
    slice.view.setRefinement(Boolean(r), text);
  }
  fetchMissingImages(status);
}

// What the last refinement did (" · fista, tv 0.001, x ≥ 0: stopped (discrepancy)"), so a lower
// residual is read with how it was reached.
function describeSummary(summary) {
  if (!summary || !summary.method || summary.method === 'residual') return '';
  const regularizer = summary.regularizer && summary.regularizer !== 'none'
    ? `${summary.regularizer} ${formatValue(summary.weight || 0)}` : 'no regulariser';
  const bound = summary.non_negative ? ', x ≥ 0' : '';
  return ` · ${summary.method}, ${regularizer}${bound}: stopped (${summary.stop_reason || '?'})`;
}

// Slices without any image yet (the page opened after they were last published): one GetSlice.
function fetchMissingImages(status) {
  if (!status.scan) return;
  for (const [id, slice] of state.slices) {
    if (slice.view.images.fbp || slice.fetching || !slice.orientation) continue;
    slice.fetching = true;
    connection.request({ get_slice: { orientation: { values: slice.orientation }, width: slice.width, height: slice.height } })
      .then(({ reply, values }) => {
        if (!slice.view.images.fbp) {
          showImage(id, 'fbp', { values, width: reply.slice.width, height: reply.slice.height, header: { slice: { ...reply.slice, slice_id: id } } });
        }
      })
      .catch(() => {})
      .finally(() => { slice.fetching = false; });
  }
}

// ---- slices

function ensureSlice(id) {
  let slice = state.slices.get(id);
  if (slice) return slice;
  const view = new SliceView(id, $('slices'), {
    onRemove: removeSlice,
    onRefine: refine,
    onViewChange: () => scheduleDraw(),
  });
  slice = { id, view, orientation: null, width: 0, height: 0, wanted: null, inFlight: false, awaiting: [] };
  state.slices.set(id, slice);
  return slice;
}

function setOrientation(slice, orientation, width, height) {
  if (slice.orientation && sameOrientation(slice.orientation, orientation) &&
      slice.width === width && slice.height === height) return;
  slice.orientation = orientation;
  slice.width = width;
  slice.height = height;
  slice.view.setOrientation(orientation, width, height);
  volume.setSlice(slice.id, orientation);
}

function removeSliceView(id) {
  const slice = state.slices.get(id);
  if (!slice) return;
  slice.view.remove();
  volume.removeSlice(id);
  state.slices.delete(id);
}

function isDragging(id) {
  return volume.drag?.id === id;
}

async function removeSlice(id) {
  try {
    await connection.request({ remove_slice: { slice_id: id } });
    removeSliceView(id);
  } catch (error) { /* logged */ }
}

async function addSlice(axis) {
  if (!state.box) {
    errors.add('viewer', '', '', 'no scan yet: the reconstruction box is not known');
    return;
  }
  const ids = [...state.slices.keys()];
  const id = Math.max(2, ...ids) + 1;
  const reference = state.slices.get(2) || state.slices.values().next().value;
  const width = reference?.width || 256;
  const height = axis === 'z' ? width : reference?.height || width;
  const slice = ensureSlice(id);
  slice.adding = true;
  setOrientation(slice, axisSlice(axis, state.box, 0.3 + 0.4 * Math.random()), width, height);
  try {
    await connection.request({ set_slice: { slice_id: id, orientation: { values: slice.orientation }, width, height } });
  } catch (error) {
    removeSliceView(id);
  } finally {
    slice.adding = false;
  }
}

async function refine(id, enabled) {
  try {
    await connection.request({
      set_refinement: { slice_id: id, enabled, iterations: REFINE_ITERATIONS, interval_s: REFINE_INTERVAL_S },
    });
  } catch (error) {
    state.slices.get(id)?.view.setRefinement(false, '');
  }
  refreshStatus();
}

// A drag in the 3D view: keep only the newest wanted orientation; one SetSlice in flight per slice.
function dragged(id, orientation, pointerTime) {
  const slice = state.slices.get(id);
  if (!slice || !orientation) return;
  if (slice.wanted && sameOrientation(slice.wanted.orientation, orientation, 1e-6)) return;
  slice.wanted = { orientation, time: pointerTime ?? performance.now() };
  sendWanted(slice);
}

async function sendWanted(slice) {
  if (slice.inFlight || !slice.wanted) return;
  const { orientation, time } = slice.wanted;
  slice.wanted = null;
  slice.inFlight = true;
  slice.awaiting.push({ orientation, time });
  if (slice.awaiting.length > 50) slice.awaiting.shift();
  try {
    await connection.request({
      set_slice: { slice_id: slice.id, orientation: { values: orientation }, width: slice.width, height: slice.height },
    });
    slice.orientation = orientation;
    slice.view.setOrientation(orientation, slice.width, slice.height);
  } catch (error) {
    slice.awaiting = slice.awaiting.filter((a) => a.orientation !== orientation);
  } finally {
    slice.inFlight = false;
  }
  sendWanted(slice);
}

// ---- images

connection.addEventListener('image', (e) => {
  const { header, values } = e.detail;
  state.imagesReceived++;
  if (header.type === 'preview') {
    const p = header.header.preview;
    state.preview = { values, size: [p.size_x, p.size_y, p.size_z], box: boxOf(p.volume) };
    scheduleDraw();
    return;
  }
  const body = header.type === 'refined' ? header.header.refined.slice : header.header.slice;
  const kind = header.type === 'refined' ? 'refined' : 'fbp';
  showImage(body.slice_id, kind, { values, width: body.width, height: body.height, header: { slice: body } });
});

function showImage(id, kind, image) {
  const slice = ensureSlice(id);
  const orientation = image.header.slice.orientation.values;
  if (!slice.orientation || (!slice.inFlight && !slice.wanted && !isDragging(id))) {
    setOrientation(slice, orientation, image.width, image.height);
  }
  slice.view.setImage(kind, image);
  if (kind === 'fbp') {
    const index = slice.awaiting.findIndex((a) => sameOrientation(a.orientation, orientation));
    if (index >= 0) {
      slice.measure = slice.awaiting[index].time;
      slice.awaiting.splice(0, index + 1);
    }
  }
  scheduleDraw();
}

// ---- drawing (once per animation frame)

let drawScheduled = false;
function scheduleDraw() {
  if (drawScheduled) return;
  drawScheduled = true;
  requestAnimationFrame(draw);
}

function draw() {
  drawScheduled = false;
  const images = [...state.slices.values()].map((s) => s.view.current()).filter(Boolean);
  const hist = histogram(images.map((i) => i.values));
  if (state.contrast === 'auto' && images.length) {
    // Adopted only when it moves by more than 2 % of its width: a steady picture, and slices
    // whose image did not change need no new colours.
    const [low, high] = percentileWindow(hist);
    const [oldLow, oldHigh] = state.window;
    const tolerance = 0.02 * (oldHigh - oldLow);
    if (!(Math.abs(low - oldLow) <= tolerance && Math.abs(high - oldHigh) <= tolerance)) {
      setWindow(low, high);
    }
  }
  drawHistogram(hist);
  const lut = colormap(state.colormap);
  const [low, high] = state.window;
  const everything = state.drawnWith !== `${state.colormap}|${low}|${high}`;
  state.drawnWith = `${state.colormap}|${low}|${high}`;
  for (const slice of state.slices.values()) {
    const image = slice.view.current();
    if (!image || (!everything && image === slice.drawnImage)) continue;
    slice.drawnImage = image;
    slice.view.draw(lut, low, high);
    const rgba = new Uint8Array(image.width * image.height * 4);
    colorize(image.values, image.width, image.height, lut, low, high, rgba, false);
    volume.setSliceImage(slice.id, rgba, image.width, image.height);
  }
  if (state.preview && (everything || state.preview !== state.drawnPreview)) {
    state.drawnPreview = state.preview;
    volume.setPreview(state.preview.values, state.preview.size, state.preview.box, low, high, state.showPreview);
  }
  // Drag -> new slice on screen: measured on the frame after the one that drew it.
  const measured = [...state.slices.values()].filter((s) => s.measure !== undefined);
  if (measured.length) {
    requestAnimationFrame(() => {
      const now = performance.now();
      for (const slice of measured) {
        if (slice.measure === undefined) continue;
        state.latencies.push({ slice: slice.id, ms: now - slice.measure });
        slice.measure = undefined;
      }
      if (state.latencies.length > MAX_LATENCIES) state.latencies.splice(0, state.latencies.length - MAX_LATENCIES);
    });
  }
}

function drawHistogram(hist) {
  const canvas = $('histogram');
  const context = canvas.getContext('2d');
  const { width, height } = canvas;
  context.clearRect(0, 0, width, height);
  const peak = Math.max(1, ...hist.counts);
  context.fillStyle = '#7a8699';
  const bins = hist.counts.length;
  for (let b = 0; b < bins; b++) {
    const h = (Math.log1p(hist.counts[b]) / Math.log1p(peak)) * height;
    context.fillRect((b / bins) * width, height - h, Math.ceil(width / bins), h);
  }
  const x = (v) => ((v - hist.min) / (hist.max - hist.min || 1)) * width;
  context.fillStyle = 'rgba(240, 192, 48, 0.25)';
  context.fillRect(x(state.window[0]), 0, x(state.window[1]) - x(state.window[0]), height);
}

function setWindow(low, high) {
  state.window = [low, high];
  $('low').value = formatValue(low);
  $('high').value = formatValue(high);
}

// ---- controls

function setUpControls() {
  const select = $('colormap');
  for (const name of COLORMAP_NAMES) select.append(new Option(name, name));
  select.addEventListener('change', () => {
    state.colormap = select.value;
    volume.setColormap(colormap(state.colormap));
    scheduleDraw();
  });
  volume.setColormap(colormap(state.colormap));
  $('contrast').addEventListener('change', (e) => {
    state.contrast = e.target.value;
    scheduleDraw();
  });
  for (const id of ['low', 'high']) {
    $(id).addEventListener('change', () => {
      const low = Number($('low').value);
      const high = Number($('high').value);
      if (!(Number.isFinite(low) && Number.isFinite(high) && high > low)) {
        errors.add('viewer', '', '', 'the contrast window needs two numbers, low below high');
        return;
      }
      state.contrast = 'manual';
      $('contrast').value = 'manual';
      setWindow(low, high);
      scheduleDraw();
    });
  }
  $('show-preview').addEventListener('change', (e) => {
    state.showPreview = e.target.checked;
    volume.setPreviewVisible(state.showPreview);
  });
  for (const axis of ['x', 'y', 'z']) $(`add-${axis}`).addEventListener('click', () => addSlice(axis));
}

setUpControls();

// For tests and benchmarks (docs/viewer.md): the page's state, without touching its internals.
window.slicestreamViewer = {
  connection: () => connection.state,
  slices: () => [...state.slices.values()].map((s) => ({
    id: s.id,
    orientation: s.orientation,
    width: s.width,
    height: s.height,
    image: s.view.images.fbp && {
      orientation: s.view.images.fbp.header.slice.orientation.values,
      sequence: Number(s.view.images.fbp.header.slice.sequence),
      projections: Number(s.view.images.fbp.header.slice.projections_integrated),
    },
    axial: s.orientation ? isAxial(s.orientation) : false,
    drawnAt: s.view.drawnAt,
  })),
  screenPoint: (id, u, v) => volume.screenPoint(id, u, v),
  latencies: () => state.latencies.slice(),
  errors: () => errors.entries(),
  editedParameters: () => parameters.editedFields(),
  statusRefreshes: () => state.statusRefreshes,
  imagesReceived: () => state.imagesReceived,
};
