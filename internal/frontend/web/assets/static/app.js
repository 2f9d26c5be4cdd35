// Overseer console. Plain JavaScript, no build step, no inline script
// (the content security policy forbids it). Text from the server is only
// ever set with textContent, never parsed as HTML.
"use strict";

const CSRF = document.querySelector('meta[name="csrf-token"]').content;
const $ = (sel, root = document) => root.querySelector(sel);

// h builds an element: h("div", {class: "x", onclick: fn}, child, "text").
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else if (k === "dataset") Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

async function api(method, path, body) {
  const opts = { method, headers: { "Accept": "application/json" }, credentials: "same-origin" };
  if (method !== "GET") opts.headers["X-CSRF-Token"] = CSRF;
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const resp = await fetch(path, opts);
  if (resp.status === 401) { location.href = "/ui/login"; throw new Error("signed out"); }
  if (resp.status === 204) return null;
  const data = await resp.json().catch(() => ({}));
  if (!resp.ok) {
    const msg = (data.error && data.error.message) || data.error || resp.statusText;
    throw new Error(msg);
  }
  return data;
}

let toastTimer;
function toast(msg, bad) {
  const t = $("#toast");
  t.textContent = msg;
  t.hidden = false;
  t.style.background = bad ? "var(--bad)" : "";
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { t.hidden = true; }, 4000);
}

function dur(ms) {
  const neg = ms < 0; ms = Math.abs(ms);
  const s = Math.floor(ms / 1000), m = Math.floor(s / 60), hh = Math.floor(m / 60);
  let out = hh > 0 ? `${hh}h ${m % 60}m` : m > 0 ? `${m}m ${s % 60}s` : `${s}s`;
  return neg ? "-" + out : out;
}

function fmtTime(t) {
  const d = new Date(t);
  return isNaN(d) ? "" : d.toLocaleString();
}

function levelBadge(level) { return h("span", { class: `lvl lvl-${level}`, text: level }); }

// answerBadge shows an answer record's outcome and who gave it.
function answerBadge(a) {
  return h("span", { class: `ans ans-${a.outcome}${a.late ? " late" : ""}`, title: a.late ? "late: recorded only" : "" },
    h("b", { text: a.outcome }), " · ", a.who);
}

// phone: a narrow screen, where keyboard hints are left out.
const phone = window.matchMedia("(max-width: 600px)");

// askerText says who holds a request's call, when the caller said.
function askerText(k) {
  if (!k) return "";
  let s = { hook: "held by the agent's hook", mcp: "held by an MCP client" }[k.kind] || `held by a ${k.kind} caller`;
  if (k.pid) s += ` (process ${k.pid})`;
  return s;
}

// mainArg is the argument a person most needs to see.
function mainArg(a) {
  const args = (a && a.args) || {};
  for (const k of ["command", "cmd", "file_path", "path", "url", "sql", "query"]) {
    if (typeof args[k] === "string") return args[k];
  }
  return JSON.stringify(args);
}

function diffBlock(text) {
  const pre = h("pre", { class: "diff" });
  for (const line of text.split("\n")) {
    let cls = "";
    if (line.startsWith("+++") || line.startsWith("---") || line.startsWith("@@")) cls = "hunk";
    else if (line.startsWith("+")) cls = "add";
    else if (line.startsWith("-")) cls = "del";
    pre.append(h("span", { class: cls, text: line + "\n" }));
  }
  return pre;
}

// ---------------------------------------------------------------- router

// Pages of their own files register in window.extraPages (name → load).
const pages = ["queue", "tasks", "audit", "policy", "dashboard", "mcp", "agents", "controls", ...Object.keys(window.extraPages || {})];
// Pages added by other scripts register here: page → load on entering.
const pageLoaders = {};
// auditListeners are called with every batch of new audit records.
const auditListeners = [];
let current = "";
function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/");
  const page = pages.includes(parts[0]) ? parts[0] : "queue";
  for (const p of pages) $(`#page-${p}`).hidden = p !== page;
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.page === page);
  const entering = page !== current;
  current = page;
  if (page === "queue" && parts[1]) selectId(decodeURIComponent(parts[1]), true);
  if (page === "tasks") showTasks(parts[1] ? decodeURIComponent(parts[1]) : "");
  if (page === "agents") loadAgents(parts[1] ? decodeURIComponent(parts[1]) : "");
  if (entering) {
    if (pageLoaders[page]) pageLoaders[page]();
    if (page === "audit") loadAudit();
    if (page === "policy") loadPolicy();
    if (page === "dashboard") loadDashboard();
    if (page === "mcp") loadPins();
    if (window.extraPages && window.extraPages[page]) window.extraPages[page]();
    if (page === "controls" && window.loadControls) window.loadControls();
  }
}
window.addEventListener("hashchange", route);

// ---------------------------------------------------------------- live stream

let skew = 0; // server time minus local time, ms
let lastSeq = 0;
function connect() {
  const es = new EventSource("/ui/events" + (lastSeq ? `?after=${lastSeq}` : ""));
  const live = $("#live");
  es.addEventListener("ready", () => { live.className = "live on"; live.title = "live"; document.body.dataset.live = "on"; });
  es.addEventListener("queue", (e) => renderQueue(JSON.parse(e.data)));
  es.addEventListener("audit", (e) => onAudit(JSON.parse(e.data).records || []));
  es.addEventListener("pins", (e) => onPins(JSON.parse(e.data)));
  es.addEventListener("problem", (e) => toast(JSON.parse(e.data).message, true));
  es.onerror = () => {
    live.className = "live off"; live.title = "reconnecting"; document.body.dataset.live = "off";
    if (es.readyState === EventSource.CLOSED) setTimeout(connect, 3000);
  };
}

// ---------------------------------------------------------------- queue

const items = new Map(); // approval id → {apr, el, state}
let selected = "";
let wantSelected = ""; // an approval asked for (#/queue/ID) before the queue showed it

function renderQueue(snap) {
  skew = new Date(snap.now).getTime() - Date.now();
  const ids = new Set(snap.pending.map((a) => a.id));
  for (const [id, it] of items) {
    if (!ids.has(id)) { it.el.remove(); items.delete(id); }
  }
  const q = $("#queue");
  for (const apr of snap.pending) {
    if (items.has(apr.id)) continue;
    const it = { apr, state: { remember: "once", ruleText: "", editing: false } };
    it.el = queueItem(it);
    items.set(apr.id, it);
    q.append(it.el);
  }
  if (!items.has(selected)) selected = items.size ? items.keys().next().value : "";
  markSelected();
  if (wantSelected && items.has(wantSelected)) { const id = wantSelected; wantSelected = ""; selectId(id, true); }
  const n = items.size;
  $("#queue-empty").hidden = n > 0;
  // The daemon sends the oldest requests only; "more" says others wait.
  $("#queue-more").hidden = !snap.more;
  const shown = snap.more ? `${n}+` : String(n);
  const count = $("#count");
  count.hidden = n === 0;
  count.textContent = shown;
  document.title = n ? `(${shown}) Overseer` : "Overseer";
  tick();
}

