// /o/<slug>/work-coordinator: an org's work coordinators, one at a time, live. The address
// names the one shown and its lane filters (#c=<id>&q=…&state=…&next=…&mine=1).

import { listAll } from "./api.js";
import { mountCoordinator } from "./coordinator.js";
import { h } from "./dom.js";
import { filtersHash, initialFilters } from "./lanes.js";
import { mainElement, mayDecide, message, topbar, whoAmI } from "./layout.js";

const slug = decodeURIComponent(location.pathname.split("/")[2] || "");

function selectedFromHash() {
  const match = /(?:^#|&)c=([^&]+)/.exec(location.hash);
  return match ? decodeURIComponent(match[1]) : "";
}

async function main() {
  const me = await whoAmI();
  topbar(me, slug);
  document.title = `${slug} · workcoord`;
  let coordinators;
  try {
    coordinators = await listAll("/v1/work-coordinators", "workCoordinators", { orgSlug: slug });
  } catch (error) {
    message("No access", error.message, { href: "/", text: "Back to the start" });
    return;
  }
  coordinators = coordinators.filter((coordinator) => coordinator.orgSlug === slug);
  if (!coordinators.length) {
    message(
      "No work coordinator here",
      `The org “${slug}” has no work coordinator you can see. An org admin creates one with ` +
        "workcoord coordinators create.",
      { href: "/", text: "Back to the start" },
    );
    return;
  }
  const main = mainElement();
  const panel = h("div", { id: "panel" });
  const tabs = h("nav", { class: "tabs", "aria-label": "Work coordinators" });
  if (coordinators.length > 1) main.append(tabs);
  main.append(panel);

  let mounted = null;
  /** Show one coordinator; ``hash``: the address it was named in, whose filters it keeps. */
  function select(coordinatorId, hash = "") {
    const coordinator =
      coordinators.find((c) => c.coordinatorId === coordinatorId) || coordinators[0];
    const kept = coordinator.coordinatorId === coordinatorId ? hash : "";
    mounted?.close();
    const address = `#c=${encodeURIComponent(coordinator.coordinatorId)}${filtersHash(initialFilters(kept))}`;
    history.replaceState(null, "", address);
    tabs.replaceChildren(
      ...coordinators.map((c) =>
        h(
          "button",
          {
            type: "button",
            "aria-current": c === coordinator ? "true" : "false",
            onclick: () => select(c.coordinatorId),
          },
          c.displayName || c.coordinatorId,
        ),
      ),
    );
    mounted = mountCoordinator(panel, { coordinator, canDecide: mayDecide(me, coordinator), hash: kept });
  }
  select(selectedFromHash(), location.hash);
}

main().catch((error) => message("Something went wrong", error.message));
