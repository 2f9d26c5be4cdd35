// The Unattended page (controls.md): auto-rules with a builder and its dry
// run, templates, the rule log, anomaly rules, the anomaly timeline and the
// rollback history. Uses app.js's helpers (h, api, $, toast, fmtTime,
// levelBadge); text from the server is only set with textContent.
"use strict";

const controlTypes = new Set(["auto_rule", "auto_rule_change", "anomaly_detected", "anomaly_rule_change", "rolled_back"]);
let controlsTimer;

window.onControlsAudit = (records) => {
  if (!records.some((r) => controlTypes.has(r.type))) return;
  clearTimeout(controlsTimer);
  controlsTimer = setTimeout(() => window.loadControls(), 300);
};

window.loadControls = async () => {
  try {
    const [rules, anomalies, events, log, templates] = await Promise.all([
      api("GET", "/ui/api/auto-rules"), api("GET", "/ui/api/anomaly/rules"), api("GET", "/ui/api/anomaly/events"),
      api("GET", "/ui/api/auto-rules/log?limit=50"), api("GET", "/ui/api/auto-rules/templates")]);
    renderAutoRules(rules);
    renderTemplates(templates);
    renderAnomalyRules(anomalies);
    renderEvents(events);
    renderRuleLog(log);
  } catch (e) {
    toast("Loading the rules failed: " + e.message, true);
  }
};

function triggerText(t) {
  const on = t.tool ? ` ${t.tool}` : " any tool";
  const who = t.agent ? ` of ${t.agent}` : "";
  switch (t.type) {
    case "time_based": return `${t.from}–${t.to}${t.days && t.days.length ? " " + t.days.join(",") : ""}${t.tz ? " " + t.tz : ""}:${on}${who}`;
    case "count_threshold": return `more than ${t.count} calls of${on}${who} in ${t.window_minutes} min`;
    case "error_rate": return `${t.percent}% errors of${on}${who} in ${t.window_minutes} min (≥ ${t.min_calls || 1} results)`;
    case "cost_threshold": return `$${t.usd} spent${who} in ${t.window_minutes} min`;
    case "pattern_match": return `${t.text ? `"${t.text}"` : `/${t.regex}/`} in the arguments of${on}${who}`;
  }
  return t.type;
}

function renderAutoRules(rules) {
  const box = $("#auto-rules");
  box.replaceChildren();
  if (!rules.length) { box.append(h("p", { class: "empty", text: "No auto-rules. Build one below, or add a template." })); return; }
  const table = h("table", { class: "rules" },
    h("thead", {}, h("tr", {}, ...["prio", "name", "when", "then", "fired", "last", ""].map((x) => h("th", { text: x })))));
  const body = h("tbody");
  for (const r of rules) {
    body.append(h("tr", { dataset: { id: r.id }, class: r.enabled ? "" : "off" },
      h("td", { text: String(r.priority) }), h("td", { text: r.name }), h("td", { text: triggerText(r.trigger) }),
      h("td", { text: r.action.type + (r.action.duration_minutes ? ` ${r.action.duration_minutes} min` : "") }),
      h("td", { class: "fired", text: String(r.times_triggered) }),
      h("td", { text: r.last_triggered ? fmtTime(r.last_triggered) : "–" }),
      h("td", {}, h("button", { class: "secondary small", text: "Remove", onclick: async () => {
        try { await api("DELETE", `/ui/api/auto-rules/${encodeURIComponent(r.id)}`); toast(`Removed ${r.name}`); window.loadControls(); }
        catch (e) { toast(e.message, true); }
      } }))));
  }
  table.append(body);
  box.append(table);
}

function renderTemplates(templates) {
  const box = $("#templates");
  box.replaceChildren(h("span", { class: "hint", text: "Templates: " }));
  for (const t of templates) {
    box.append(h("button", { class: "secondary", title: t.description, dataset: { template: t.name }, text: `Add “${t.title}”`, onclick: async () => {
      try { await api("POST", `/ui/api/auto-rules/templates/${encodeURIComponent(t.name)}`); toast(`Added ${t.title}`); window.loadControls(); }
      catch (e) { toast(e.message, true); }
    } }));
  }
}