function queueItem(it) {
  const a = it.apr;
  const v = a.verdict || {};
  const el = h("article", { class: `item level-${a.level}`, tabindex: "0", dataset: { id: a.id }, id: `apr-${a.id}`,
    onclick: () => { selected = a.id; markSelected(); } });
  el.append(h("header", {},
    h("span", { class: "tool", text: a.tool }), levelBadge(a.level),
    h("span", { class: "meta", text: [a.agent && `agent ${a.agent}`, a.session && `session ${a.session}`, a.kind, askerText(a.asker)].filter(Boolean).join(" · ") }),
    h("span", { class: "clock", dataset: { created: a.created_at, deadline: a.deadline } })));
  // Where it runs comes first: "rm -rf ./tmp_*" means nothing without it.
  const cwd = a.action && a.action.cwd;
  el.append(h("div", { class: "where" + (cwd ? "" : " unknown") },
    h("span", { class: "label", text: "runs in" }),
    cwd ? h("code", { class: "cwd", text: cwd, title: cwd }) : h("span", { class: "cwd", text: "the agent did not say where" })));
  el.append(h("div", { class: "main", text: mainArg(a.action) }));
  if (a.action && a.action.intent) el.append(h("p", { class: "meta", text: `intent: ${a.action.intent}` }));
  const rs = (v.reasons || []).filter((r) => r.level !== "auto");
  if (rs.length) {
    el.append(h("ul", { class: "reasons" }, rs.map((r) =>
      h("li", {}, levelBadge(r.level), " ", h("b", { text: `${r.layer} ${r.source}${r.name ? " " + r.name : ""}` }), ": ", r.message))));
  }
  for (const hint of v.hints || []) el.append(h("p", { class: "meta", text: `hint: ${hint}` }));
  const p = v.preview;
  if (p) {
    const box = h("div", { class: "preview" }, h("h3", { text: "Preview" }), h("p", { text: p.summary }));
    if (p.items && p.items.length) box.append(h("ul", {}, p.items.map((x) => h("li", {}, h("code", { text: x })))));
    if (p.more) box.append(h("p", { class: "meta", text: `and ${p.more} more` }));
    if (p.diff) box.append(diffBlock(p.diff));
    el.append(box);
  }
  const details = h("details", {}, h("summary", { text: "All arguments" }), h("pre", { text: JSON.stringify(a.action && a.action.args, null, 2) }));
  el.append(details);

  // The answer form.
  const reason = h("textarea", { rows: "2", class: "reason", "aria-label": "reason",
    placeholder: "Reason, or an instruction for the agent (\u201cuse ./build instead\u201d)" + (phone.matches ? "" : ". Enter denies.") });
  reason.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); answer(a.id, "deny"); }
    if (e.key === "Escape") reason.blur();
  });
  const ruleBox = h("div", { class: "rule-editor", hidden: true },
    h("label", { text: "The rule that will be saved (edit it before saving)" }),
    h("textarea", { rows: "8", spellcheck: "false", class: "rule" }));
  const rem = h("div", { class: "remember" }, h("span", { text: "Remember:" }),
    ["once", "session", "rule"].map((r) => h("label", {},
      h("input", { type: "radio", name: `rem-${a.id}`, value: r, checked: r === "once",
        onchange: () => setRemember(it, r) }),
      { once: "just this once", session: "for this session", rule: "as a rule" }[r])));
  el.append(h("div", { class: "answer" }, reason, rem, ruleBox,
    h("div", { class: "buttons" },
      h("button", { class: "approve", onclick: (e) => { e.stopPropagation(); answer(a.id, "approve"); } }, "Approve", h("span", { class: "key", text: " (a)" })),
      h("button", { class: "deny", onclick: (e) => { e.stopPropagation(); answer(a.id, "deny"); } }, "Deny", h("span", { class: "key", text: " (d)" })),
      h("button", { class: "abort", onclick: (e) => { e.stopPropagation(); answer(a.id, "abort"); } }, "Abort task", h("span", { class: "key", text: " (x)" })))));
  it.reason = reason;
  it.ruleBox = ruleBox;
  return el;
}

function setRemember(it, r) {
  it.state.remember = r;
  for (const inp of it.el.querySelectorAll(`input[name="rem-${it.apr.id}"]`)) inp.checked = inp.value === r;
  it.ruleBox.hidden = r !== "rule";
  if (r === "rule") {
    const ta = it.ruleBox.querySelector("textarea");
    if (!ta.value) ta.value = JSON.stringify(it.apr.proposed_rules.approve, null, 2);
  }
}

function markSelected() {
  for (const [id, it] of items) it.el.classList.toggle("selected", id === selected);
}

function selectId(id, scroll) {
  if (!items.has(id)) { wantSelected = id; return; }
  wantSelected = "";
  selected = id;
  markSelected();
  if (scroll) items.get(id).el.scrollIntoView({ block: "nearest" });
}

function tick() {
  const now = Date.now() + skew;
  for (const el of document.querySelectorAll(".item .clock")) {
    const waited = now - new Date(el.dataset.created).getTime();
    const left = new Date(el.dataset.deadline).getTime() - now;
    el.textContent = `waiting ${dur(waited)} · times out in ${left > 0 ? dur(left) : "now"}`;
    el.classList.toggle("soon", left < 60000);
  }
}
setInterval(tick, 1000);

async function answer(id, decision) {
  const it = items.get(id);
  if (!it || it.busy) return;
  const body = { reason: it.reason.value.trim() };
  if (it.state.remember !== "once") body.remember = it.state.remember;
  if (it.state.remember === "rule") {
    let text = it.ruleBox.querySelector("textarea").value.trim();
    // A deny saves the deny proposal unless the person edited the rule.
    if (decision !== "approve" && text === JSON.stringify(it.apr.proposed_rules.approve, null, 2)) {
      text = JSON.stringify(it.apr.proposed_rules.deny);
    }
    try { body.rule = JSON.parse(text); } catch (e) { toast("The rule is not valid JSON: " + e.message, true); return; }
  }
  it.busy = true;
  for (const b of it.el.querySelectorAll("button")) b.disabled = true;
  try {
    const r = await api("POST", `/ui/api/approvals/${encodeURIComponent(id)}/${decision}`, body);
    const st = r.approval ? r.approval.status : decision;
    toast(r.applied ? `${it.apr.tool}: ${st}` : `Already answered (${st}); your answer was recorded only`);
    if (r.warning) toast("Answered, but: " + r.warning, true);
    it.el.classList.add("done");
    setTimeout(() => { if (items.get(id) === it) { it.el.remove(); items.delete(id); renderCount(); } }, 600);
  } catch (e) {
    toast(e.message, true);
    it.busy = false;
    for (const b of it.el.querySelectorAll("button")) b.disabled = false;
  }
}

function renderCount() {
  const n = items.size;
  $("#queue-empty").hidden = n > 0;
  $("#count").hidden = n === 0;
  $("#count").textContent = String(n);
  if (!items.has(selected)) { selected = items.size ? items.keys().next().value : ""; markSelected(); }
}

