// /o/<slug>/work-coordinator: an org's work coordinators, one at a time, live.

import { listAll } from "./api.js";
import { mountCoordinator } from "./coordinator.js";
import { h } from "./dom.js";
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
  function select(coordinatorId) {
    const coordinator =
      coordinators.find((c) => c.coordinatorId === coordinatorId) || coordinators[0];
    mounted?.close();
    history.replaceState(null, "", `#c=${encodeURIComponent(coordinator.coordinatorId)}`);
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
    mounted = mountCoordinator(panel, { coordinator, canDecide: mayDecide(me, coordinator) });
  }
  select(selectedFromHash());
}

main().catch((error) => message("Something went wrong", error.message));
