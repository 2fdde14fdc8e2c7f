// The viewer's connection (clients/web/src/connection.js) over a scripted socket: requests are
// sent only on an open socket, replies settle them, and a lost connection fails what is pending.
import assert from 'node:assert/strict';
import { test } from 'node:test';

// The browser's WebSocket as far as Connection uses it; the test plays the server's side.
class ScriptedSocket {
  static CONNECTING = 0;
  static OPEN = 1;
  static CLOSING = 2;
  static CLOSED = 3;
  static made = [];

  constructor(url) {
    this.url = url;
    this.readyState = ScriptedSocket.CONNECTING;
    this.sent = [];
    ScriptedSocket.made.push(this);
  }

  send(text) {
    if (this.readyState !== ScriptedSocket.OPEN) throw new Error('send on a socket that is not open');
    this.sent.push(JSON.parse(text));
  }

  open() {
    this.readyState = ScriptedSocket.OPEN;
    this.onopen();
  }

  reply(requestId, code = 'STATUS_CODE_OK') {
    this.onmessage({ data: JSON.stringify({ type: 'reply', reply: { request_id: requestId, code } }) });
  }

  // The server's close frame has arrived; the 'close' event comes later.
  closing() {
    this.readyState = ScriptedSocket.CLOSING;
  }

  closed(code = 1006) {
    this.readyState = ScriptedSocket.CLOSED;
    this.onclose({ code, reason: '' });
  }
}
globalThis.WebSocket = ScriptedSocket;
const { Connection } = await import('../../clients/web/src/connection.js');

const newConnection = () => {
  ScriptedSocket.made = [];
  const connection = new Connection('ws://viewer.test/ws');
  const socket = ScriptedSocket.made[0];
  socket.open();
  return { connection, socket };
};

test('a request is sent with an id and settled by the reply carrying that id', async () => {
  const { connection, socket } = newConnection();
  const first = connection.request({ get_status: {} });
  const second = connection.request({ get_status: {} });
  assert.equal(socket.sent.length, 2);
  assert.notEqual(socket.sent[0].request_id, socket.sent[1].request_id);
  assert.equal(socket.sent[0].protocol_version, 1);
  socket.reply(socket.sent[1].request_id, 'STATUS_CODE_INVALID_ARGUMENT');
  socket.reply(socket.sent[0].request_id);
  assert.equal((await first).reply.code, 'STATUS_CODE_OK');
  await assert.rejects(second, (error) => error.code === 'STATUS_CODE_INVALID_ARGUMENT');
});

test('a request while the socket is closing is refused at once and nothing is sent', async () => {
  const { connection, socket } = newConnection();
  socket.closing();
  assert.equal(connection.state, 'open', 'the close event has not come yet');
  await assert.rejects(connection.request({ get_status: {} }), (error) => error.reason === 'not_connected');
  connection.sendRaw('{"not": "a request"}');
  assert.equal(socket.sent.length, 0);
});

test('losing the connection fails the pending requests and connects again', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const { connection, socket } = newConnection();
  const states = [];
  connection.addEventListener('state', (event) => states.push(event.detail.state));
  const pending = connection.request({ get_status: {} });
  socket.closing();
  socket.closed();
  await assert.rejects(pending, (error) => error.reason === 'connection_lost');
  assert.deepEqual(states, ['lost']);
  t.mock.timers.tick(500);
  assert.equal(ScriptedSocket.made.length, 2, 'a new socket after the first retry interval');
  ScriptedSocket.made[1].open();
  assert.deepEqual(states, ['lost', 'connecting', 'open']);
  connection.request({ get_status: {} });
  assert.equal(ScriptedSocket.made[1].sent.length, 1);
});