function moveSelection(step) {
  const ids = [...items.keys()];
  if (!ids.length) return;
  let i = ids.indexOf(selected);
  i = Math.max(0, Math.min(ids.length - 1, (i < 0 ? 0 : i + step)));
  selectId(ids[i], true);
}

document.addEventListener("keydown", (e) => {
  const tag = (e.target && e.target.tagName) || "";
  if (["INPUT", "TEXTAREA", "SELECT"].includes(tag) || e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.key === "?") { showHelp(); return; }
  if (current !== "queue") return;
  const it = items.get(selected);
  switch (e.key) {
    case "j": case "ArrowDown": moveSelection(1); break;
    case "k": case "ArrowUp": moveSelection(-1); break;
    case "a": if (it) answer(selected, "approve"); break;
    case "x": if (it) answer(selected, "abort"); break;
    case "d":
      if (!it) break;
      if (it.reason.value.trim()) answer(selected, "deny");
      else { e.preventDefault(); it.reason.focus(); toast("Type a reason (optional) and press Enter to deny"); }
      break;
    case "r":
      if (it) { const order = ["once", "session", "rule"]; setRemember(it, order[(order.indexOf(it.state.remember) + 1) % 3]); }
      break;
    default: return;
  }
});

function showHelp() {
  openDialog("Keyboard shortcuts", h("table", {}, [
    ["j / ↓", "next request"], ["k / ↑", "previous request"], ["a", "approve"],
    ["d", "deny (type a reason, Enter sends)"], ["x", "abort the agent's task"],
    ["r", "remember: once → session → rule"], ["?", "this help"],
  ].map(([k, v]) => h("tr", {}, h("td", {}, h("kbd", { text: k })), h("td", { text: v })))));
}

function openDialog(title, body, ok) {
  const d = $("#dialog");
  $("#dialog-title").textContent = title;
  const b = $("#dialog-body");
  b.replaceChildren(body);
  const okb = $("#dialog-ok");
  okb.hidden = !ok;
  if (ok) { okb.textContent = ok.label; okb.onclick = (e) => { e.preventDefault(); d.close(); ok.run(); }; }
  d.showModal();
}

// ---------------------------------------------------------------- tasks

// The tasks of Overseer's own agent loop. The page re-reads the task it
// shows (or the list) every few seconds while it is open; goals, outputs
// and people's words are untrusted text and only ever set as text.

const TASK_POLL_MS = 3000;
const ENDED = ["done", "failed", "aborted"];
let taskShown = "";     // the task whose detail is open ("" for the list)
let taskKey = "";       // what the shown detail was rendered from
let taskLoading = false;
let taskGen = 0;        // the latest load; older answers are dropped

function shorten(s, n) {
  s = String(s || "");
  return s.length > n ? s.slice(0, n) + "…" : s;
}

function statusBadge(t) {
  const b = h("span", { class: `st st-${t.status}`, text: t.status.replace("_", " ") });
  if (t.status === "running" && !t.live) b.title = "no runner process: it stopped without ending (resume it)";
  return b;
}

function usageText(u) {
  u = u || {};
  const tokens = (u.input_tokens || 0) + (u.output_tokens || 0);
  let s = `${tokens.toLocaleString()} tokens`;
  if (u.cost_usd > 0) s += ` · $${u.cost_usd.toFixed(u.cost_usd < 1 ? 4 : 2)}`;
  return s;
}

function stepText(t) { return `step ${t.step}/${t.max_steps}`; }

function showTasks(id) {
  taskShown = id;
  taskKey = "";
  $("#tasks-view").hidden = !!id;
  $("#task-detail").hidden = !id;
  if (id) $("#task-detail").replaceChildren(h("p", { class: "hint", text: "loading…" }));
  refreshTasks(true);
}

// refreshTasks re-reads what the page shows; a poll is skipped while a load
// runs, a forced load (the person moved) supersedes it.
async function refreshTasks(force) {
  if (current !== "tasks" || (taskLoading && !force)) return;
  const gen = ++taskGen;
  taskLoading = true;
  try {
    if (taskShown) await loadTask(taskShown, gen);
    else await loadTaskList(gen);
  } catch (e) {
    if (gen === taskGen) toast(e.message, true);
  } finally {
    if (gen === taskGen) taskLoading = false;
  }
}
setInterval(() => { if (current === "tasks" && !document.hidden) refreshTasks(); }, TASK_POLL_MS);

async function loadTaskList(gen) {
  const status = $("#task-filter").value;
  const list = await api("GET", "/ui/api/tasks?limit=200" + (status ? "&status=" + encodeURIComponent(status) : ""));
  if (gen !== taskGen || taskShown) return; // the person moved meanwhile
  $("#tasks").replaceChildren(...list.map(taskRow));
  $("#tasks-empty").hidden = list.length > 0;
}

function taskRow(t) {
  const meta = [stepText(t), usageText(t.usage)];
  if (t.plan_total) meta.push(`plan ${t.plan_done}/${t.plan_total}`);
  meta.push(`updated ${fmtTime(t.updated_at)}`);
  const li = h("li", { class: `task-row status-${t.status}`, dataset: { id: t.id, status: t.status } },
    h("a", { class: "task-link", href: `#/tasks/${encodeURIComponent(t.id)}` },
      h("div", { class: "task-top" }, statusBadge(t),
        t.live ? h("span", { class: "runner", title: "a runner is working on it", text: "● live" }) : null,
        h("code", { class: "task-id", text: t.id })),
      h("div", { class: "goal", text: t.goal }),
      h("div", { class: "meta", text: meta.join(" · ") }),
      t.error ? h("div", { class: "task-error", text: shorten(t.error, 200) }) : null));
  if (t.pending) {
    li.append(h("a", { class: "waits", href: `#/queue/${encodeURIComponent(t.pending)}`, text: "Waiting for you — answer in the queue →" }));
  }
  return li;
}

$("#task-filter").addEventListener("change", () => { if (!taskShown) refreshTasks(true); });

async function loadTask(id, gen) {
  let t;
  try {
    t = await api("GET", `/ui/api/tasks/${encodeURIComponent(id)}`);
  } catch (e) {
    if (gen === taskGen && taskShown === id) {
      $("#task-detail").replaceChildren(h("p", {}, h("a", { href: "#/tasks", text: "← All tasks" })),
        h("p", { class: "empty", text: e.message }));
    }
    return;
  }
  if (gen !== taskGen || taskShown !== id) return;
  // Re-render only when something changed, so open details stay open.
  const key = JSON.stringify([t.updated_at, t.live, t.status, t.aborts, t.pending_approval && t.pending_approval.status]);
  if (key === taskKey) return;
  taskKey = key;
  $("#task-detail").replaceChildren(taskDetail(t));
}

