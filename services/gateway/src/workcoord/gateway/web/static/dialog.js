// The confirmation dialog every decision goes through: it says what will happen, takes a
// reason or note when there is one, makes the call, and shows the API's message when the call
// is refused (the dialog stays open so the person can read it, change the text or give up).

import { h } from "./dom.js";

let dialog = null;

function build() {
  const title = h("h2", { id: "confirm-title" });
  const body = h("div", { id: "confirm-body" });
  const label = h("label", { for: "confirm-text" });
  const text = h("textarea", { id: "confirm-text", maxlength: "1024" });
  const field = h("div", {}, label, text);
  const error = h("p", { class: "error", role: "alert", hidden: true });
  const back = h("button", { type: "button", value: "cancel" }, "Go back");
  const go = h("button", { type: "submit", value: "ok" });
  const form = h(
    "form",
    { method: "dialog", novalidate: true },
    title,
    body,
    field,
    error,
    h("div", { class: "dialog-actions" }, back, go),
  );
  const element = h(
    "dialog",
    { class: "confirm", "aria-labelledby": "confirm-title", "aria-describedby": "confirm-body" },
    form,
  );
  document.body.append(element);
  return { element, form, title, body, label, text, field, error, back, go };
}

/**
 * Ask before acting. ``perform(text)`` makes the call and may throw an ApiError, whose message
 * is shown. Resolves to the call's result when it succeeded, to null when the person went back.
 *
 * options: title, body (nodes or text), confirmLabel, tone ("primary" | "danger"),
 * field: {label, required, hint} or null.
 */
export function confirmAction({ title, body, confirmLabel, tone = "primary", field, perform }) {
  dialog = dialog || build();
  const parts = dialog;
  parts.title.textContent = title;
  parts.body.replaceChildren(...[body].flat().filter(Boolean));
  parts.error.hidden = true;
  parts.error.textContent = "";
  parts.go.textContent = confirmLabel;
  parts.go.className = tone === "danger" ? "danger solid" : "primary";
  parts.go.disabled = false;
  parts.back.disabled = false;
  parts.text.value = "";
  parts.field.hidden = !field;
  parts.text.required = Boolean(field?.required);
  parts.label.textContent = field ? field.label + (field.required ? "" : " (optional)") : "";

  return new Promise((resolve) => {
    let busy = false;
    const finish = (value) => {
      parts.form.onsubmit = null;
      parts.back.onclick = null;
      parts.element.oncancel = null;
      if (parts.element.open) parts.element.close();
      resolve(value);
    };
    parts.back.onclick = () => finish(null);
    parts.element.oncancel = (event) => {
      if (busy) event.preventDefault();
      else finish(null);
    };
    parts.form.onsubmit = async (event) => {
      event.preventDefault();
      if (busy) return;
      const text = parts.text.value.trim();
      if (field?.required && !text) {
        parts.error.textContent = `${field.label} is required.`;
        parts.error.hidden = false;
        parts.text.focus();
        return;
      }
      busy = true;
      parts.go.disabled = true;
      parts.back.disabled = true;
      const label = parts.go.textContent;
      parts.go.textContent = "Working…";
      try {
        const result = await perform(text);
        finish(result ?? true);
      } catch (error) {
        parts.error.textContent = error.message || String(error);
        parts.error.hidden = false;
        parts.go.textContent = label;
        parts.go.disabled = false;
        parts.back.disabled = false;
        busy = false;
      }
    };
    parts.element.showModal();
    // Straight to the text only when it is required (on a phone focus opens the keyboard).
    (field?.required ? parts.text : parts.go).focus();
  });
}
