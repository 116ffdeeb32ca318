// What every signed-in page shares: who is signed in, the top bar, signing out.

import { api } from "./api.js";
import { fill, h } from "./dom.js";

/** The signed-in principal (``/v1/me``); an anonymous visitor is sent to sign in. */
export function whoAmI() {
  return api("/v1/me");
}

/** Whether ``me`` may make the human decisions on ``coordinator``. */
export function mayDecide(me, coordinator) {
  if (me.platformAdmin) return true;
  if (coordinator.scope !== "ORG") return false;
  return (me.memberships || []).some(
    (member) => member.orgSlug === coordinator.orgSlug && member.role === "ORG_ADMIN",
  );
}

async function signOut(button) {
  button.disabled = true;
  try {
    await api("/v1/sessions/current/end", { method: "POST" });
  } catch {
    // Already ended or expired: signing in again is what is left either way.
  }
  location.assign("/sign-in?error=signed-out");
}

/** Fill the top bar: brand, page context, the person, sign out. */
export function topbar(me, context) {
  const bar = document.getElementById("topbar");
  const out = h("button", { type: "button", class: "button", onclick: () => signOut(out) }, "Sign out");
  fill(
    bar,
    h("a", { class: "brand", href: "/" }, h("img", { src: "/ui/icon.svg", alt: "", width: "24", height: "24" }), "workcoord"),
    context ? h("span", { class: "context" }, context) : null,
    h("span", { class: "spacer" }),
    me ? h("span", { class: "who" }, me.displayName || me.name) : null,
    me ? out : null,
  );
}

/** Replace the page's content with a message (and an optional link). */
export function message(title, text, link) {
  const main = document.getElementById("main");
  fill(
    main,
    h(
      "div",
      { class: "card narrow" },
      h("h1", {}, title),
      h("p", {}, text),
      link ? h("p", { class: "actions" }, h("a", { class: "button primary", href: link.href }, link.text)) : null,
    ),
  );
}

/** The page's main element, emptied. */
export function mainElement() {
  return fill(document.getElementById("main"));
}