function taskDetail(t) {
  const root = h("article", { class: `task-detail status-${t.status}`, dataset: { id: t.id, status: t.status } });
  root.append(h("p", {}, h("a", { href: "#/tasks", class: "back", text: "← All tasks" })));
  root.append(h("div", { class: "task-top" }, statusBadge(t),
    t.live ? h("span", { class: "runner", text: "● live" }) : h("span", { class: "hint", text: "no runner" }),
    h("code", { class: "task-id", text: t.id })));
  root.append(h("h1", { class: "goal", text: t.goal }));

  const facts = [["progress", stepText(t)], ["usage", usageText(t.usage)], ["model", t.model],
    ["created", fmtTime(t.created_at)], ["updated", fmtTime(t.updated_at)],
    ["time spent", t.elapsed ? dur(t.elapsed / 1e6) : ""], ["directory", t.cwd],
    ["abort requests", t.aborts ? String(t.aborts) : ""],
    ["sub-task of", t.parent || ""], ["its tools", (t.tools || []).join(", ")], ["its grant", t.grant || ""]];
  root.append(h("dl", { class: "facts" }, facts.filter(([, v]) => v).flatMap(([k, v]) => [h("dt", { text: k }),
    k === "sub-task of" ? h("dd", {}, h("a", { href: `#/tasks/${encodeURIComponent(v)}`, text: v })) : h("dd", { text: v })])));

  if (t.pending) {
    const apr = t.pending_approval;
    const q = apr && apr.action && apr.action.args && typeof apr.action.args.question === "string" ? apr.action.args.question : "";
    const what = apr ? (apr.tool === "overseer.ask_human" ? "The agent asks:" : apr.tool === "overseer.confirm_done" ? "The agent says it is done:" : `It waits for an answer on ${apr.tool}:`) : "It waits for a person.";
    root.append(h("div", { class: "waiting card" },
      h("b", { text: what }), " ",
      q ? h("span", { class: "question", text: q }) : (apr ? h("span", { text: mainArg(apr.action) }) : null),
      h("div", {}, h("a", { class: "button", id: "task-approval", href: `#/queue/${encodeURIComponent(t.pending)}`, text: "Answer in the queue →" }))));
  }
  if (t.result) root.append(h("div", { class: "card result" }, h("h2", { text: t.status === "paused" ? "Where it stopped" : "Result" }), h("p", { class: "prewrap", text: t.result })));
  if (t.error) root.append(h("div", { class: "card task-error" }, h("h2", { text: "Error" }), h("p", { class: "prewrap", text: t.error })));

  if (!ENDED.includes(t.status)) {
    const again = t.live && t.aborts > 0;
    root.append(h("div", { class: "row" }, h("button", { class: "abort", id: "task-abort",
      onclick: () => confirmAbort(t), text: again ? "Stop now" : "Abort task" }),
      again ? h("span", { class: "hint", text: "An abort was asked for: it stops after its current step." }) : null));
  }

  const plan = t.plan && t.plan.subtasks && t.plan.subtasks.length ? t.plan : null;
  if (plan) {
    root.append(h("h2", {}, "Plan", plan.revision ? h("span", { class: "hint", text: ` (revision ${plan.revision})` }) : null));
    root.append(h("ol", { class: "plan" }, plan.subtasks.map((s) => h("li", { class: s.done ? "done" : "" },
      h("label", {}, h("input", { type: "checkbox", disabled: true, checked: !!s.done }), h("span", { text: s.title })),
      s.result ? h("div", { class: "hint", text: s.result }) : null))));
    if (plan.notes) root.append(h("p", { class: "hint", text: "Notes: " + plan.notes }));
  }

  if (t.human_decisions && t.human_decisions.length) {
    root.append(h("h2", { text: "People's decisions" }));
    root.append(h("ul", { class: "decisions" }, t.human_decisions.map((d) => h("li", { text: d }))));
  }
  if (t.signals && t.signals.length) {
    root.append(h("h2", { text: "Signals" }));
    root.append(h("ul", { class: "decisions" }, t.signals.map((d) => h("li", { text: d }))));
  }

  const steps = t.steps || [];
  root.append(h("h2", {}, "Steps", h("span", { class: "hint", text: ` (${steps.length})` })));
  if (!steps.length) root.append(h("p", { class: "hint", text: "No steps yet." }));
  else root.append(h("ol", { class: "steps" }, steps.slice().reverse().map(stepRow)));
  return root;
}

function stepRow(s) {
  const li = h("li", { class: `step step-${s.outcome}`, dataset: { n: s.n } });
  const tool = s.tool || s.action;
  li.append(h("div", { class: "step-head" }, h("span", { class: "seq", text: `#${s.n}` }),
    h("b", { class: "tool", text: tool }), h("span", { class: `oc oc-${s.outcome}`, text: s.outcome }),
    s.is_error ? h("span", { class: "oc oc-error", text: "error" }) : null,
    s.class ? h("span", { class: "hint", text: s.class }) : null,
    typeof s.confidence === "number" ? h("span", { class: "hint", text: `confidence ${s.confidence}` }) : null));
  if (s.args && Object.keys(s.args).length) li.append(h("div", { class: "main", text: shorten(mainArg(s), 300) }));
  if (s.intent) li.append(h("p", { class: "meta", text: "intent: " + s.intent }));
  if (s.thought) li.append(h("p", { class: "thought", text: shorten(s.thought, 300) }));
  if (s.note) li.append(h("p", { class: "note", text: s.note }));
  if (s.human) li.append(h("p", { class: "human" }, h("b", { text: "Person: " }), h("span", { text: s.human })));
  if (s.output) {
    const short = shorten(s.output, 400);
    li.append(h("pre", { class: "output", text: short }));
    if (short !== s.output) {
      li.append(h("details", {}, h("summary", { text: `All output (${s.output.length.toLocaleString()} characters)` }),
        h("pre", { class: "output", text: s.output })));
    }
  }
  return li;
}

function confirmAbort(t) {
  const again = t.live && t.aborts > 0;
  const msg = !t.live
    ? "No runner is working on this task: it ends as aborted now."
    : again
      ? "An abort was asked for already. Pressing again stops the task at once, in the middle of its step."
      : "The task stops after its current step. (Press again afterwards to stop it at once.)";
  openDialog(again ? "Stop this task now?" : "Abort this task?", h("div", {},
    h("p", { class: "goal", text: t.goal }), h("p", { text: msg })), { label: again ? "Stop now" : "Abort", run: () => abortTask(t.id) });
}

async function abortTask(id) {
  const btn = $("#task-abort");
  if (btn) btn.disabled = true;
  try {
    const r = await api("POST", `/ui/api/tasks/${encodeURIComponent(id)}/abort`);
    toast(r.note || `task ${r.status}`);
    if (taskShown === id) { taskGen++; taskLoading = false; taskKey = ""; $("#task-detail").replaceChildren(taskDetail(r)); }
  } catch (e) {
    toast(e.message, true);
    if (btn) btn.disabled = false;
    taskKey = "";
    refreshTasks(true);
  }
}

// ---------------------------------------------------------------- audit

let auditFilters = {};
let pendingAudit = [];

function auditParams(extra) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries({ ...auditFilters, ...extra })) {
    if (!v) continue;
    if ((k === "since" || k === "until") && v) p.set(k, new Date(v).toISOString());
    else p.set(k, v);
  }
  return p;
}

