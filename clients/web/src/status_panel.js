// The status panel: what GetStatus reports (scan, frames, per-stage rates and busy time,
// frame-to-slice latency, discards, backend and memory, refinements), refreshed every second.
import { escapeHtml, formatValue } from './html.js';

const ms = (us) => (Number(us) / 1000).toFixed(us >= 1e5 ? 0 : 1);
const mib = (bytes) => (Number(bytes) / 2 ** 20).toFixed(0);

function row(cells, tag = 'td') {
  return `<tr>${cells.map((c) => `<${tag}>${c}</${tag}>`).join('')}</tr>`;
}

function scanSection(status) {
  const scan = status.scan;
  const state = escapeHtml(status.scan_state);
  if (!scan) return `<p><b>Scan</b>: none yet (${state})</p>`;
  const description = scan.description ? ` “${escapeHtml(scan.description)}”` : '';
  return `<p><b>Scan ${escapeHtml(status.scan_id)}</b>${description}: <span class="state">${state}</span>,
    ${escapeHtml(scan.beam)} beam, ${scan.detector_rows}×${scan.detector_cols} detector,
    ${scan.projections_per_rotation} projections per rotation</p>`;
}

function framesSection(status) {
  const c = status.counters || {};
  const latency = status.frame_to_slice || {};
  const l = Number(latency.count) > 0
    ? `p50 <b>${ms(latency.p50_us)} ms</b>, p99 <b>${ms(latency.p99_us)} ms</b> (${latency.count} frames)`
    : 'no slice published yet';
  return `<p>Frames received <b class="frames-received">${c.frames_received ?? 0}</b>
    (${c.darks_received ?? 0} darks, ${c.flats_received ?? 0} flats),
    projections integrated <b class="frames-integrated">${c.projections_integrated ?? 0}</b>,
    slices published ${c.slices_published ?? 0}</p>
    <p>Frame → slice latency: ${l}</p>`;
}

function stagesSection(status) {
  const rows = (status.stages || []).map((s) => row([
    escapeHtml(s.name),
    `<span class="rate">${Number(s.rate_per_s).toFixed(1)}</span>`,
    `${(100 * s.busy_fraction).toFixed(0)} %`,
    Number(s.service?.count) > 0 ? `${ms(s.service.p50_us)} / ${ms(s.service.p99_us)}` : '–',
    `${s.queue_depth}/${s.queue_capacity}`,
  ]));
  return `<table class="stages">${row(['stage', 'items/s', 'busy', 'service p50/p99 ms', 'queue'], 'th')}
    ${rows.join('')}</table>`;
}

function discardsSection(status) {
  const entries = Object.entries(status.discards || {});
  if (!entries.length) return '<p>Discards: none</p>';
  return `<p class="discards">Discards: ${entries.map(([reason, count]) =>
    `<span class="discard">${escapeHtml(reason)} <b>${count}</b></span>`).join(', ')}</p>`;
}

function backendSection(status) {
  const m = status.memory || {};
  const kind = status.backend === 'cuda' ? 'GPU' : 'host';
  const used = Number(m.used_by_scan_bytes || 0) + Number(m.used_by_refiners_bytes || 0);
  return `<p>Backend <b>${escapeHtml(status.backend)}</b> on ${escapeHtml(status.backend_device)};
    ${kind} memory ${mib(used)} of ${mib(m.total_bytes || 0)} MiB
    (scan ${mib(m.used_by_scan_bytes || 0)}, refiners ${mib(m.used_by_refiners_bytes || 0)})</p>`;
}

function refinementSection(status) {
  const residuals = (status.residuals || []).filter((r) => r.residual !== undefined);
  const refinements = status.refinements || [];
  if (!residuals.length && !refinements.length) return '';
  const rows = refinements.map((r) => row([
    r.slice_id, escapeHtml(r.state), `${r.window_filled}/${r.window_size}`,
    r.fbp_residual !== undefined ? formatValue(r.fbp_residual) : '–',
    r.refined_residual !== undefined ? formatValue(r.refined_residual) : '–',
    escapeHtml(r.solver || ''),
  ]));
  const checks = residuals.map((r) => `slice ${r.slice_id}: ${formatValue(r.residual)}`);
  return `${refinements.length ? `<table class="refinements">${row(['slice', 'state', 'window', '‖Ax−b‖/‖b‖ FBP', 'refined', 'solver'], 'th')}${rows.join('')}</table>` : ''}
    ${checks.length ? `<p>Data consistency of the FBP slices: ${checks.join(', ')}</p>` : ''}`;
}

export function renderStatus(container, status) {
  container.innerHTML = [scanSection(status), framesSection(status), stagesSection(status),
    discardsSection(status), backendSection(status), refinementSection(status)].join('');
}
