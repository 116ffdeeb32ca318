// The REST API, same origin, with the browser session: the HttpOnly session cookie travels by
// itself; every state-changing call echoes the CSRF cookie in X-CSRF-Token (the coordinator
// refuses it otherwise). Errors carry the API's own message.

const CSRF_COOKIE = "workcoord_csrf";

/** A refused call: the HTTP status and the google.rpc.Status the API answered. */
export class ApiError extends Error {
  constructor(status, body) {
    const violations = [];
    for (const detail of body?.details || []) {
      for (const violation of detail.fieldViolations || []) {
        violations.push(`${violation.field}: ${violation.description}`);
      }
    }
    const base = body?.message || `the server answered ${status}`;
    super(violations.length ? `${base} (${violations.join("; ")})` : base);
    this.status = status;
    this.reason = (body?.details || []).find((d) => d.reason)?.reason || "";
  }
}

function csrfToken() {
  for (const part of document.cookie.split(";")) {
    const [name, ...rest] = part.trim().split("=");
    if (name === CSRF_COOKIE) return decodeURIComponent(rest.join("="));
  }
  return "";
}

/** Send the person to the sign-in page (their session ended or expired), and back here after. */
export function signInAgain() {
  const here = `${location.pathname}${location.search}${location.hash}`;
  const back = here === "/" ? "" : `&next=${encodeURIComponent(here)}`;
  location.assign(`/sign-in?error=signed-out${back}`);
}

/**
 * Call the API. ``params`` become the query string; ``body`` is sent as JSON (POST and PATCH
 * send ``{}`` when there is none). Resolves to the JSON answer; rejects with an ApiError.
 */
export async function api(path, { method = "GET", params, body } = {}) {
  const url = new URL(path, location.origin);
  for (const [key, value] of Object.entries(params || {})) {
    if (value !== undefined && value !== null && value !== "") url.searchParams.set(key, value);
  }
  const headers = { Accept: "application/json" };
  const init = { method, headers, credentials: "same-origin", cache: "no-store" };
  if (method !== "GET") {
    headers["Content-Type"] = "application/json";
    headers["X-CSRF-Token"] = csrfToken();
    init.body = JSON.stringify(body || {});
  }
  let response;
  try {
    response = await fetch(url, init);
  } catch {
    throw new ApiError(0, { message: "The service cannot be reached. Check your connection." });
  }
  const text = await response.text();
  let data = {};
  try {
    data = text ? JSON.parse(text) : {};
  } catch {
    data = { message: text.slice(0, 300) };
  }
  if (response.status === 401) signInAgain();
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

/** ``/v1/work-coordinators/{id}`` plus ``rest``, ids escaped. */
export function coordinatorPath(coordinatorId, ...rest) {
  const parts = ["/v1/work-coordinators", encodeURIComponent(coordinatorId)];
  for (const part of rest) parts.push(encodeURIComponent(part));
  return parts.join("/");
}

/** Every page of a list call, concatenated (``field`` names the repeated field). */
export async function listAll(path, field, params = {}, limit = 20) {
  const found = [];
  let pageToken = "";
  for (let page = 0; page < limit; page += 1) {
    const answer = await api(path, { params: { ...params, pageSize: 500, pageToken } });
    found.push(...(answer[field] || []));
    pageToken = answer.nextPageToken || "";
    if (!pageToken) break;
  }
  return found;
}