async function loadAudit() {
  const list = $("#audit");
  pendingAudit = [];
  $("#audit-new").hidden = true;
  $("#export").href = "/ui/api/audit/export?" + auditParams({});
  try {
    const r = await api("GET", "/ui/api/audit?" + auditParams({ limit: 200 }));
    list.replaceChildren(...r.records.map(auditRow));
    if (!r.records.length) list.append(h("li", { class: "empty", text: "No records match." }));
  } catch (e) { toast(e.message, true); }
  verifyChain();
}

async function verifyChain() {
  const b = $("#verify");
  b.className = "badge";
  b.textContent = "checking the chain…";
  try {
    const rep = await api("GET", "/ui/api/audit/verify");
    b.className = "badge " + (rep.ok ? "ok" : "bad");
    b.textContent = rep.ok ? `chain verified · ${rep.records} records` : `chain broken at record ${rep.first_bad}: ${rep.problem}`;
  } catch (e) { b.className = "badge bad"; b.textContent = "could not verify: " + e.message; }
}

function auditRow(rec) {
  const full = h("pre", { hidden: true, text: JSON.stringify({ ...rec, data: rec.data }, null, 2) });
  const li = h("li", { dataset: { seq: rec.seq } });
  const line = h("div", { class: "line", onclick: () => { full.hidden = !full.hidden; } },
    h("span", { class: "seq", text: `#${rec.seq}` }),
    h("span", { class: "type", text: rec.type }),
    rec.answer ? answerBadge(rec.answer) : rec.level ? levelBadge(rec.level) : null,
    h("span", { class: "time", text: fmtTime(rec.time) }),
    h("span", { class: "meta", text: [rec.agent, rec.tool].filter(Boolean).join(" · ") }),
    h("span", { class: "sum", text: rec.summary }));
  li.append(line);
  if (rec.type === "ingested_result" && rec.data && rec.data.change) {
    li.append(h("button", { class: "secondary undo", onclick: () => showRollback(rec.action_id), text: "Roll back…" }));
  }
  if (rec.undo && rec.undo.kept) {
    li.append(rec.undo.restored
      ? h("span", { class: "hint", text: "undone" })
      : h("button", { class: "secondary undo", onclick: () => showUndo(rec.action_id), text: "Undo…" }));
  }
  li.append(full);
  return li;
}

async function showUndo(actionID) {
  try {
    const r = await api("GET", `/ui/api/undo/${encodeURIComponent(actionID)}`);
    const body = h("div", {},
      h("p", { text: `Undo restores what Overseer kept before action ${actionID} changed these paths:` }),
      h("ul", {}, r.entries.map((e) => h("li", {}, h("code", { text: e.path })))),
      r.diff ? diffBlock(r.diff) : h("p", { class: "hint", text: "The files are as they were kept: undo would change nothing." }));
    openDialog("Undo this action?", body, { label: "Undo", run: async () => {
      try {
        await api("POST", `/ui/api/undo/${encodeURIComponent(actionID)}`);
        toast("Undone");
        loadAudit();
      } catch (e) { toast(e.message, true); }
    } });
  } catch (e) { toast(e.message, true); }
}

function onAudit(records) {
  if (!records.length) return;
  lastSeq = Math.max(lastSeq, records[records.length - 1].seq);
  for (const fn of auditListeners) fn(records);
  if (current === "controls" && window.onControlsAudit) window.onControlsAudit(records);
  if (current !== "audit") return;
  if (Object.values(auditFilters).some(Boolean)) {
    pendingAudit.push(...records);
    $("#audit-new").hidden = false;
    $("#audit-refresh").textContent = `${pendingAudit.length} new records — show`;
    return;
  }
  const list = $("#audit");
  const empty = list.querySelector(".empty");
  if (empty) empty.remove();
  for (const rec of records) {
    // A record the page already shows (it was read with the page) is not
    // added twice.
    if (list.querySelector(`li[data-seq="${Number(rec.seq)}"]`)) continue;
    const li = auditRow(rec);
    li.classList.add("fresh");
    list.prepend(li);
  }
}

$("#audit-filter").addEventListener("submit", (e) => {
  e.preventDefault();
  auditFilters = Object.fromEntries(new FormData(e.target).entries());
  loadAudit();
});
$("#audit-filter").addEventListener("reset", () => { auditFilters = {}; setTimeout(loadAudit, 0); });
$("#audit-refresh").addEventListener("click", loadAudit);

// ---------------------------------------------------------------- policy

function ruleTable(rules, withDelete) {
  if (!rules.length) return h("p", { class: "hint", text: "none" });
  return h("div", { class: "table-wrap" }, h("table", {},
    h("tr", {}, ["name", "match", "level", "message", ""].map((t) => h("th", { text: t }))),
    rules.map((r) => {
      const rule = r.decoded || r;
      const match = [
        rule.tool && `tool ${rule.tool.join(", ")}`, rule.kind && `kind ${rule.kind.join(", ")}`,
        rule.agent && `agent ${rule.agent.join(", ")}`, rule.session && `session ${rule.session}`,
        rule.args_hash && `args ${rule.args_hash.slice(0, 10)}…`, rule.when && `when ${rule.when}`,
      ].filter(Boolean).join("; ") || "anything";
      const del = withDelete ? h("button", { class: "secondary", onclick: () => deleteRule(r.id), text: "Remove" }) : null;
      const who = r.origin ? h("div", { class: "hint", text: `${r.origin}${r.created_by ? " · " + r.created_by : ""} · ${fmtTime(r.created_at)}` }) : null;
      return h("tr", {}, h("td", {}, h("code", { text: rule.name }), who), h("td", { text: match }),
        h("td", {}, levelBadge(rule.level)), h("td", { text: rule.message || "" }), h("td", {}, del));
    })));
}

async function loadPolicy() {
  try {
    const p = await api("GET", "/ui/api/policy");
    loadProposals();
    $("#policy-source").textContent = (p.source ? `admin policy: ${p.source}` : "admin policy: built-in default") + (p.locked ? " · locked" : "");
    $("#admin-rules").replaceChildren(ruleTable(p.admin, false));
    $("#user-rules").replaceChildren(ruleTable(p.user, true));
    $("#adaptive").replaceChildren(p.adaptive.length ? ruleTable(p.adaptive, true)
      : h("p", { class: "hint", text: "No tool is escalated. Three rejections in a row escalate a tool to approve." }));
    $("#policy-history").replaceChildren(...(p.history.length ? p.history.map((r) =>
      h("li", {}, h("span", { class: "time", text: fmtTime(r.time) }), " ", h("span", { text: r.summary })))
      : [h("li", { class: "hint", text: "No changes yet." })]));
  } catch (e) { toast(e.message, true); }
}

// ---------------------------------------------------------------- learned trust

function replayCases(title, cases, withWhy, cls) {
  if (!cases || !cases.length) return null;
  return h("div", { class: cls || "" }, h("p", { text: `${title}: ${cases.length}` }),
    h("ul", { class: "reasons" }, cases.slice(0, 50).map((c) => h("li", {},
      h("code", { text: c.summary }), " ", levelBadge(c.without), " → ", levelBadge(c.with),
      c.answer ? ` (${c.answer === "approve" ? "approved" : c.answer === "deny" ? "denied" : c.answer} by ${c.who})` : "",
      withWhy && c.why ? h("div", { class: "hint", text: c.why }) : null))));
}

