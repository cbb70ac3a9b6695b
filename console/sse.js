// Server-Sent Events read from a fetch() Response (so a token can go in a header, which
// EventSource cannot send). One parser for every stream the console reads: a command's
// events (terminal.js), a template build's log (templates_page.js).

// Calls onEvent({id, event, data}) for each event with data; resolves when the body ends
// with true if some onEvent returned true (the stream is over for good), else false.
export async function readEvents(response, onEvent) {
  const reader = response.body.getReader();
  const text = new TextDecoder();
  let over = false;
  let buf = '';
  let ev = { id: null, event: 'message', data: '' };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return over;
    buf += text.decode(value, { stream: true });
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).replace(/\r$/, '');
      buf = buf.slice(nl + 1);
      if (line === '') {
        if (ev.data) over = onEvent(ev) || over;
        ev = { id: null, event: 'message', data: '' };
      } else if (line.startsWith('id:')) ev.id = line.slice(3).trim();
      else if (line.startsWith('event:')) ev.event = line.slice(6).trim();
      else if (line.startsWith('data:')) ev.data += line.slice(5).trim();
    }
  }
}

// The bytes of an output event's base64 data.
export function bytesOf(b64) {
  const s = atob(b64);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}
