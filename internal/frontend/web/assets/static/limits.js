// Overseer console: the Limits page (rate limits, budget caps, paused
// agents) and the budget banner. Loaded after app.js, whose helpers (h,
// api, toast, fmtTime, pages, pageLoaders, auditListeners, route) it uses.
// Text from the server is only ever set with textContent.
"use strict";

pages.push("limits");
pageLoaders.limits = loadLimits;

function money(n) { return "$" + (Number(n) || 0).toFixed(2); }

// gauge is a labelled meter: value of max, warning from 80%.
function gauge(label, value, max, text) {
  return h("div", { class: "gauge" },
    h("span", { class: "gauge-label", text: label }),
    h("meter", { min: 0, max: max, low: 0.8 * max, high: 0.99 * max, optimum: 0, value: Math.min(value, max), title: text }),
    h("span", { class: "gauge-text", text: text }));
}

function windowText(s) {
  if (s % 86400 === 0) return `${s / 86400}d`;
  if (s % 3600 === 0) return `${s / 3600}h`;
  if (s % 60 === 0) return `${s / 60}m`;
  return `${s}s`;
}

async function loadLimits() {
  await Promise.all([loadPaused(), loadRateLimits(), loadBudget()]);
}

// ---- paused agents

async function loadPaused() {
  try {
    const d = await api("GET", "/ui/api/agents/paused");
    const list = d.paused || [];
    const count = $("#paused-count");
    count.textContent = String(list.length);
    count.hidden = list.length === 0;
    $("#paused").replaceChildren(list.length
      ? h("ul", { class: "paused" }, list.map((p) => h("li", { class: "card paused-agent", dataset: { agent: p.agent } },
        h("b", { text: p.agent === "*" ? "every agent" : p.agent }), " ",
        h("span", { class: "hint", text: `paused by ${p.by} at ${fmtTime(p.at)}` }),
        h("p", { text: p.reason }),
        h("button", { class: "resume", onclick: () => resumeAgent(p.agent), text: "Resume" }))))
      : h("p", { class: "hint", text: "No agent is paused. A rate limit whose action is pause, or you, can pause one." }));
  } catch (e) { toast(e.message, true); }
}

async function resumeAgent(agent) {
  try {
    await api("POST", `/ui/api/agents/${encodeURIComponent(agent)}/resume`);
    toast(`Resumed ${agent}`);
    loadPaused();
  } catch (e) { toast(e.message, true); }
}

// ---- rate limits

async function loadRateLimits() {
  try {
    const [d, u] = await Promise.all([api("GET", "/ui/api/rate-limits"), api("GET", "/ui/api/rate-limits/usage")]);
    const uses = u.usage || [];
    const list = d.rate_limits || [];
    $("#rate-limits").replaceChildren(list.length ? h("div", { class: "limits" }, list.map((l) => {
      const mine = uses.filter((x) => x.limit.id === l.id);
      const what = [l.agent || "every agent", l.tool ? `tool ${l.tool}` : "every tool",
        l.risk ? `${l.risk}+` : "", l.effect ? `effect ${l.effect}` : ""].filter(Boolean).join(" · ");
      return h("div", { class: "card limit", dataset: { id: l.id } },
        h("div", { class: "row" }, h("b", { text: l.name || l.id }),
          h("span", { class: "hint", text: `${what} — at most ${l.max_calls} in ${windowText(l.window_seconds)}, then ${l.action_on_limit}` + (l.enabled ? "" : " (disabled)") }),
          h("button", { class: "link danger", onclick: () => deleteLimit(l.id), text: "Remove" })),
        mine.length
          ? mine.map((x) => gauge(x.agent, x.count, l.max_calls, `${x.count} / ${l.max_calls}`))
          : h("p", { class: "hint", text: "no calls counted in the window" }));
    })) : h("p", { class: "hint", text: "No rate limit." }));
  } catch (e) { toast(e.message, true); }
}

async function deleteLimit(id) {
  try {
    await api("DELETE", `/ui/api/rate-limits/${encodeURIComponent(id)}`);
    toast(`Removed ${id}`);
    loadRateLimits();
  } catch (e) { toast(e.message, true); }
}

$("#limit-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const f = Object.fromEntries(new FormData(e.target).entries());
  const body = { max_calls: Number(f.max_calls), window_seconds: Number(f.window_seconds), action_on_limit: f.action_on_limit };
  for (const k of ["agent", "tool", "risk", "effect"]) if (f[k]) body[k] = f[k];
  try {
    const l = await api("POST", "/ui/api/rate-limits", body);
    toast(`Added rate limit ${l.id}`);
    loadRateLimits();
  } catch (err) { toast(err.message, true); }
});

// ---- budget

