// /: for a signed-in person who belongs to several orgs (or none yet), the places they can go.

import { h } from "./dom.js";
import { mainElement, message, topbar, whoAmI } from "./layout.js";

async function main() {
  const me = await whoAmI();
  topbar(me, "");
  const orgs = [...new Set((me.memberships || []).map((member) => member.orgSlug))].sort();
  if (!orgs.length && !me.platformAdmin) {
    message(
      "Nothing to show yet",
      "You are signed in, but no org has made you a member yet. Ask an org admin to add you.",
    );
    return;
  }
  const roles = new Map((me.memberships || []).map((member) => [member.orgSlug, member.role]));
  mainElement().append(
    h(
      "div",
      { class: "card narrow stack" },
      h("h1", {}, "Where to?"),
      h(
        "ul",
        { class: "stack" },
        me.platformAdmin
          ? h("li", {}, h("a", { class: "button wide", href: "/admin/work-coordinator" }, "Platform admin"))
          : null,
        orgs.map((slug) =>
          h(
            "li",
            {},
            h(
              "a",
              { class: "button wide", href: `/o/${encodeURIComponent(slug)}/work-coordinator` },
              `${slug} — ${roles.get(slug) === "ORG_ADMIN" ? "admin" : "viewer"}`,
            ),
          ),
        ),
      ),
    ),
  );
}

main().catch((error) => message("Something went wrong", error.message));
