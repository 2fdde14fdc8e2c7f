// The reconstruction parameters (SetParameters): filter, cutoff, window mode, rotation-axis
// offset, publish rate, preview interval. The server checks every value; a refusal is shown in
// the error log and the form shows the values in force again.
import { element } from './html.js';

const FIELDS = [
  { key: 'filter', label: 'filter', options: [['FILTER_WINDOW_RAM_LAK', 'ram-lak'], ['FILTER_WINDOW_SHEPP_LOGAN', 'shepp-logan'],
    ['FILTER_WINDOW_COSINE', 'cosine'], ['FILTER_WINDOW_HAMMING', 'hamming'], ['FILTER_WINDOW_HANN', 'hann']] },
  { key: 'filter_cutoff', label: 'cutoff (of Nyquist)', step: '0.05' },
  { key: 'window_mode', label: 'mode', options: [['WINDOW_MODE_SLIDING', 'sliding'], ['WINDOW_MODE_PER_ROTATION', 'per rotation']] },
  { key: 'rotation_axis_offset_px', label: 'rotation axis offset (px)', step: '0.5' },
  { key: 'publish_rate_hz', label: 'publish rate (Hz, 0: all)', step: '1' },
  { key: 'preview_interval_s', label: 'preview interval (s)', step: '0.5' },
];

export class ParametersForm {
  constructor(container, connection, errors) {
    this.connection = connection;
    this.errors = errors;
    this.inputs = new Map();
    this.edited = new Set();
    const form = element('form', 'parameters');
    form.append(element('h2', '', 'Parameters'));
    for (const field of FIELDS) {
      const label = element('label', '', field.label);
      let input;
      if (field.options) {
        input = element('select');
        for (const [value, text] of field.options) input.append(new Option(text, value));
      } else {
        input = element('input');
        input.type = 'number';
        input.step = field.step;
      }
      input.name = field.key;
      // A value the user changed is theirs until Apply or Revert: the status refresh, which
      // shows the values in force every second, leaves it alone.
      input.addEventListener('input', () => this.markEdited(field.key));
      input.addEventListener('change', () => this.markEdited(field.key));
      label.append(input);
      form.append(label);
      this.inputs.set(field.key, { field, input, label });
    }
    const apply = element('button', '', 'Apply');
    apply.type = 'submit';
    const revert = element('button', '', 'Revert');
    revert.type = 'button';
    revert.title = 'Drop the edits and show the values in force';
    revert.addEventListener('click', () => this.revert());
    form.append(apply, revert);
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      this.apply();
    });
    container.append(form);
  }

  // The values in force; fields the user has edited keep the user's value.
  show(parameters) {
    if (!parameters) return;
    this.inForce = parameters;
    for (const [key, { input }] of this.inputs) {
      if (this.edited.has(key)) continue;
      if (parameters[key] !== undefined) input.value = String(parameters[key]);
    }
  }

  markEdited(key) {
    this.edited.add(key);
    this.inputs.get(key).label.classList.add('edited');
  }

  clearEdits() {
    this.edited.clear();
    for (const { label } of this.inputs.values()) label.classList.remove('edited');
  }

  revert() {
    this.clearEdits();
    this.show(this.inForce);
  }

  // Sends every field (the server takes all of them or none). The edits are dropped when the
  // reply comes: accepted, the form shows what the server now uses; refused, the values in force.
  async apply() {
    const body = {};
    for (const [key, { field, input }] of this.inputs) {
      body[key] = field.options ? input.value : Number(input.value);
    }
    let inForce = this.inForce;
    try {
      const { reply } = await this.connection.request({ set_parameters: body });
      inForce = reply.parameters;
    } catch (error) {
      // The refusal is in the error log (reply handler); nothing of the request took effect.
    }
    this.clearEdits();
    this.show(inForce);
  }

  // The keys of the fields holding an edit not yet applied (tests).
  editedFields() {
    return [...this.edited];
  }
}