function replayReport(dr) {
  const lt = dr.let_through || [];
  return h("div", { class: "dryrun" },
    h("p", {}, h("b", { text: `Dry run over ${dr.examined} past actions: ` }),
      `would have saved ${dr.prompts_saved} prompt(s); matches ${dr.matched}; `,
      lt.length ? h("b", { class: "bad", text: `lets through ${lt.length} refused or risky call(s)` }) : "lets through no refused or risky call"),
    replayCases("Refused or risky calls it would let through", lt, true, "letthrough"),
    replayCases("Prompts saved", dr.saved, false),
    replayCases("Matched, but held by a guard's floor or an admin rule", dr.held, false));
}

function proposalCard(p) {
  const edit = h("textarea", { rows: 12, spellcheck: "false", hidden: true, "aria-label": "the rule to accept, as JSON" });
  edit.value = JSON.stringify(p.rule, null, 2);
  const editBtn = h("button", { class: "secondary", text: "Edit", onclick: () => {
    edit.hidden = !edit.hidden;
    editBtn.textContent = edit.hidden ? "Edit" : "Cancel edit";
  } });
  return h("div", { class: "card proposal", dataset: { id: p.id } },
    h("p", {}, h("b", { text: p.title }), " ", levelBadge(p.rule.level)),
    h("p", { class: "hint", text: `${p.id} · from ${p.approvals} approvals; ${p.refusals} refusal(s) kept out as not_match examples · rule ${p.rule.name}` }),
    replayReport(p.dry_run),
    h("pre", { class: "when", text: p.rule.when || "" }),
    edit,
    h("div", { class: "row" },
      h("button", { text: "Accept", onclick: () => acceptProposal(p, edit.hidden ? null : edit.value) }),
      editBtn,
      h("button", { class: "secondary", text: "Dismiss", onclick: () => dismissProposal(p) })));
}

async function loadProposals() {
  try {
    const list = await api("GET", "/ui/api/proposals");
    $("#proposals").replaceChildren(...(list.length ? list.map(proposalCard)
      : [h("p", { class: "hint", text: "No rule is proposed. When you approve the same kind of call several times and refuse none like it, Overseer proposes the narrowest rule that covers them here." })]));
  } catch (e) { toast(e.message, true); }
}

async function acceptProposal(p, edited) {
  const body = { version: p.version };
  if (edited !== null) {
    try { body.rule = JSON.parse(edited); } catch (err) { toast("Not valid JSON: " + err.message, true); return; }
  }
  try {
    const res = await api("POST", `/ui/api/proposals/${encodeURIComponent(p.id)}/accept`, body);
    toast(`Accepted: rule ${res.rule.id} saved in your rules`);
    loadPolicy();
  } catch (e) { toast(e.message, true); }
}

async function dismissProposal(p) {
  try { await api("POST", `/ui/api/proposals/${encodeURIComponent(p.id)}/dismiss`, {}); toast("Dismissed"); loadProposals(); }
  catch (e) { toast(e.message, true); }
}

$("#replay").addEventListener("submit", async (e) => {
  e.preventDefault();
  let rule;
  try { rule = JSON.parse($("#replay-input").value); } catch (err) { toast("Not valid JSON: " + err.message, true); return; }
  try { $("#replay-out").replaceChildren(h("div", { class: "card" }, replayReport(await api("POST", "/ui/api/policy/replay", { rule })))); }
  catch (err) { toast(err.message, true); }
});

async function deleteRule(id) {
  if (!confirm(`Remove the rule ${id}?`)) return;
  try { await api("DELETE", `/ui/api/policy/rules/${encodeURIComponent(id)}`); toast("Removed"); loadPolicy(); }
  catch (e) { toast(e.message, true); }
}

$("#explain").addEventListener("submit", async (e) => {
  e.preventDefault();
  const out = $("#explain-out");
  let act;
  try { act = JSON.parse($("#explain-input").value); } catch (err) { toast("Not valid JSON: " + err.message, true); return; }
  try {
    const ex = await api("POST", "/ui/api/policy/explain", act);
    const v = ex.verdict;
    const trace = (steps, name) => steps && steps.length ? h("div", {}, h("h3", { text: name }),
      h("ol", { class: "trace" }, steps.map((s) => h("li", { class: s.matched ? "matched" : "nomatch" },
        h("code", { text: s.rule }), " ", levelBadge(s.level), " ", s.matched ? "matched" : "no match", s.why ? ` — ${s.why}` : "")))) : null;
    out.replaceChildren(h("div", { class: "card explain-result" },
      h("p", {}, "Verdict: ", levelBadge(v.level), " ", h("span", { text: v.decider ? `${v.decider.source}${v.decider.name ? " " + v.decider.name : ""}: ${v.decider.message}` : "" })),
      h("ul", { class: "reasons" }, (v.reasons || []).map((r) => h("li", {}, levelBadge(r.level), ` ${r.layer} ${r.source}${r.name ? " " + r.name : ""}: ${r.message}`))),
      v.preview ? h("p", { text: "Preview: " + v.preview.summary }) : null,
      trace(ex.admin, "Admin rules read"), trace(ex.user, "User rules read"),
      h("p", { class: "hint", text: `Default for this kind: ${ex.default}` })));
  } catch (err) { toast(err.message, true); }
});

// ---------------------------------------------------------------- dashboard

async function loadDashboard() {
  const days = $("#days").value;
  const bust = Date.now();
  for (const n of ["levels", "answers", "latency", "prompts"]) $(`#chart-${n}`).src = `/ui/charts/${n}.svg?days=${days}&t=${bust}`;
  try {
    const d = await api("GET", `/ui/api/dashboard?days=${days}`);
    const t = d.totals;
    $("#totals").replaceChildren(...[["actions", t.actions], ["asked a person", t.asked], ["approved", t.approved],
      ["denied", t.denied], ["blocked", t.blocked], ["timed out", t.timed_out]].map(([k, v]) =>
      h("div", { class: "total" }, h("b", { text: String(v) }), h("span", { class: "hint", text: k }))));
    $("#escalated").replaceChildren(d.escalated.length ? h("ol", { class: "timeline compact" }, d.escalated.map((e) =>
      h("li", {}, h("span", { class: "time", text: fmtTime(e.at) }), " ", h("code", { text: e.tool || e.rule_id }), " ",
        e.before ? levelBadge(e.before) : null, e.after ? [" → ", levelBadge(e.after)] : " reverted", " ", h("span", { text: e.reason }))))
      : h("p", { class: "hint", text: "No tool was escalated in this period." }));
  } catch (e) { toast(e.message, true); }
}
$("#days").addEventListener("change", loadDashboard);

// ---------------------------------------------------------------- MCP pins

// The MCP gateway's pinned definitions. A definition that changed since a
// person accepted it, or that carries text aimed at the model, waits here
// with what changed, field by field; Accept binds the answer to the exact
// definition shown (its hash). Definitions are the upstream's text:
// untrusted, only ever set as text.

