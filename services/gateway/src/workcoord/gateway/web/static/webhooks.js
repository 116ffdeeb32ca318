// The work coordinator's webhooks (org admins and platform admins only: the API refuses anyone
// else, and then the card stays hidden). Each webhook with its URL, format, event types,
// whether it is enabled, since when it fails and how its last delivery went; adding one (the
// signing secret is shown once, right after, and never again), enabling or disabling it,
// deleting it, its deliveries and Redeliver. Every change goes through the confirmation dialog
// as one API call with the session's CSRF token (api.js), and a refusal shows the API's message.
//
// The card is built once per coordinator shown and kept in place (the coordinator's live
// renders never rebuild it), so what someone types in the form survives live updates. It is
// read again with the coordinator (after each change the feed reports) and, while a delivery
// it shows is on its way (PENDING, or FAILED with a retry due soon), a few seconds later: a
// delivery's progress is not an event of the feed.

import { api, coordinatorPath } from "./api.js";
import { confirmAction } from "./dialog.js";
import { badge, coalesced, fill, h, when } from "./dom.js";

const GROUPS = [
  ["HUMAN_NEEDED", "Human needed (everything that waits on a person: approvals, stops, dead letters…)"],
  ["LANE_OUTCOMES", "Lane outcomes (live, done, closed out, cancelled)"],
];
const DELIVERY_TONE = { SUCCEEDED: "SUCCEEDED", PENDING: "neutral", FAILED: "warn", DEAD: "bad" };
const DELIVERIES_SHOWN = 20;
// While something is on its way the card reads again this often (and no more).
const FOLLOW_UP_MS = 3000;
const SOON_MS = 60 * 1000;