async function loadBudget() {
  try {
    const [st, tl] = await Promise.all([api("GET", "/ui/api/budget"), api("GET", "/ui/api/budget/usage?days=30")]);
    showBanner(st);
    $("#budget-totals").replaceChildren(
      h("div", { class: "total" }, h("b", { text: money(st.today_usd) }), h("span", { text: "today" })),
      h("div", { class: "total" }, h("b", { text: money(st.week_usd) }), h("span", { text: "this week" })),
      h("div", { class: "total" }, h("b", { text: money(st.month_usd) }), h("span", { text: "this month" })));
    $("#cost-chart").replaceChildren(costChart(tl.days || []));
    const caps = st.caps || [];
    $("#budget-caps").replaceChildren(caps.length ? h("div", { class: "limits" }, caps.map((s) => {
      const c = s.cap;
      const scope = c.scope === "global" ? "all agents" : `${c.scope} ${s.key || c.scope_id || ""}`;
      return h("div", { class: "card cap", dataset: { id: c.id } },
        h("div", { class: "row" }, h("b", { text: c.name || c.id }),
          h("span", { class: "hint", text: `${scope} — ${money(c.max_cost_usd)} ${c.period}, then ${c.action_on_limit}` + (c.enabled ? "" : " (disabled)") }),
          h("button", { class: "link danger", onclick: () => deleteCap(c.id), text: "Remove" })),
        gauge("spent", s.spent_usd, c.max_cost_usd, `${money(s.spent_usd)} of ${money(c.max_cost_usd)} (${Math.round(100 * s.share)}%)`));
    })) : h("p", { class: "hint", text: "No budget cap." }));
  } catch (e) { toast(e.message, true); }
}

// costChart draws the cost per day as SVG bars (no inline style: the
// content security policy forbids it).
function costChart(days) {
  const NS = "http://www.w3.org/2000/svg";
  const W = 600, H = 140, pad = 20;
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H + pad}`);
  svg.setAttribute("class", "cost-chart");
  svg.setAttribute("role", "img");
  const max = Math.max(0.01, ...days.map((d) => d.cost_usd));
  svg.setAttribute("aria-label", `cost per day, highest ${money(max)}`);
  const bw = (W - pad) / Math.max(1, days.length);
  days.forEach((d, i) => {
    const bh = (d.cost_usd / max) * (H - pad);
    const r = document.createElementNS(NS, "rect");
    r.setAttribute("x", String(pad + i * bw + 1));
    r.setAttribute("y", String(H - bh));
    r.setAttribute("width", String(Math.max(1, bw - 2)));
    r.setAttribute("height", String(Math.max(0, bh)));
    r.setAttribute("class", "bar");
    const t = document.createElementNS(NS, "title");
    t.textContent = `${d.day}: ${money(d.cost_usd)}`;
    r.append(t);
    svg.append(r);
  });
  const label = (x, y, text, anchor) => {
    const t = document.createElementNS(NS, "text");
    t.setAttribute("x", String(x)); t.setAttribute("y", String(y));
    if (anchor) t.setAttribute("text-anchor", anchor);
    t.textContent = text;
    svg.append(t);
  };
  label(0, 12, money(max));
  if (days.length) {
    label(pad, H + 14, days[0].day);
    label(W, H + 14, days[days.length - 1].day, "end");
  }
  return svg;
}

async function deleteCap(id) {
  try {
    await api("DELETE", `/ui/api/budget/caps/${encodeURIComponent(id)}`);
    toast(`Removed ${id}`);
    loadBudget();
  } catch (e) { toast(e.message, true); }
}

$("#cap-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const f = Object.fromEntries(new FormData(e.target).entries());
  const body = { scope: f.scope, max_cost_usd: Number(f.max_cost_usd), period: f.period, action_on_limit: f.action_on_limit };
  if (f.scope_id) body.scope_id = f.scope_id;
  try {
    const c = await api("POST", "/ui/api/budget/caps", body);
    toast(`Added budget cap ${c.id}`);
    loadBudget();
  } catch (err) { toast(err.message, true); }
});

// ---- the 80% banner, above every page

function showBanner(st) {
  const alerts = (st && st.alerts) || [];
  const b = $("#budget-banner");
  b.replaceChildren(...alerts.map((s) => {
    const c = s.cap;
    const who = c.scope === "global" ? "all agents" : `${c.scope} ${s.key || c.scope_id || ""}`;
    return h("div", { class: "budget-alert", dataset: { cap: c.id } },
      h("b", { text: s.share >= 1 ? "Budget reached: " : "Budget at 80%: " }),
      h("span", { text: `${c.name || c.id} (${who}) spent ${money(s.spent_usd)} of ${money(c.max_cost_usd)} ${c.period} — ${Math.round(100 * s.share)}%` }),
      " ", h("a", { href: "#/limits", text: "Limits" }));
  }));
  b.hidden = alerts.length === 0;
}

async function refreshBanner() {
  try { showBanner(await api("GET", "/ui/api/budget")); } catch (e) { /* the live dot says so */ }
}

// Live: pauses, limits reached and budget alerts arrive as audit records.
const LIMIT_RECORDS = new Set(["agent_paused", "agent_resumed", "alert", "control_change"]);
auditListeners.push((records) => {
  if (!records.some((r) => LIMIT_RECORDS.has(r.type))) return;
  refreshBanner();
  if (current === "limits") loadLimits(); else loadPaused();
});
setInterval(() => { if (!document.hidden) { refreshBanner(); if (current === "limits") loadRateLimits(); } }, 30000);

refreshBanner();
loadPaused();
route();