let pinsVersion = "";
function onPins(ev) {
  const c = $("#mcp-count");
  c.hidden = !ev.pending;
  c.textContent = String(ev.pending || 0);
  if (ev.version !== pinsVersion && current === "mcp") loadPins();
}

function kindName(k) { return { prompt: "prompt", resource: "resource", resource_template: "resource template" }[k] || "tool"; }

// pinsLoads numbers the reads of the pins: answers can arrive out of order
// (an event's read started before an accept may end after the accept's),
// and only the latest read may draw, or the page would show a withheld
// definition that is no longer withheld.
let pinsLoads = 0;
async function loadPins() {
  const n = ++pinsLoads;
  let d;
  try { d = await api("GET", "/ui/api/mcp/pins"); } catch (e) { if (n === pinsLoads) toast(e.message, true); return; }
  if (n !== pinsLoads) return;
  pinsVersion = d.version;
  const pins = d.pins || [];
  const pending = pins.filter((p) => p.pending);
  const flagged = pins.filter((p) => !p.pending && p.flagged);
  $("#mcp-count").hidden = pending.length === 0;
  $("#mcp-count").textContent = String(pending.length);
  $("#mcp-pending").replaceChildren(...(pending.length ? pending.map(pendingCard)
    : [h("p", { class: "hint", id: "mcp-none", text: "Nothing is withheld. When an upstream changes what a tool, prompt or resource says, or offers one whose text is aimed at the model, it waits here." })]));
  $("#mcp-flagged").replaceChildren(...(flagged.length ? flagged.map(flaggedCard)
    : [h("p", { class: "hint", text: "None." })]));
  const servers = new Map();
  for (const p of pins) {
    if (!servers.has(p.server)) servers.set(p.server, []);
    servers.get(p.server).push(p);
  }
  $("#mcp-servers").replaceChildren(...(servers.size ? [...servers].map(([name, list]) => serverTable(name, list))
    : [h("p", { class: "hint", text: "No MCP server has been seen yet: run agents through `overseer mcp` (see the MCP integration guide)." })]));
}

function pinState(p) {
  if (p.pending) return h("span", { class: "badge bad", text: p.pending.reason === "poisoned" ? "withheld: suspicious" : "withheld: changed" });
  if (p.flagged) return h("span", { class: "badge warn", text: "flagged" });
  return h("span", { class: "badge ok", text: "pinned" });
}

function serverTable(name, list) {
  return h("div", { class: "card mcp-server", dataset: { server: name } },
    h("h3", {}, h("code", { text: name }), h("span", { class: "hint", text: ` · ${list.length} pinned` })),
    h("table", { class: "pins" },
      h("thead", {}, h("tr", {}, ["kind", "name", "state", "accepted"].map((x) => h("th", { text: x })))),
      h("tbody", {}, list.map((p) => h("tr", { dataset: { tool: p.tool, kind: kindName(p.kind) } },
        h("td", { text: kindName(p.kind) }), h("td", {}, h("code", { text: p.tool })), h("td", {}, pinState(p)),
        h("td", { class: "hint", text: p.accepted_by ? `${p.accepted_by} · ${fmtTime(p.accepted_at)}` : "never" }))))));
}

// wordDiff marks the words removed from a and added in b (longest common
// subsequence of words; long texts are compared as wholes).
function wordDiff(a, b) {
  const x = a.split(/(\s+)/), y = b.split(/(\s+)/);
  if (x.length * y.length > 4e6) return { old: [{ t: a, op: a === b ? "" : "del" }], cur: [{ t: b, op: a === b ? "" : "add" }] };
  const n = x.length, m = y.length;
  const t = Array.from({ length: n + 1 }, () => new Int32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) t[i][j] = x[i] === y[j] ? t[i + 1][j + 1] + 1 : Math.max(t[i + 1][j], t[i][j + 1]);
  const old = [], cur = [];
  let i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && x[i] === y[j]) { old.push({ t: x[i], op: "" }); cur.push({ t: y[j], op: "" }); i++; j++; }
    else if (j < m && (i === n || t[i][j + 1] >= t[i + 1][j])) cur.push({ t: y[j++], op: "add" });
    else old.push({ t: x[i++], op: "del" });
  }
  return { old, cur };
}

function marked(parts, cls) {
  return h("div", { class: `text ${cls}` }, parts.map((p) => p.op ? h(p.op === "add" ? "ins" : "del", { text: p.t }) : p.t));
}

function changeBlock(c, accepted) {
  const box = h("div", { class: "change", dataset: { field: c.field } }, h("h4", { text: c.field }));
  if (c.text) {
    const d = wordDiff(c.old, c.new);
    if (accepted) box.append(h("div", { class: "was" }, h("span", { class: "label", text: "accepted" }), c.old ? marked(d.old, "old") : h("div", { class: "text old hint", text: "(none)" })));
    box.append(h("div", { class: "now" }, h("span", { class: "label", text: accepted ? "now" : "says" }), c.new ? marked(d.cur, "new") : h("div", { class: "text new hint", text: "(none)" })));
  } else if (accepted) {
    box.append(diffBlock(c.diff || ""));
  } else {
    box.append(h("pre", { class: "json", text: c.new }));
  }
  return box;
}

function findingsList(r) {
  if (!r || !r.findings || !r.findings.length) return null;
  return h("ul", { class: "findings" }, r.findings.map((f) => h("li", {},
    h("b", { text: f.class }), " ", h("code", { text: f.rule }), ": ", h("q", { text: f.excerpt }))));
}

function pendingCard(p) {
  const accepted = !!p.hash;
  const card = h("article", { class: "card pin-pending", dataset: { server: p.server, tool: p.tool, kind: kindName(p.kind) } },
    h("header", {}, h("span", { class: "hint", text: kindName(p.kind) }), " ", h("code", { class: "pin-name", text: p.tool }),
      h("span", { class: "hint", text: " of server " }), h("code", { text: p.server }), " ", pinState(p)),
    h("p", { class: "why", text: p.why }),
    findingsList(p.pending.findings),
    h("p", { class: "hint", text: (!accepted ? "first seen " + fmtTime(p.first_seen) + "; "
      : p.accepted_by === "first sight" ? `pinned at first sight ${fmtTime(p.accepted_at)}; ` : `accepted ${fmtTime(p.accepted_at)} by ${p.accepted_by}; `) +
      `this definition seen ${fmtTime(p.pending.seen_at)} · ${p.pending.hash.slice(0, 12)}` }),
    h("div", { class: "changes" }, (p.changes || []).map((c) => changeBlock(c, accepted))));
  const btn = h("button", { class: "approve accept-pin", text: accepted ? "Accept the change" : "Accept this definition",
    onclick: () => acceptPin(p, btn) });
  card.append(h("div", { class: "row" }, btn,
    h("span", { class: "hint", text: "Agents are offered it again within seconds. Not sure? Leave it: it stays withheld." })));
  return card;
}

function flaggedCard(p) {
  return h("article", { class: "card pin-flagged", dataset: { server: p.server, tool: p.tool } },
    h("header", {}, h("span", { class: "hint", text: kindName(p.kind) }), " ", h("code", { text: p.tool }),
      h("span", { class: "hint", text: " of server " }), h("code", { text: p.server }), " ", pinState(p)),
    h("p", { class: "why", text: p.why }), findingsList(p.flagged));
}