/** The webhooks card of ``cid``: ``{element, refresh(), close()}``. */
export function mountWebhooks(cid) {
  const ids = `webhooks-${cid}`;
  const state = {
    webhooks: null, // null: not read yet, or not the reader's to see
    error: "",
    last: new Map(), // webhookId → its newest delivery
    open: new Map(), // webhookId → its deliveries (shown), or {error}
    secret: null, // {webhookId, url, secret} right after a create, until dismissed
    adding: false,
  };
  let closed = false;
  let followUp = null;

  const listSlot = h("div", { class: "stack" });
  const secretSlot = h("div");
  const form = buildForm();
  const addButton = h(
    "button",
    {
      type: "button",
      class: "primary",
      "aria-expanded": "false",
      "aria-controls": `${ids}-form`,
      dataset: { key: `${ids}-add` },
      onclick: () => toggleForm(!state.adding),
    },
    "Add a webhook",
  );
  const element = h(
    "section",
    { class: "card", id: ids, "aria-labelledby": `${ids}-title`, hidden: true },
    h("div", { class: "section-head" }, h("h3", { id: `${ids}-title` }, "Webhooks"), addButton),
    secretSlot,
    form.element,
    listSlot,
  );

  // ------------------------------------------------------------------ reading

  async function read() {
    try {
      const answer = await api(coordinatorPath(cid, "webhooks"));
      state.webhooks = answer.webhooks || [];
      state.error = "";
    } catch (error) {
      state.webhooks = null;
      state.error = error.status === 403 ? "" : error.message;
      return;
    }
    const known = new Set(state.webhooks.map((webhook) => webhook.webhookId));
    for (const id of [...state.open.keys()]) if (!known.has(id)) state.open.delete(id);
    await Promise.all(
      state.webhooks.map(async (webhook) => {
        const id = webhook.webhookId;
        const shown = state.open.has(id);
        try {
          const answer = await api(coordinatorPath(cid, "webhooks", id, "deliveries"), {
            params: { pageSize: shown ? DELIVERIES_SHOWN : 1 },
          });
          const deliveries = answer.deliveries || [];
          state.last.set(id, deliveries[0] || null);
          if (shown) state.open.set(id, { deliveries });
        } catch (error) {
          state.last.delete(id);
          if (shown) state.open.set(id, { error: error.message });
        }
      }),
    );
  }

  /** Read the webhooks again (one read at a time; a request meanwhile makes one more). */
  const refresh = coalesced(
    read,
    () => {
      render();
      scheduleFollowUp();
    },
    () => closed,
  );

  function onItsWay(delivery) {
    if (!delivery) return false;
    if (delivery.state === "PENDING") return true;
    if (delivery.state !== "FAILED" || !delivery.nextAttemptTime) return false;
    return Date.parse(delivery.nextAttemptTime) - Date.now() < SOON_MS;
  }

  function scheduleFollowUp() {
    clearTimeout(followUp);
    followUp = null;
    if (closed || !state.webhooks) return;
    const shown = [...state.last.values(), ...[...state.open.values()].flatMap((o) => o.deliveries || [])];
    if (shown.some(onItsWay)) followUp = setTimeout(refresh, FOLLOW_UP_MS);
  }

  // ------------------------------------------------------------------ the form

  function buildForm() {
    const url = h("input", {
      id: `${ids}-url`,
      type: "url",
      required: true,
      maxlength: "2048",
      placeholder: "the receiver's https URL",
      autocomplete: "off",
      dataset: { key: `${ids}-url` },
    });
    const groups = GROUPS.map(([name, text]) => {
      const box = h("input", { type: "checkbox", id: `${ids}-group-${name}`, value: name, checked: name === "HUMAN_NEEDED" });
      return { name, box, row: h("div", { class: "check" }, box, h("label", { for: box.id }, text)) };
    });
    const others = h("input", {
      id: `${ids}-others`,
      type: "text",
      maxlength: "1000",
      placeholder: "LANE_CREATED ITEM_COMPLETED",
      autocomplete: "off",
    });
    const format = h(
      "select",
      { id: `${ids}-format` },
      h("option", { value: "STANDARD" }, "Standard Webhooks (signed JSON)"),
      h("option", { value: "SLACK" }, "Slack incoming webhook"),
    );
    const submit = h("button", { type: "submit", class: "primary" }, "Add…");
    const cancel = h("button", { type: "button", onclick: () => toggleForm(false) }, "Cancel");
    const element = h(
      "form",
      { id: `${ids}-form`, class: "webhook-form", hidden: true, novalidate: true, onsubmit: (event) => create(event) },
      h("label", { for: url.id }, "Receiver URL"),
      url,
      h("p", { class: "hint" }, "https to a public address (or a host the operator allows)."),
      h("fieldset", {}, h("legend", {}, "Events"), groups.map((group) => group.row)),
      h("label", { for: others.id }, "Other event types (optional)"),
      others,
      h("p", { class: "hint" }, "Event type names, separated by spaces or commas."),
      h("label", { for: format.id }, "Format"),
      format,
      h("div", { class: "actions" }, submit, cancel),
    );
    return { element, url, groups, others, format };
  }

  function toggleForm(show) {
    state.adding = show;
    form.element.hidden = !show;
    addButton.setAttribute("aria-expanded", String(show));
    if (show) form.url.focus();
    else addButton.focus();
  }

  function eventTypes() {
    const chosen = form.groups.filter((group) => group.box.checked).map((group) => group.name);
    const typed = form.others.value.split(/[\s,]+/).map((name) => name.trim().toUpperCase()).filter(Boolean);
    return [...new Set([...chosen, ...typed])];
  }

  async function create(event) {
    event.preventDefault();
    const body = { url: form.url.value.trim(), eventTypes: eventTypes(), format: form.format.value, enabled: true };
    const created = await confirmAction({
      title: "Add this webhook?",
      body: [
        h("p", {}, "Events will be posted, signed, to ", h("span", { class: "mono break" }, body.url || "(no URL)"), "."),
        h("p", {}, `Events: ${body.eventTypes.join(", ") || "(none)"} · format ${body.format}`),
        h("p", { class: "hint" }, "The signing secret is shown once, right after."),
      ],
      confirmLabel: "Add webhook",
      field: null,
      perform: () => api(coordinatorPath(cid, "webhooks"), { method: "POST", body }),
    });
    if (!created?.webhook) return;
    const { webhookId, url, secret } = created.webhook;
    state.secret = { webhookId, url, secret };
    form.element.reset();
    form.groups[0].box.checked = true;
    state.adding = false;
    form.element.hidden = true;
    addButton.setAttribute("aria-expanded", "false");
    renderSecret();
    secretSlot.querySelector("[data-secret]")?.focus();
    refresh();
  }

  // ------------------------------------------------------------------ rendering

  function renderSecret() {
    const shown = state.secret;
    if (!shown) {
      fill(secretSlot);
      return;
    }
    const value = h("code", { class: "secret break", "data-secret": "", tabindex: "0" }, shown.secret);
    const copy = h(
      "button",
      {
        type: "button",
        onclick: async () => {
          try {
            await navigator.clipboard.writeText(shown.secret);
            copy.textContent = "Copied";
          } catch {
            copy.textContent = "Select it and copy";
          }
        },
      },
      "Copy",
    );
    const done = h(
      "button",
      {
        type: "button",
        class: "primary",
        onclick: () => {
          state.secret = null;
          renderSecret();
          addButton.focus();
        },
      },
      "I have saved it",
    );
    fill(
      secretSlot,
      h(
        "div",
        { class: "banner secret-box", role: "status", "aria-live": "polite" },
        h("p", {}, h("strong", {}, "Signing secret of the new webhook"), " — shown this once; keep it where the receiver can read it."),
        value,
        h("div", { class: "actions" }, copy, done),
      ),
    );
  }

  function render() {
    if (closed) return;
    element.hidden = state.webhooks === null && !state.error;
    const focusKey = element.contains(document.activeElement) ? document.activeElement.dataset?.key || null : null;
    let body;
    if (state.error) body = h("p", { role: "alert" }, state.error);
    else if (!state.webhooks?.length) body = h("p", { class: "empty" }, "No webhook: nothing is posted anywhere.");
    else body = h("ul", { class: "list" }, state.webhooks.map(renderWebhook));
    fill(listSlot, body);
    if (focusKey) element.querySelector(`[data-key="${CSS.escape(focusKey)}"]`)?.focus();
  }

  function lastDelivery(webhook) {
    const delivery = state.last.get(webhook.webhookId);
    if (!delivery) return h("p", { class: "small muted" }, "Nothing delivered yet.");
    return h(
      "p",
      { class: "small" },
      "Last delivery: ",
      badge(DELIVERY_TONE[delivery.state] || "neutral", delivery.state),
      ` ${delivery.eventType || ""} · attempt ${delivery.attempt || 0}`,
      delivery.responseCode ? ` · HTTP ${delivery.responseCode}` : "",
      " · ",
      when(delivery.updateTime || delivery.createTime),
    );
  }

  function renderWebhook(webhook) {
    const id = webhook.webhookId;
    const enabled = webhook.enabled !== false;
    const open = state.open.has(id);
    return h(
      "li",
      { dataset: { webhook: id } },
      h(
        "div",
        { class: "row" },
        badge(enabled ? "SUCCEEDED" : "bad", enabled ? "enabled" : "disabled"),
        badge("neutral", (webhook.format || "STANDARD").toLowerCase()),
        h("span", { class: "muted small" }, id),
      ),
      h("p", { class: "mono small break" }, webhook.url),
      h("p", { class: "small" }, (webhook.eventTypes || []).join(", ")),
      webhook.failingSince ? h("p", { class: "small" }, badge("bad", "failing"), " since ", when(webhook.failingSince)) : null,
      lastDelivery(webhook),
      h(
        "div",
        { class: "actions" },
        h(
          "button",
          {
            type: "button",
            "aria-expanded": String(open),
            dataset: { key: `deliveries-${id}` },
            onclick: () => toggleDeliveries(id),
          },
          open ? "Hide deliveries" : "Deliveries",
        ),
        h(
          "button",
          { type: "button", dataset: { key: `switch-${id}` }, onclick: () => setEnabled(webhook, !enabled) },
          enabled ? "Disable…" : "Enable…",
        ),
        h("button", { type: "button", class: "danger", dataset: { key: `delete-${id}` }, onclick: () => remove(webhook) }, "Delete…"),
      ),
      open ? renderDeliveries(webhook, state.open.get(id)) : null,
    );
  }

  function renderDeliveries(webhook, shown) {
    if (shown.error) return h("p", { role: "alert" }, shown.error);
    if (!shown.deliveries) return h("p", { class: "small muted" }, "Loading…");
    if (!shown.deliveries.length) return h("p", { class: "small muted" }, "No delivery yet.");
    return h(
      "ul",
      { class: "list deliveries", "aria-label": `Deliveries of ${webhook.url}` },
      shown.deliveries.map((delivery) =>
        h(
          "li",
          { dataset: { delivery: delivery.deliveryId, state: delivery.state } },
          h(
            "div",
            { class: "row" },
            badge(DELIVERY_TONE[delivery.state] || "neutral", delivery.state),
            h("span", { class: "small" }, delivery.eventType || ""),
            h("span", { class: "mono small" }, delivery.eventId),
          ),
          h(
            "p",
            { class: "small" },
            `attempt ${delivery.attempt || 0}`,
            delivery.responseCode ? ` · HTTP ${delivery.responseCode}` : "",
            delivery.nextAttemptTime && delivery.state !== "SUCCEEDED" ? [" · next try ", when(delivery.nextAttemptTime)] : "",
          ),
          delivery.error ? h("p", { class: "small" }, delivery.error) : null,
          delivery.state === "PENDING"
            ? null
            : h(
                "div",
                { class: "actions" },
                h(
                  "button",
                  { type: "button", dataset: { key: `redeliver-${delivery.deliveryId}` }, onclick: () => redeliver(webhook, delivery) },
                  "Redeliver…",
                ),
              ),
        ),
      ),
    );
  }

  // ------------------------------------------------------------------ decisions

  async function toggleDeliveries(id) {
    if (state.open.has(id)) state.open.delete(id);
    else state.open.set(id, {});
    render();
    if (state.open.has(id)) await refresh();
  }

  async function setEnabled(webhook, enabled) {
    const done = await confirmAction({
      title: enabled ? "Enable this webhook?" : "Disable this webhook?",
      body: h(
        "p",
        {},
        enabled
          ? "Events from now on are posted to it again (its failing mark is cleared)."
          : "Nothing more is posted to it until it is enabled again; what is queued stays queued.",
      ),
      confirmLabel: enabled ? "Enable" : "Disable",
      tone: enabled ? "primary" : "danger",
      field: null,
      perform: () =>
        api(coordinatorPath(cid, "webhooks", webhook.webhookId), {
          method: "PATCH",
          params: { updateMask: "enabled" },
          body: { enabled },
        }),
    });
    if (done) refresh();
  }

  async function remove(webhook) {
    const done = await confirmAction({
      title: "Delete this webhook?",
      body: [
        h("p", {}, "Nothing more is posted to ", h("span", { class: "mono break" }, webhook.url), "."),
        h("p", {}, "Its deliveries are deleted with it. This cannot be undone."),
      ],
      confirmLabel: "Delete webhook",
      tone: "danger",
      field: null,
      perform: () => api(coordinatorPath(cid, "webhooks", webhook.webhookId), { method: "DELETE" }),
    });
    if (!done) return;
    if (state.secret?.webhookId === webhook.webhookId) {
      state.secret = null;
      renderSecret();
    }
    addButton.focus();
    refresh();
  }

  async function redeliver(webhook, delivery) {
    const done = await confirmAction({
      title: "Deliver this event again?",
      body: h(
        "p",
        {},
        `${delivery.eventType || "The event"} (${delivery.eventId}) is posted again to `,
        h("span", { class: "mono break" }, webhook.url),
        " with the same webhook-id, so a receiver that has it can tell.",
      ),
      confirmLabel: "Redeliver",
      field: null,
      perform: () =>
        api(coordinatorPath(cid, "webhooks", webhook.webhookId, "deliveries", delivery.deliveryId, "redeliver"), {
          method: "POST",
        }),
    });
    if (done) refresh();
  }

  return {
    element,
    refresh,
    close() {
      closed = true;
      clearTimeout(followUp);
    },
  };
}
