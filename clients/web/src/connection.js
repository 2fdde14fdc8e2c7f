// The viewer's WebSocket to the server: requests with one reply each (promises), images and
// events as DOM events, and a connection that is re-established after it is lost.
import { decodeImageMessage } from './frames.js';

const RETRY_MIN_MS = 500;
const RETRY_MAX_MS = 5000;

export class ServerError extends Error {
  constructor(reply) {
    super(reply.message || reply.code);
    this.code = reply.code;
    this.reason = reply.reason;
    this.reply = reply;
  }
}

// Events: 'state' {state: 'connecting'|'open'|'lost', detail}, 'hello', 'image' {header, values},
// 'event' (a server Event), 'notice' {message}, 'reply' (every reply, errors included).
export class Connection extends EventTarget {
  constructor(url) {
    super();
    this.url = url;
    this.state = 'connecting';
    this.pending = new Map();
    this.nextId = 1;
    this.retryMs = RETRY_MIN_MS;
    this.lostSince = null;
    this.connect();
  }

  connect() {
    this.setState('connecting');
    const socket = new WebSocket(this.url);
    socket.binaryType = 'arraybuffer';
    this.socket = socket;
    socket.onopen = () => {
      this.retryMs = RETRY_MIN_MS;
      this.lostSince = null;
      this.setState('open');
    };
    socket.onmessage = (message) => this.receive(message.data);
    socket.onclose = (close) => {
      if (this.socket !== socket) return;
      this.failPending('the connection to the server was lost');
      if (this.lostSince === null) this.lostSince = Date.now();
      const why = close.reason ? `${close.reason} (code ${close.code})` : `code ${close.code}`;
      this.setState('lost', { reason: why, retryMs: this.retryMs, since: this.lostSince });
      setTimeout(() => this.connect(), this.retryMs);
      this.retryMs = Math.min(RETRY_MAX_MS, this.retryMs * 2);
    };
  }

  setState(state, detail = {}) {
    this.state = state;
    this.dispatchEvent(new CustomEvent('state', { detail: { state, ...detail } }));
  }

  receive(data) {
    if (typeof data === 'string') {
      const message = JSON.parse(data);
      if (message.type === 'reply') this.settle(message.reply, null);
      else this.dispatchEvent(new CustomEvent(message.type, { detail: message }));
      return;
    }
    const image = decodeImageMessage(data);
    if (image.header.type === 'reply') this.settle(image.header.reply, image.values);
    else this.dispatchEvent(new CustomEvent('image', { detail: image }));
  }

  settle(reply, values) {
    this.dispatchEvent(new CustomEvent('reply', { detail: reply }));
    const entry = this.pending.get(reply.request_id);
    if (!entry) return;
    this.pending.delete(reply.request_id);
    if (reply.code === 'STATUS_CODE_OK') entry.resolve({ reply, values });
    else entry.reject(new ServerError(reply));
  }

  failPending(why) {
    for (const entry of this.pending.values()) {
      entry.reject(new ServerError({ code: 'STATUS_CODE_UNAVAILABLE', reason: 'connection_lost', message: why }));
    }
    this.pending.clear();
  }

  // Sends one slicestream.v1.Request body, e.g. {get_status: {}}; resolves with {reply, values}
  // or rejects with a ServerError carrying the server's code, reason and message.
  // The socket is asked rather than this.state: between the server's close frame and the
  // 'close' event the socket is CLOSING while the state still says open, and a send then is lost.
  request(body) {
    if (!this.canSend()) {
      return Promise.reject(new ServerError({
        code: 'STATUS_CODE_UNAVAILABLE', reason: 'not_connected', message: 'not connected to the server',
      }));
    }
    const id = String(this.nextId++);
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.socket.send(JSON.stringify({ protocol_version: 1, request_id: id, ...body }));
    });
  }

  // A message that is not a valid request (the viewer's "send raw request" box, tests).
  sendRaw(text) {
    if (this.canSend()) this.socket.send(text);
  }

  canSend() {
    return this.state === 'open' && this.socket.readyState === WebSocket.OPEN;
  }
}
