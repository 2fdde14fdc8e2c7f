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
      input.addEventListener('focus', () => { this.editing = true; });
      input.addEventListener('blur', () => { this.editing = false; });
      label.append(input);
      form.append(label);
      this.inputs.set(field.key, { field, input });
    }
    const apply = element('button', '', 'Apply');
    apply.type = 'submit';
    form.append(apply);
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      this.apply();
    });
    container.append(form);
  }

  // The values in force; kept while the user edits, so that a refusal can put them back.
  show(parameters) {
    if (!parameters) return;
    this.inForce = parameters;
    if (this.editing) return;
    for (const [key, { input }] of this.inputs) {
      if (parameters[key] !== undefined) input.value = String(parameters[key]);
    }
  }

  async apply() {
    const body = {};
    for (const [key, { field, input }] of this.inputs) {
      body[key] = field.options ? input.value : Number(input.value);
    }
    this.editing = false;
    try {
      const { reply } = await this.connection.request({ set_parameters: body });
      this.show(reply.parameters);
    } catch (error) {
      // The refusal is in the error log (reply handler); nothing of the request took effect.
      this.show(this.inForce);
    }
  }
}