function renderAnomalyRules(rules) {
  const box = $("#anomaly-rules");
  box.replaceChildren();
  if (!rules.length) { box.append(h("p", { class: "empty", text: "No anomaly rules." })); return; }
  for (const r of rules) {
    const base = r.baseline_multiplier ? `, and ${r.baseline_multiplier}× the usual rate` : "";
    box.append(h("div", { class: "card rule", dataset: { id: r.id } },
      h("strong", { text: r.name }), " ",
      h("span", { text: `${r.threshold_count} calls of ${r.tool_name || "any tool"} in ${r.window_seconds} s${base} → ${r.action}` +
        (r.action === "stop_and_rollback" ? ` (last ${r.rollback || 10})` : "") }), " ",
      h("button", { class: "secondary small", text: "Remove", onclick: async () => {
        try { await api("DELETE", `/ui/api/anomaly/rules/${encodeURIComponent(r.id)}`); window.loadControls(); }
        catch (e) { toast(e.message, true); }
      } })));
  }
}

function renderEvents(events) {
  const list = $("#anomaly-events");
  list.replaceChildren();
  if (!events.length) { list.append(h("li", { class: "empty", text: "No anomaly so far." })); return; }
  for (const ev of events) {
    const rbs = h("ol", { class: "rollbacks" });
    for (const rb of ev.rollbacks || []) {
      const undone = (rb.undone || []).map((u) => h("li", { class: u.error ? "bad" : "" },
        `${u.tool} ${(u.paths || []).join(", ")}`, u.error ? ` — ${u.error}` : ""));
      const skipped = (rb.skipped || []).map((u) => h("li", { class: "skipped" }, `${u.tool} ${(u.paths || []).join(", ")} — ${u.reason || u.error}`));
      rbs.append(h("li", {}, h("span", { text: `${fmtTime(rb.at)} · rolled back by ${rb.who}: ${rb.undone.length} action(s), newest first` }),
        h("ul", {}, ...undone, ...skipped)));
    }
    list.append(h("li", { class: "event", dataset: { id: ev.id } },
      h("div", { class: "row" }, h("span", { class: "lvl lvl-block", text: ev.stopped ? "stopped" : "notified" }), " ",
        h("strong", { text: `${ev.agent}: ${ev.rule_name}` }), h("span", { class: "hint", text: " " + fmtTime(ev.at) })),
      h("p", { text: ev.message + (ev.paused ? " — the agent is paused until a person resumes it." : "") }),
      rbs,
      h("button", { class: "secondary small", text: "Roll back again", onclick: async () => {
        try {
          const res = await api("POST", `/ui/api/anomaly/rollback/${encodeURIComponent(ev.id)}`, {});
          toast(`Rolled back ${res.rollback.undone.length} more action(s)` + (res.errors ? ": " + res.errors : ""), !!res.errors);
          window.loadControls();
        } catch (e) { toast(e.message, true); }
      } })));
  }
}

function renderRuleLog(log) {
  const list = $("#rule-log");
  list.replaceChildren();
  if (!log.length) { list.append(h("li", { class: "empty", text: "No rule has fired yet." })); return; }
  for (const l of log) {
    list.append(h("li", {}, h("span", { class: "hint", text: fmtTime(l.time) + " " }),
      h("strong", { text: l.fired.rule_name }), ` ${l.fired.action} → `, levelBadge(l.fired.verdict), ` ${l.agent || ""} ${l.tool || ""}`));
  }
}