async function acceptPin(p, btn) {
  btn.disabled = true;
  try {
    await api("POST", `/ui/api/mcp/pins/${encodeURIComponent(p.server)}/${encodeURIComponent(p.tool)}/accept`,
      { hash: p.pending.hash, kind: p.kind || "tool" });
    toast(`Accepted: ${kindName(p.kind)} ${p.tool} of ${p.server}`);
  } catch (e) {
    toast(e.message, true);
    btn.disabled = false;
  }
  loadPins();
}

// ---------------------------------------------------------------- alarms

// The daemon's alarms (the database's size over its threshold, for one)
// show as a banner above every page until they clear.
const ALARM_POLL_MS = 30000;
async function loadAlarms() {
  try {
    const d = await api("GET", "/ui/api/health");
    const list = d.alarms || [];
    $("#alarms").replaceChildren(...list.map((a) => h("div", { class: "banner error alarm", dataset: { alarm: a.name } },
      h("b", { text: "Alarm: " }), h("span", { text: a.message }), " ",
      h("span", { class: "hint", text: `(since ${fmtTime(a.since)})` }))));
    $("#alarms").hidden = list.length === 0;
  } catch (e) { /* signed out or the daemon is gone: the live dot says so */ }
}
setInterval(() => { if (!document.hidden) loadAlarms(); }, ALARM_POLL_MS);

// ---------------------------------------------------------------- start

route();
connect();
loadAlarms();

// ---------------------------------------------------------------- agents

// Earned trust: each agent's record and its promotion or demotion by the
// person signed in; the rollback of file writes found by ingest. Agent
// names, tools and summaries come from transcripts an agent may have
// written itself: they are only ever set as text.

async function loadAgents(name) {
  try {
    const list = await api("GET", "/ui/api/agents");
    $("#agents").replaceChildren(...(list.length ? list.map((t) => h("li", { dataset: { agent: t.agent } },
      h("a", { href: `#/agents/${encodeURIComponent(t.agent)}`, text: t.agent }), " ",
      h("span", { class: `mode mode-${t.mode}`, text: t.mode }),
      t.auto_tools ? h("span", { class: "hint", text: ` auto: ${t.auto_tools.join(", ")}` }) : null))
      : [h("p", { class: "hint", text: "No agent seen yet. overseer audit ingest reads what agents did without Overseer in the path." })]));
    if (name) await showAgent(name);
    else $("#agent-detail").replaceChildren();
  } catch (e) { toast(e.message, true); }
}

async function showAgent(name) {
  const r = await api("GET", `/ui/api/agents/${encodeURIComponent(name)}`);
  $("#agent-detail").replaceChildren(agentCard(r));
}

function agentCard(r) {
  const t = r.trust;
  const levels = Object.entries(r.verdicts || {}).map(([l, n]) => `${l} ${n}`).join(", ");
  const tools = Object.entries(r.tools || {}).sort().map(([k, n]) => `${k} ${n}`).join(", ");
  const card = h("div", { class: "card agent", dataset: { agent: r.agent } },
    h("h2", {}, r.agent, " ", h("span", { class: `mode mode-${t.mode}`, text: t.mode })),
    h("p", { text: `${r.actions} live and ${r.ingested} ingested actions; verdicts: ${levels || "none"}; ${r.refusals} refused by a person` }),
    h("p", { class: "hint", text: `tools: ${tools || "none"}` }),
    h("h3", { text: `Violations (${(r.violations || []).length})` }),
    h("ul", { class: "violations" }, (r.violations || []).map((v) => h("li", {},
      h("code", { text: v.action_id }), ` ${v.tool}: ${v.summary} (${v.source})`))),
    h("h3", { text: "Trust history" }),
    h("ol", { class: "timeline compact" }, (r.history || []).map((c) => h("li", {
      text: `${c.op} ${c.from} → ${c.to} by ${c.who}${c.reason ? ": " + c.reason : ""}` }))));
  const next = { audited: "delegated", delegated: "supervised" }[t.mode];
  const reason = h("input", { type: "text", placeholder: "reason (recorded)", "aria-label": "reason" });
  const accept = h("input", { type: "checkbox", id: "accept-violations" });
  const row = h("div", { class: "row" });
  if (next === "delegated" && r.proposal) {
    const p = r.proposal;
    card.append(h("h3", { text: "Proposed grant" }),
      h("p", { class: "proposal", text: `tools ${p.tools.join(", ") || "none"}; at most ${p.max_steps} steps and ${dur(p.max_duration / 1e6)} per session; built from ${p.basis} calls, ${p.basis_ingested} of them read from transcripts the agent could have written itself` }),
      p.excluded ? h("p", { class: "hint", text: `left out (a violation or refusal): ${p.excluded.join(", ")}` }) : null);
  }
  const boxes = [];
  if (next === "supervised") {
    const excluded = (r.proposal && r.proposal.excluded) || [];
    card.append(h("h3", { text: "Auto-approve these tools" }));
    const list = h("div", { class: "tools" });
    for (const tool of Object.keys(r.tools || {}).sort()) {
      const cb = h("input", { type: "checkbox", value: tool, disabled: excluded.includes(tool) });
      boxes.push(cb);
      list.append(h("label", {}, cb, " ", tool));
    }
    card.append(list);
  }
  if (next) {
    row.append(h("button", { class: "promote", text: `Promote to ${next}`, onclick: async () => {
      const body = { to: next, reason: reason.value, accept_violations: accept.checked };
      if (next === "supervised") body.tools = boxes.filter((b) => b.checked).map((b) => b.value);
      try { await api("POST", `/ui/api/agents/${encodeURIComponent(r.agent)}/promote`, body); toast(`${r.agent} promoted to ${next}`); loadAgents(r.agent); }
      catch (e) { toast(e.message, true); }
    } }));
  }
  row.append(h("button", { class: "secondary demote", text: "Demote", onclick: async () => {
    try { await api("POST", `/ui/api/agents/${encodeURIComponent(r.agent)}/demote`, { reason: reason.value }); toast(`${r.agent} demoted`); loadAgents(r.agent); }
    catch (e) { toast(e.message, true); }
  } }));
  card.append(reason, h("label", {}, accept, " promote although violations were found since your last decision"), row);
  return card;
}

async function showRollback(actionID) {
  try {
    const p = await api("GET", `/ui/api/ingested/${encodeURIComponent(actionID)}/rollback`);
    const body = h("div", {},
      h("p", { text: p.remove ? `The call created ${p.path}: rolling back removes it.` : `Rolling back gives ${p.path} the content it had before the call:` }),
      diffBlock(p.diff));
    openDialog("Roll back this write?", body, { label: "Roll back", run: async () => {
      try { await api("POST", `/ui/api/ingested/${encodeURIComponent(actionID)}/rollback`); toast("Rolled back"); loadAudit(); }
      catch (e) { toast(e.message, true); }
    } });
  } catch (e) { toast(e.message, true); }
}
