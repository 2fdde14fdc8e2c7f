// Every error the server reports (refused requests, error and warning events, notices) and the
// viewer's own, newest first; repeats are counted instead of listed again.
import { element } from './html.js';

const MAX_ENTRIES = 100;

export class ErrorLog {
  constructor(container) {
    this.list = element('ol', 'error-list');
    this.empty = element('p', 'muted', 'No errors.');
    container.append(element('h2', '', 'Errors and warnings'), this.empty, this.list);
    this.items = [];
  }

  add(source, code, reason, message) {
    const key = `${source}|${code}|${reason}|${message}`;
    const existing = this.items.find((i) => i.key === key);
    if (existing) {
      existing.count++;
      existing.time = new Date();
      existing.countNode.textContent = ` ×${existing.count}`;
      this.list.prepend(existing.node);
      return;
    }
    const node = element('li', source.includes('warning') || source === 'notice' ? 'warning' : 'error');
    const time = new Date();
    node.append(
      element('time', '', time.toLocaleTimeString()),
      element('span', 'source', ` ${source}`),
      element('span', 'code', code ? ` ${code.replace('STATUS_CODE_', '')}` : ''),
      element('span', 'reason', reason ? ` [${reason}]` : ''),
      element('span', 'message', `: ${message}`),
    );
    const countNode = element('span', 'count', '');
    node.append(countNode);
    this.items.unshift({ key, node, countNode, count: 1, time, source, code, reason, message });
    this.list.prepend(node);
    this.empty.hidden = true;
    while (this.items.length > MAX_ENTRIES) this.items.pop().node.remove();
  }

  entries() {
    return this.items.map(({ source, code, reason, message, count }) => ({ source, code, reason, message, count }));
  }
}
