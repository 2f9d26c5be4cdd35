// Overseer console: the Delegation page (grants, conflicts, MCP upstream
// health). Loaded before app.js, whose helpers (h, api, toast, $, fmtTime,
// levelBadge) it uses once the page is shown.
"use strict";

window.extraPages = window.extraPages || {};
window.extraPages.delegation = loadDelegation;

let delegationWired = false;

function splitList(s) {
  return (s || "").split(",").map((x) => x.trim()).filter((x) => x !== "");
}

function permitText(p) {
  const parts = [];
  if (p.tools && p.tools.length) parts.push(p.tools.join(","));
  if (p.kinds && p.kinds.length) parts.push(p.kinds.join(","));
  if (p.read_only) parts.push("read-only");
  if (p.under && p.under.length) parts.push("under " + p.under.join(", "));
  if (p.hosts && p.hosts.length) parts.push("hosts " + p.hosts.join(", "));
  return parts.join(" ");
}

function subjectText(s) {
  let t = s.agent;
  if (s.session) t += ` session ${s.session}`;
  if (!s.subagent_type) t += " (main agent)";
  else if (s.subagent_type === "*") t += " sub-agents";
  else t += ` sub-agents of type ${s.subagent_type}`;
  if (s.subagent_id) t += ` id ${s.subagent_id}`;
  return t;
}

function grantRow(g) {
  const used = `${g.usage.steps}${g.budget.steps ? "/" + g.budget.steps : ""} steps`;
  return h("li", { class: "card grant", dataset: { grant: g.id } },
    h("div", { class: "row" },
      h("code", { text: g.id }), " ",
      h("span", { class: g.active ? "badge ok" : "badge", text: g.active ? "active" : "ended" }), " ",
      h("b", { text: subjectText(g.subject) })),
    h("p", { text: (g.allow || []).map(permitText).join("; ") }),
    h("p", { class: "hint", text: `${used} · until ${fmtTime(g.expires)} · issued by ${g.issued_by} (${g.channel || "?"}) ${fmtTime(g.issued_at)}${g.reason ? " — " + g.reason : ""}` }),
    g.why ? h("p", { class: "hint", text: g.why }) : null,
    g.active ? h("button", { class: "secondary revoke", onclick: () => revokeGrant(g) }, "Revoke") : null);
}

async function loadGrants() {
  try {
    const all = $("#grants-all").checked;
    const list = await api("GET", "/ui/api/grants" + (all ? "" : "?active=1"));
    $("#grants").replaceChildren(list.length ? h("ol", { class: "grants" }, list.map(grantRow))
      : h("p", { class: "empty", text: "No grant. Every call is judged by the policy alone." }));
  } catch (e) { toast(e.message, true); }
}

async function revokeGrant(g) {
  if (!confirm(`Revoke ${g.id} (${subjectText(g.subject)})? Its next call is put to you.`)) return;
  try { await api("POST", `/ui/api/grants/${encodeURIComponent(g.id)}/revoke`, { reason: "revoked in the console" }); toast("Revoked"); loadGrants(); }
  catch (e) { toast(e.message, true); }
}

async function issueGrant(e) {
  e.preventDefault();
  const f = e.target;
  const v = (n) => f.elements[n].value.trim();
  const permit = { kinds: splitList(v("kinds")), tools: splitList(v("tools")), under: splitList(v("under")),
    hosts: splitList(v("hosts")), read_only: f.elements.read_only.checked };
  for (const k of ["kinds", "tools", "under", "hosts"]) if (!permit[k].length) delete permit[k];
  const req = { subject: { agent: v("agent") }, allow: [permit], budget: {}, ttl: v("ttl") };
  if (v("session")) req.subject.session = v("session");
  if (v("subagent_type")) req.subject.subagent_type = v("subagent_type");
  if (v("steps") && Number(v("steps")) > 0) req.budget.steps = Number(v("steps"));
  if (v("wall_time")) req.budget.wall_time = v("wall_time");
  if (v("reason")) req.reason = v("reason");
  try { const g = await api("POST", "/ui/api/grants", req); toast(`Issued ${g.id}`); loadGrants(); }
  catch (err) { toast(err.message, true); }
}

async function loadConflicts() {
  try {
    const d = await api("GET", "/ui/api/conflicts");
    $("#conflicts").replaceChildren(d.conflicts.length ? h("ol", { class: "timeline compact" }, d.conflicts.map((c) =>
      h("li", { class: "conflict" }, h("code", { text: c.resource }), h("ul", {}, c.touches.map((t) =>
        h("li", {}, h("span", { class: "time", text: fmtTime(t.at) }), ` ${t.agent} session ${t.session}${t.subagent ? " (" + t.subagent + ")" : ""}: ${t.what} with ${t.tool}`))))))
      : h("p", { class: "hint", text: "No two sessions touched the same resource lately." }));
  } catch (e) { toast(e.message, true); }
}

async function loadUpstreams() {
  try {
    const d = await api("GET", "/ui/api/mcp/upstreams");
    $("#upstreams").replaceChildren(d.upstreams.length ? h("ul", { class: "upstreams" }, d.upstreams.map((u) =>
      h("li", { dataset: { upstream: u.name } }, h("b", { text: u.name }), " ",
        h("span", { class: u.state === "healthy" ? "badge ok" : "badge bad", text: u.state }),
        ` since ${fmtTime(u.since)}${u.restarts ? ", " + u.restarts + " restarts" : ""}${u.error ? " — " + u.error : ""}`)))
      : h("p", { class: "hint", text: "No MCP gateway has reported its upstream servers." }));
  } catch (e) { toast(e.message, true); }
}

function loadDelegation() {
  if (!delegationWired) {
    delegationWired = true;
    $("#grant-form").addEventListener("submit", issueGrant);
    $("#grants-all").addEventListener("change", loadGrants);
  }
  loadGrants();
  loadConflicts();
  loadUpstreams();
}
