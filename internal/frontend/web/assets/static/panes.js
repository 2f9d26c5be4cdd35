// Console page: the panes `overseer watch tmux` watches (see
// docs/integrations/tmux-watch.md). Registered as an extra page; uses the
// helpers of app.js (h, $, api, toast, dur), which is loaded after it.
"use strict";

window.extraPages = window.extraPages || {};
window.extraPages.panes = loadPanes;

const PANES_POLL_MS = 2000;
const paneStates = { "working": "ok", "judging": "", "waiting": "warn", "answered": "ok", "left for a person": "warn", "alert": "bad" };

async function loadPanes() {
  let d;
  try { d = await api("GET", "/ui/api/watch/panes"); } catch (e) { toast(e.message, true); return; }
  const sets = d.watchers || [];
  if (!sets.length) {
    $("#panes-list").replaceChildren(h("p", { class: "hint", id: "panes-none", text: "No watcher is running. Start one where your agents' tmux server runs: overseer watch tmux" }));
    return;
  }
  $("#panes-list").replaceChildren(...sets.map((s) => h("div", { class: "card" },
    h("h3", {}, h("span", { text: `watcher pid ${s.pid}` }), h("span", { class: "hint", text: ` · ${s.server || "default tmux server"} · ${s.panes.length} panes` })),
    h("table", { class: "panes" },
      h("thead", {}, h("tr", {}, ...["Pane", "Agent", "State", "Last prompt", "Since"].map((t) => h("th", { text: t })))),
      h("tbody", {}, ...s.panes.map((p) => h("tr", { dataset: { pane: p.id } },
        h("td", {}, h("code", { text: p.id }), " ", h("span", { class: "hint", text: p.target })),
        h("td", { text: p.agent || "–" }),
        h("td", {}, h("span", { class: `badge ${paneStates[p.state] || ""}`, text: p.state }), p.reason ? h("div", { class: "hint", text: p.reason }) : null,
          paneRequestLink(p)),
        h("td", {}, p.prompt ? h("div", { text: p.prompt }) : "–", p.args ? h("code", { text: p.args }) : null, p.answer ? h("div", { class: "hint", text: "answered " + p.answer }) : null),
        h("td", { class: "hint", text: dur(Date.now() - new Date(p.since).getTime()) }),
      )))))));
}
// A pane waiting for a person: its request is an ordinary approval in the
// queue, found by the action the watcher submitted (the id the daemon gave
// it: a request someone else made in the pane's session is not it),
// answered there.
function paneRequestLink(p) {
  if (p.state !== "waiting" || !p.action_id) return null;
  for (const [id, it] of items) {
    if (it.apr.action_id === p.action_id) {
      return h("a", { class: "pane-request", href: `#/queue/${encodeURIComponent(id)}`, text: "Answer the request →" });
    }
  }
  return null;
}
setInterval(() => { if (current === "panes" && !document.hidden) loadPanes(); }, PANES_POLL_MS);
