// The JSON API client. Same origin, cookie session: the browser sends the
// HttpOnly session cookie itself, so no key is ever kept in JS memory after
// sign-in.

/** ApiError is a non-2xx answer, with the server's code, message and fields. */
export class ApiError extends Error {
  constructor(status, code, message, fields, fieldsTotal) {
    super(message || `request failed (${status})`);
    this.name = "ApiError";
    this.status = status;
    this.code = code || "";
    this.fields = Array.isArray(fields) ? fields : [];
    // The server lists at most 100 problems and counts them all here.
    this.fieldsTotal = Number.isFinite(fieldsTotal) ? fieldsTotal : this.fields.length;
  }
}

let onUnauthorized = () => {};

/** setUnauthorizedHandler registers what to do when a call returns 401. */
export function setUnauthorizedHandler(fn) {
  onUnauthorized = fn;
}

/** request calls the API and returns the parsed JSON body (or null). */
export async function request(method, path, body) {
  const init = {
    method,
    credentials: "same-origin",
    headers: { Accept: "application/json" },
    cache: "no-store",
  };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch {
    throw new ApiError(0, "network", "Cannot reach the server. Check your connection and try again.");
  }
  const text = await res.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!res.ok) {
    const e = (data && data.error) || {};
    const err = new ApiError(res.status, e.code, e.message || res.statusText, e.fields, e.fields_total);
    // A wrong key at sign-in is not a lost session.
    if (res.status === 401 && !(method === "POST" && path === "/v1/session")) onUnauthorized(err);
    throw err;
  }
  return data;
}

const enc = encodeURIComponent;

/** The calls the board makes, one function per route. */
export const api = {
  session: () => request("GET", "/v1/session"),
  signIn: (key) => request("POST", "/v1/session", { key }),
  signOut: () => request("DELETE", "/v1/session"),
  // filters: {q, status, from, since, until}; empty ones are left out.
  listGroups: (cursor, filters = {}) => {
    const p = new URLSearchParams({ limit: "50" });
    for (const [k, v] of Object.entries(filters)) if (v) p.set(k, v);
    if (cursor) p.set("cursor", cursor);
    return request("GET", `/v1/groups?${p}`);
  },
  group: (id) => request("GET", `/v1/groups/${enc(id)}`),
  createGroup: (body) => request("POST", "/v1/groups", body),
  events: (id, number) => request("GET", `/v1/groups/${enc(id)}/events?number=${enc(number)}`),
  cancel: (id) => request("POST", `/v1/groups/${enc(id)}/cancel`),
  resume: (id) => request("POST", `/v1/groups/${enc(id)}/resume`),
  nudge: (id) => request("POST", `/v1/groups/${enc(id)}/nudge`),
  retryFailed: (id) => request("POST", `/v1/groups/${enc(id)}/retry-failed`),
  resolve: (id, number, outcome) =>
    request("POST", `/v1/groups/${enc(id)}/recipients/${enc(number)}/resolve`, { outcome }),
  retry: (id, number) => request("POST", `/v1/groups/${enc(id)}/recipients/${enc(number)}/retry`),
  selectRecipient: (id, number) => request("POST", `/v1/groups/${enc(id)}/recipients/${enc(number)}/select`),
  releaseRecipient: (id, number) => request("POST", `/v1/groups/${enc(id)}/recipients/${enc(number)}/release`),
  nextWave: (id) => request("POST", `/v1/groups/${enc(id)}/next-wave`),
  csvURL: (id) => `/v1/reports/deliveries?group_id=${enc(id)}&format=csv`,
  // after: the journal sequence the page already shows, so the stream
  // does not replay the whole journal (a reconnect's Last-Event-ID wins).
  groupStreamURL: (id, after) => `/v1/groups/${enc(id)}/stream${after ? `?after=${enc(after)}` : ""}`,
  allStreamURL: () => "/v1/stream",
};
