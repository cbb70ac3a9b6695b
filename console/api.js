// The console's one way to reach spaced (docs/console.md). Control routes go with the
// session cookie (HttpOnly: this script never sees it) and, when they may change
// something, the session's CSRF token in X-Space-CSRF. The data plane (terminal, files)
// goes with an attach token of the sandbox, opened through the control plane and kept in
// memory only. Nothing is written to localStorage, sessionStorage or cookies from here.

let csrf = null;

export function setCsrf(token) {
  csrf = token;
}

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function answer(r) {
  if (r.status === 204) return null;
  const text = await r.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!r.ok) {
    const e = body && body.error ? body.error : { code: 'http_' + r.status, message: r.statusText || text };
    throw new ApiError(r.status, e.code, e.message);
  }
  return body;
}

// A control-plane call. body: a value to send as JSON, or undefined.
export async function api(method, path, body) {
  const headers = {};
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && method !== 'HEAD' && csrf) headers['X-Space-CSRF'] = csrf;
  const r = await fetch(path, {
    method,
    headers,
    credentials: 'same-origin',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return answer(r);
}

// The data plane of one sandbox: an attach token, renewed by opening a new session when
// it is about to expire.
export class DataPlane {
  constructor(sandboxId) {
    this.sandboxId = sandboxId;
    this.token = null;
    this.expires = 0;
  }

  async auth() {
    if (!this.token || Date.now() > this.expires - 60000) {
      const s = await api('POST', `/v1/sandboxes/${this.sandboxId}/sessions`, {});
      this.token = s.attach_token;
      this.expires = Date.parse(s.expires_at);
    }
    return 'Bearer ' + this.token;
  }

  // fetch() on /v1/sandboxes/<id><rest> with the token; the Response, unread. A token that
  // was revoked or expired early (401) is replaced once: a new session, the same request.
  async raw(method, rest, init = {}) {
    for (let attempt = 0; ; attempt++) {
      const headers = Object.assign({}, init.headers || {}, { Authorization: await this.auth() });
      const r = await fetch(`/v1/sandboxes/${this.sandboxId}${rest}`, Object.assign({}, init, { method, headers, credentials: 'omit' }));
      if (r.status !== 401 || attempt > 0 || (init.body && typeof init.body !== 'string')) return r;
      this.token = null;
    }
  }

  async call(method, rest, body) {
    const init = body === undefined ? {} : { body: JSON.stringify(body), headers: { 'Content-Type': 'application/json' } };
    return answer(await this.raw(method, rest, init));
  }
}

export { answer };