// builderRule reads the builder into a rule, leaving out what does not
// belong to the chosen trigger and action.
function builderRule(form) {
  const f = new FormData(form);
  const get = (k) => String(f.get(k) || "").trim();
  const num = (k) => Number(get(k));
  const type = get("ttype");
  const trigger = { type };
  if (get("tool")) trigger.tool = get("tool");
  if (get("agent")) trigger.agent = get("agent");
  switch (type) {
    case "time_based":
      trigger.from = get("from"); trigger.to = get("to");
      if (get("days")) trigger.days = get("days").split(",").map((d) => d.trim()).filter(Boolean);
      if (get("tz")) trigger.tz = get("tz");
      break;
    case "count_threshold": trigger.count = num("count"); trigger.window_minutes = num("window_minutes"); break;
    case "error_rate": trigger.percent = num("percent"); trigger.min_calls = num("min_calls"); trigger.window_minutes = num("window_minutes"); break;
    case "cost_threshold": trigger.usd = num("usd"); trigger.window_minutes = num("window_minutes"); break;
    case "pattern_match": if (get("text")) trigger.text = get("text"); if (get("regex")) trigger.regex = get("regex"); break;
  }
  const action = { type: get("atype") };
  if (action.type === "block_tool" && get("duration_minutes")) action.duration_minutes = num("duration_minutes");
  if (action.type === "require_approval" && get("level")) action.level = get("level");
  if (get("channels")) action.channels = get("channels").split(",").map((c) => c.trim()).filter(Boolean);
  if (f.get("notify")) action.notify = true;
  return { name: get("name"), priority: num("priority"), trigger, action };
}

function showBuilderFields(form) {
  const t = form.elements.ttype.value, a = form.elements.atype.value;
  for (const el of form.querySelectorAll("[data-for]")) el.hidden = !el.dataset.for.split(" ").includes(t);
  for (const el of form.querySelectorAll("[data-act]")) el.hidden = el.dataset.act !== a;
}

function renderDryRun(rep) {
  const out = $("#rule-test-out");
  out.replaceChildren(h("p", { class: "summary", text: `Replayed ${rep.examined} calls of the last ${rep.days} days: the rule fires on ${rep.fired}, ` +
    `changes ${rep.changed} (blocks ${rep.blocked}, asks a person ${rep.asked}, loosens ${rep.loosened}); ${rep.paused} refused as the agent was paused.` }));
  if (!rep.cases.length) return;
  const body = h("tbody");
  for (const c of rep.cases) {
    body.append(h("tr", { dataset: { action: c.action_id } }, h("td", { text: fmtTime(c.time) }), h("td", { text: c.agent || "" }),
      h("td", { class: "call", text: c.summary }), h("td", {}, levelBadge(c.then)), h("td", {}, levelBadge(c.without)),
      h("td", {}, levelBadge(c.with)), h("td", { text: c.paused ? "agent paused" : (c.fired || []).map((f) => f.action).join(", ") })));
  }
  out.append(h("table", { class: "rules dryrun" }, h("thead", {}, h("tr", {},
    ...["time", "agent", "call", "then", "now", "with the rule", "what"].map((x) => h("th", { text: x })))), body));
}

document.addEventListener("DOMContentLoaded", () => {
  const form = $("#rule-builder");
  showBuilderFields(form);
  form.elements.ttype.addEventListener("change", () => showBuilderFields(form));
  form.elements.atype.addEventListener("change", () => showBuilderFields(form));
  $("#rule-test").addEventListener("click", async () => {
    try {
      const rep = await api("POST", "/ui/api/auto-rules/test", { rule: builderRule(form), days: Number(form.elements.days.value) || 7 });
      renderDryRun(rep);
    } catch (e) { toast("Dry run: " + e.message, true); }
  });
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const r = await api("POST", "/ui/api/auto-rules", builderRule(form));
      toast(`Saved ${r.name}`);
      window.loadControls();
    } catch (err) { toast("Saving: " + err.message, true); }
  });
  $("#anomaly-builder").addEventListener("submit", async (e) => {
    e.preventDefault();
    const f = new FormData(e.target);
    const get = (k) => String(f.get(k) || "").trim();
    const rule = { name: get("name"), threshold_count: Number(get("threshold_count")), window_seconds: Number(get("window_seconds")),
      action: get("action"), rollback: Number(get("rollback")) };
    if (get("tool_name")) rule.tool_name = get("tool_name");
    if (get("agent")) rule.agent = get("agent");
    if (Number(get("baseline_multiplier")) > 0) rule.baseline_multiplier = Number(get("baseline_multiplier"));
    if (get("notify_channels")) rule.notify_channels = get("notify_channels").split(",").map((c) => c.trim()).filter(Boolean);
    try { await api("POST", "/ui/api/anomaly/rules", rule); toast(`Added ${rule.name}`); window.loadControls(); }
    catch (err) { toast("Adding: " + err.message, true); }
  });
});
