// Following a work coordinator's feed: the WebSocket at …/ws?since=<revision>.
//
// The page says which revision it has rendered (``since()``); the feed resumes from it on every
// (re)connection, so nothing between a lost connection and the next one is missed: the server
// sends the deltas since then, or a resync and a snapshot when it cannot. A socket that has
// said nothing for well over the ping interval is presumed dead and replaced.

const FIRST_RETRY_MS = 500;
const LAST_RETRY_MS = 15000;

/**
 * Follow ``coordinatorId``. ``onFrame(frame)`` gets every snapshot, delta, resync and ping;
 * ``onStatus(state, detail)`` gets "connecting", "live", "reconnecting" or "refused".
 * Returns ``{close(), reconnect()}``.
 */
export function follow(coordinatorId, { since, onFrame, onStatus }) {
  let socket = null;
  let closed = false;
  let failures = 0;
  let retryTimer = null;
  let staleTimer = null;
  let pingSeconds = 15;

  function url() {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const path = `/v1/work-coordinators/${encodeURIComponent(coordinatorId)}/ws`;
    const revision = since();
    const query = revision === null || revision === undefined ? "" : `?since=${revision}`;
    return `${scheme}//${location.host}${path}${query}`;
  }

  function connect() {
    clearTimeout(retryTimer);
    retryTimer = null;
    if (closed || socket) return;
    onStatus(failures ? "reconnecting" : "connecting");
    const current = new WebSocket(url());
    socket = current;
    current.onmessage = (event) => {
      if (socket !== current) return;
      let frame;
      try {
        frame = JSON.parse(event.data);
      } catch {
        return;
      }
      armStaleness();
      if (frame.type === "hello") {
        failures = 0;
        pingSeconds = Number(frame.pingSeconds) || pingSeconds;
        onStatus("live");
        return;
      }
      onFrame(frame);
    };
    current.onclose = (event) => {
      if (socket !== current) return;
      socket = null;
      clearTimeout(staleTimer);
      if (closed) return;
      failures += 1;
      onStatus(event.code === 1008 ? "refused" : "reconnecting", event.reason || "");
      scheduleRetry();
    };
  }

  function scheduleRetry() {
    if (retryTimer || closed) return;
    const base = Math.min(LAST_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.max(0, failures - 1));
    const delay = base / 2 + Math.random() * (base / 2);
    retryTimer = setTimeout(connect, delay);
  }

  function armStaleness() {
    clearTimeout(staleTimer);
    staleTimer = setTimeout(() => {
      if (socket) socket.close(4000, "stale");
    }, pingSeconds * 2500);
  }

  function reconnectNow() {
    if (closed) return;
    if (socket) return;
    failures = Math.max(failures, 1);
    connect();
  }

  const wake = () => {
    if (document.visibilityState === "visible") reconnectNow();
  };
  window.addEventListener("online", reconnectNow);
  document.addEventListener("visibilitychange", wake);
  connect();

  return {
    close() {
      closed = true;
      clearTimeout(retryTimer);
      clearTimeout(staleTimer);
      window.removeEventListener("online", reconnectNow);
      document.removeEventListener("visibilitychange", wake);
      if (socket) socket.close(1000, "page closed");
      socket = null;
    },
    reconnect: reconnectNow,
  };
}
