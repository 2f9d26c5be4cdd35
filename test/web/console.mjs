// Drives Overseer's web console in headless Chromium for the end-to-end
// test (console_test.go). Talks to the Go test over a line protocol:
//
//   stdout: READY | SEEN <approval id> | CARD <json> | DONE <approval id> | SHOT <file> | ERROR <text>
//           (and the answers to the task commands below)
//   stdin:  APPROVE            wait for a request in the queue, say what its card shows
//                              (CARD {id, cwd, cwdAboveCommand, meta, clock}), approve it by clicking
//           DENY <reason>      wait for a request, deny it with the keyboard (d, reason, Enter)
//           GONE <id>          wait until a request leaves the queue by itself: GONE <id>
//           PHONEQUEUE         the queue on a phone-sized screen: PHONEQUEUE {buttons: [{text, height}],
//                              keyHints, pageHint, cwd, overflow}
//           AUDIT              the audit page's answer rows: AUDIT [{summary, badge}]
//           SHOTS <dir>        take a screenshot of every page into <dir>
//           LINK <url> <file>  open an approval link, screenshot it, press its button
//           TASKLIST <n>       open the Tasks page, wait for n tasks: LIST <json>
//           TASK <id>          open a task's detail: TASK <json>
//           ABORT <id> <status> <aborts>
//                              press the task's Abort button and confirm; wait until it shows
//                              that status and that many abort requests: ABORTED <json>
//           JUMP <id> <apr>    follow the waiting task's link to its approval: JUMPED <apr>
//           PHONE <id> [dir]   the Tasks page and a task on a phone-sized screen: PHONE <json>
//                              (with dir: screenshots tasks.png, task.png, phone-tasks.png, phone-task.png)
//           PROPOSALS [file] the Policy page's proposed rules: screenshot one (into file),
//                              accept it by clicking: ACCEPTED <json>
//           ALARM [file]       reload the console, wait for the alarm banner: ALARM <its text>
//                              (with file: a screenshot of the page there)
//           MCPOPEN            open the MCP page, wait until it is drawn: MCPOPEN <json> (what it says)
//           MCPACCEPT <tool> [file]
//                              on the open MCP page, wait (live, without reloading) for the
//                              withheld definition of <tool>, read its card, screenshot the page
//                              (into file), click Accept: MCPACCEPTED <json>
//           GRANT <dir> [file] the Delegation page: issue a grant (claude-code sub-agents, file_read
//                              read-only under <dir>, 4 steps, 1h) with the form, screenshot it (into
//                              file), revoke it by clicking: GRANTED {row, after}
//           AGENTS           the Agents page: open the first agent, promote it (to delegated) and
//                              demote it by clicking: AGENTS {name, first, promoted, demoted, pwned}
//           ROLLBACK         the audit view's first "Roll back…" button: confirm, wait: ROLLEDBACK <toast>
//           LIMITS [file]      the Limits page: the budget banner, paused agents, gauges, the cost
//                              chart (screenshot into file); add a rate limit with the form and
//                              resume the paused agent with its button: LIMITS <json>
//           CONTROLS [dir]     the Unattended page: build a pattern rule (shell, "prod", require_approval),
//                              dry-run it, save it; read the anomaly timeline: CONTROLS {dry: {summary,
//                              rows: [{action, with, what}]}, rules: [names], events: [{id, text}]}
//                              (with dir: screenshots controls.png and controls-dryrun.png)
//           PANES <waiting pane> [file]
//                              the Panes page: wait until the waiting pane links to its request,
//                              read every pane's row (screenshot into file), follow the link, approve
//                              the request in the queue by clicking, come back and wait until the pane
//                              shows "answered": PANES {before: [{id, state, text}], link, approval, after}
//           QUIT
//
// Environment: OVERSEER_URL (base URL), OVERSEER_TOKEN, CHROMIUM (default
// /usr/bin/chromium), PLAYWRIGHT_DIR (where playwright-core is installed).
import { createRequire } from "node:module";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import readline from "node:readline";

const require = createRequire(import.meta.url);
const pwDir = process.env.PLAYWRIGHT_DIR;
const { chromium } = require(pwDir ? path.join(pwDir, "node_modules", "playwright-core") : "playwright-core");

const base = process.env.OVERSEER_URL;
const token = process.env.OVERSEER_TOKEN;
const say = (line) => process.stdout.write(line + "\n");

// Each browser context gets a fresh, empty profile directory.
const profiles = [];
async function launch(viewport) {
  const dir = mkdtempSync(path.join(tmpdir(), "overseer-chromium-"));
  profiles.push(dir);
  return chromium.launchPersistentContext(dir, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    viewport,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
}

const ctx = await launch({ width: 1280, height: 900 });

async function finish(code) {
  await ctx.close().catch(() => {});
  for (const d of profiles) rmSync(d, { recursive: true, force: true });
  process.exit(code);
}

process.on("unhandledRejection", async (e) => { say("ERROR " + String(e && e.stack || e).replace(/\n/g, " | ")); await finish(1); });

const page = ctx.pages()[0] || await ctx.newPage();
page.on("pageerror", (e) => say("ERROR page: " + e.message));
page.on("console", (m) => { if (m.type() === "error") say("WARN console: " + m.text()); });

// Sign in.
await page.goto(base + "/ui/");
await page.waitForURL(/\/ui\/login$/);
await page.fill("#token", token);
await page.fill("#who", "alice");
await page.click("button[type=submit]");
await page.waitForURL(/\/ui\/$/);
await page.waitForSelector('body[data-live="on"]', { timeout: 20000 });
say("READY");

async function nextItem() {
  const el = await page.waitForSelector("article.item:not(.done)", { timeout: 60000 });
  const id = await el.getAttribute("data-id");
  say("SEEN " + id);
  return id;
}

// card reads what a request's card shows a person.
async function card(p, id) {
  return p.evaluate((id) => {
    const el = document.querySelector(`article.item[data-id="${id}"]`);
    const where = el.querySelector(".where"), main = el.querySelector(".main");
    const visible = (e) => !!e && e.getBoundingClientRect().height > 0 && getComputedStyle(e).visibility !== "hidden";
    return {
      id, cwd: where ? where.querySelector(".cwd").textContent : "", cwdVisible: visible(where),
      cwdAboveCommand: !!where && !!main && where.getBoundingClientRect().bottom <= main.getBoundingClientRect().top,
      cwdFontPx: where ? parseFloat(getComputedStyle(where.querySelector(".cwd")).fontSize) : 0,
      meta: el.querySelector("header .meta").textContent, clock: el.querySelector("header .clock").textContent,
    };
  }, id);
}

// phoneQueue opens the queue on a phone-sized screen and measures it.
async function phoneQueue() {
  const p = await ctx.newPage();
  p.on("pageerror", (e) => say("ERROR phone page: " + e.message));
  await p.setViewportSize({ width: 390, height: 844 });
  await p.goto(base + "/ui/#/queue");
  await p.waitForSelector('body[data-live="on"]');
  const el = await p.waitForSelector("article.item", { timeout: 20000 });
  const id = await el.getAttribute("data-id");
  const out = await p.evaluate(() => {
    const item = document.querySelector("article.item");
    const shown = (e) => e.getClientRects().length > 0 && getComputedStyle(e).display !== "none";
    return {
      buttons: [...item.querySelectorAll(".answer .buttons button")].map((b) => ({
        text: b.innerText.trim(), height: b.getBoundingClientRect().height, right: b.getBoundingClientRect().right })),
      keyHints: [...document.querySelectorAll(".key, .pagehead .hint")].filter(shown).map((e) => e.textContent),
      placeholder: item.querySelector("textarea.reason").placeholder,
      overflow: document.documentElement.scrollWidth - window.innerWidth,
    };
  });
  out.card = await card(p, id);
  await p.close();
  return out;
}

async function shots(dir) {
  const shot = async (name, p = page) => {
    await p.evaluate(() => { const t = document.querySelector("#toast"); if (t) t.hidden = true; });
    const file = path.join(dir, name);
    await p.screenshot({ path: file, fullPage: true });
    say("SHOT " + file);
  };
  await page.goto(base + "/ui/#/queue");
  await page.waitForSelector('body[data-live="on"]');
  await page.waitForSelector("article.item", { timeout: 20000 }).catch(() => {});
  await page.waitForTimeout(300);
  await shot("queue.png");

  // The queue with "remember as a rule" open: the proposed rule, editable.
  const first = await page.$("article.item");
  if (first) {
    await page.click("article.item header");
    await page.keyboard.press("r");
    await page.keyboard.press("r");
    await page.waitForSelector("article.item.selected .rule-editor:not([hidden])");
    await first.screenshot({ path: path.join(dir, "queue-remember.png") });
    say("SHOT " + path.join(dir, "queue-remember.png"));
    await page.keyboard.press("r");
  }

  await page.goto(base + "/ui/#/audit");
  await page.waitForSelector("#audit li");
  await page.waitForSelector("#verify.ok, #verify.bad");
  const row = await page.$("#audit li .line");
  if (row) await row.click();
  await shot("audit.png");

  await page.goto(base + "/ui/#/policy");
  await page.waitForSelector("#admin-rules table, #admin-rules p");
  await page.fill("#explain-input", JSON.stringify({ tool: "Bash", args: { command: "rm -rf build && git push --force" } }));
  await page.click("#explain button[type=submit]");
  await page.waitForSelector(".explain-result");
  await shot("policy.png");

  await page.goto(base + "/ui/#/dashboard");
  await page.waitForSelector("#totals .total");
  await page.waitForFunction(() => [...document.querySelectorAll(".charts img")].every((i) => i.complete && i.naturalWidth > 0));
  await shot("dashboard.png");

  const phone = await ctx.newPage();
  await phone.setViewportSize({ width: 390, height: 844 });
  await phone.goto(base + "/ui/#/queue");
  await phone.waitForSelector('body[data-live="on"]');
  await phone.waitForSelector("article.item", { timeout: 20000 }).catch(() => {});
  await phone.screenshot({ path: path.join(dir, "phone-queue.png"), fullPage: false });
  say("SHOT " + path.join(dir, "phone-queue.png"));
  await phone.close();
  await page.goto(base + "/ui/#/queue");
}

// ---- the Tasks page

async function taskList(p, n) {
  await p.goto(base + "/ui/#/tasks");
  await p.waitForFunction((n) => document.querySelectorAll("#tasks li.task-row").length >= n, n, { timeout: 20000 });
  return p.evaluate(() => ({
    rows: [...document.querySelectorAll("#tasks li.task-row")].map((li) => ({
      id: li.dataset.id, status: li.querySelector(".st").textContent, goal: li.querySelector(".goal").textContent,
      meta: li.querySelector(".meta").textContent, live: !!li.querySelector(".runner"),
      waits: (li.querySelector("a.waits") || { getAttribute: () => "" }).getAttribute("href"),
    })),
    // Markup in a goal must stay text: no element made from it, no script run.
    injected: !!window.__pwned || document.querySelectorAll("#tasks script, #tasks img, #tasks b.x").length > 0,
  }));
}

async function openTask(p, id) {
  await p.goto(base + "/ui/#/tasks/" + encodeURIComponent(id));
  await p.waitForSelector(`.task-detail[data-id="${id}"]`, { timeout: 20000 });
}

async function taskDetail(p, id) {
  await openTask(p, id);
  return p.evaluate(() => {
    const d = document.querySelector(".task-detail");
    const text = (el) => (el ? el.textContent.trim() : "");
    const facts = {};
    for (const dt of d.querySelectorAll(".facts dt")) facts[dt.textContent] = dt.nextElementSibling.textContent;
    return {
      status: d.dataset.status, goal: text(d.querySelector("h1.goal")), facts,
      plan: [...d.querySelectorAll(".plan li")].map((li) => ({ title: text(li.querySelector("span")), checked: li.querySelector("input").checked })),
      decisions: [...d.querySelectorAll(".decisions li")].map(text),
      steps: [...d.querySelectorAll(".steps li.step")].map((li) => ({
        n: Number(li.dataset.n), tool: text(li.querySelector(".tool")), outcome: text(li.querySelector(".oc")),
        human: text(li.querySelector(".human span")), note: text(li.querySelector(".note")),
        output: text(li.querySelector("pre.output")), full: !!li.querySelector("details pre.output"),
      })),
      waiting: text(d.querySelector(".waiting")),
      approval: (d.querySelector("#task-approval") || { getAttribute: () => "" }).getAttribute("href"),
      abort: text(d.querySelector("#task-abort")),
      injected: !!window.__pwned || d.querySelectorAll("script, img, b.x").length > 0,
    };
  });
}

async function abortTask(id, status, aborts) {
  await openTask(page, id);
  const before = (await page.textContent("#task-abort")).trim();
  await page.click("#task-abort");
  await page.waitForSelector("#dialog[open]");
  const title = (await page.textContent("#dialog-title")).trim();
  const body = (await page.textContent("#dialog-body")).trim();
  await page.click("#dialog-ok");
  await page.waitForFunction(([id, status, aborts]) => {
    const d = document.querySelector(`.task-detail[data-id="${id}"]`);
    if (!d || d.dataset.status !== status) return false;
    const dt = [...d.querySelectorAll(".facts dt")].find((x) => x.textContent === "abort requests");
    return dt && dt.nextElementSibling.textContent === aborts;
  }, [id, status, aborts], { timeout: 20000 });
  const btn = await page.$("#task-abort");
  return { before, title, body, after: btn ? (await btn.textContent()).trim() : "", toast: (await page.textContent("#toast")).trim() };
}

async function phoneTasks(id, dir) {
  const p = await ctx.newPage();
  p.on("pageerror", (e) => say("ERROR phone page: " + e.message));
  await p.setViewportSize({ width: 390, height: 844 });
  const overflow = () => p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  const quiet = (q) => q.evaluate(() => { const t = document.querySelector("#toast"); if (t) t.hidden = true; });
  await p.goto(base + "/ui/#/tasks");
  await p.waitForSelector("#tasks li.task-row", { timeout: 20000 });
  const list = await overflow();
  if (dir) { await quiet(p); await p.screenshot({ path: path.join(dir, "phone-tasks.png") }); say("SHOT " + path.join(dir, "phone-tasks.png")); }
  await openTask(p, id);
  const detail = await overflow();
  const button = await p.evaluate(() => { const b = document.querySelector("#task-abort"); return b ? b.getBoundingClientRect().right <= window.innerWidth : true; });
  if (dir) { await quiet(p); await p.screenshot({ path: path.join(dir, "phone-task.png"), fullPage: true }); say("SHOT " + path.join(dir, "phone-task.png")); }
  await p.close();
  if (dir) {
    await page.goto(base + "/ui/#/tasks");
    await page.waitForSelector("#tasks li.task-row");
    await quiet(page);
    await page.screenshot({ path: path.join(dir, "tasks.png"), fullPage: true }); say("SHOT " + path.join(dir, "tasks.png"));
    await openTask(page, id);
    await quiet(page);
    await page.screenshot({ path: path.join(dir, "task.png"), fullPage: true }); say("SHOT " + path.join(dir, "task.png"));
  }
  return { list, detail, button };
}

const rl = readline.createInterface({ input: process.stdin });
for await (const line of rl) {
  const [cmd, ...rest] = line.trim().split(" ");
  if (cmd === "APPROVE") {
    await page.goto(base + "/ui/#/queue").catch(() => {});
    const id = await nextItem();
    say("CARD " + JSON.stringify(await card(page, id)));
    await page.click(`article.item[data-id="${id}"] button.approve`);
    await page.waitForSelector(`article.item[data-id="${id}"]`, { state: "detached", timeout: 20000 });
    say("DONE " + id);
  } else if (cmd === "DENY") {
    const id = await nextItem();
    await page.click(`article.item[data-id="${id}"] header`);
    await page.keyboard.press("d");
    await page.waitForFunction(() => document.activeElement && document.activeElement.classList.contains("reason"));
    await page.keyboard.type(rest.join(" "));
    await page.keyboard.press("Enter");
    await page.waitForSelector(`article.item[data-id="${id}"]`, { state: "detached", timeout: 20000 });
    say("DONE " + id);
  } else if (cmd === "GONE") {
    await page.goto(base + "/ui/#/queue").catch(() => {});
    await page.waitForSelector(`article.item[data-id="${rest[0]}"]`, { timeout: 20000 });
    await page.waitForSelector(`article.item[data-id="${rest[0]}"]`, { state: "detached", timeout: 30000 });
    say("GONE " + rest[0]);
  } else if (cmd === "PHONEQUEUE") {
    say("PHONEQUEUE " + JSON.stringify(await phoneQueue()));
  } else if (cmd === "AUDIT") {
    await page.goto(base + "/ui/#/audit");
    await page.waitForSelector("#audit li .type");
    await page.waitForFunction(() => [...document.querySelectorAll("#audit li")].filter((li) => li.querySelector(".type").textContent === "answer").length >= 2);
    say("AUDIT " + JSON.stringify(await page.evaluate(() => [...document.querySelectorAll("#audit li")]
      .filter((li) => li.querySelector(".type").textContent === "answer")
      .map((li) => ({ summary: li.querySelector(".sum").textContent, badge: (li.querySelector(".ans") || { textContent: "" }).textContent,
        level: !!li.querySelector(".lvl") })))));
    await page.goto(base + "/ui/#/queue");
  } else if (cmd === "SHOTS") {
    await shots(rest[0]);
    say("DONE shots");
  } else if (cmd === "LINK") {
    // A fresh context: the link needs no session.
    const anon = await launch({ width: 390, height: 844 });
    const p = await anon.newPage();
    await p.goto(rest[0]);
    await p.waitForSelector("#link-submit");
    if (rest[1]) { await p.screenshot({ path: rest[1], fullPage: true }); say("SHOT " + rest[1]); }
    await p.click("#link-submit");
    await p.waitForSelector("#link-title");
    say("DONE " + (await p.textContent("#link-title")).trim());
    await anon.close();
  } else if (cmd === "TASKLIST") {
    say("LIST " + JSON.stringify(await taskList(page, Number(rest[0]))));
  } else if (cmd === "TASK") {
    say("TASK " + JSON.stringify(await taskDetail(page, rest[0])));
  } else if (cmd === "ABORT") {
    say("ABORTED " + JSON.stringify(await abortTask(rest[0], rest[1], rest[2])));
  } else if (cmd === "JUMP") {
    await openTask(page, rest[0]);
    await page.click("#task-approval");
    await page.waitForSelector(`article.item.selected[data-id="${rest[1]}"]`, { timeout: 20000 });
    say("JUMPED " + (await page.getAttribute("article.item.selected", "data-id")));
  } else if (cmd === "PHONE") {
    say("PHONE " + JSON.stringify(await phoneTasks(rest[0], rest[1])));
  } else if (cmd === "PROPOSALS") {
    // The Policy page's proposed rules: shot (when a file is given), then
    // accept the first one by clicking.
    await page.goto(base + "/ui/#/policy");
    await page.waitForSelector("#proposals .proposal", { timeout: 20000 });
    const title = (await page.textContent("#proposals .proposal b")).trim();
    const dry = (await page.textContent("#proposals .proposal .dryrun")).replace(/\s+/g, " ").trim();
    if (rest[0]) { await page.screenshot({ path: rest[0], fullPage: true }); say("SHOT " + rest[0]); }
    await page.click("#proposals .proposal button:has-text('Accept')");
    await page.waitForFunction(() => /learned-/.test(document.querySelector("#user-rules").textContent), null, { timeout: 20000 });
    // The proposals list is drawn again after the rules: wait for it.
    await page.waitForFunction(() => !document.querySelector("#proposals .proposal"), null, { timeout: 20000 }).catch(() => {});
    say("ACCEPTED " + JSON.stringify({ title, dry, empty: (await page.textContent("#proposals")).trim() }));
  } else if (cmd === "CONTROLS") {
    await page.goto(base + "/ui/#/controls");
    await page.waitForSelector("#anomaly-events li", { timeout: 20000 });
    const f = "#rule-builder";
    await page.fill(`${f} [name=name]`, "no prod");
    await page.selectOption(`${f} [name=ttype]`, "pattern_match");
    await page.fill(`${f} [name=tool]`, "shell");
    await page.fill(`${f} [name=text]`, "prod");
    await page.selectOption(`${f} [name=atype]`, "require_approval");
    await page.click("#rule-test");
    await page.waitForSelector("#rule-test-out .summary", { timeout: 20000 });
    const dry = await page.evaluate(() => ({
      summary: document.querySelector("#rule-test-out .summary").textContent,
      rows: [...document.querySelectorAll("#rule-test-out tbody tr")].map((tr) => ({
        action: tr.dataset.action, with: tr.cells[5].textContent.trim(), what: tr.cells[6].textContent.trim() })),
    }));
    if (rest[0]) { await page.screenshot({ path: path.join(rest[0], "controls-dryrun.png"), fullPage: true }); say("SHOT controls-dryrun.png"); }
    await page.click("#rule-save");
    await page.waitForFunction(() => /no prod/.test(document.querySelector("#auto-rules").textContent), null, { timeout: 20000 });
    const out = await page.evaluate(() => ({
      rules: [...document.querySelectorAll("#auto-rules tr[data-id] td:nth-child(2)")].map((td) => td.textContent),
      events: [...document.querySelectorAll("#anomaly-events li.event")].map((li) => ({ id: li.dataset.id, text: li.textContent.replace(/\s+/g, " ").trim() })),
    }));
    if (rest[0]) { await page.screenshot({ path: path.join(rest[0], "controls.png"), fullPage: true }); say("SHOT controls.png"); }
    say("CONTROLS " + JSON.stringify({ dry, ...out }));
  } else if (cmd === "ALARM") {
    await page.goto(base + "/ui/#/queue");
    const el = await page.waitForSelector("#alarms .alarm", { state: "visible", timeout: 20000 });
    if (rest[0]) { await page.screenshot({ path: rest[0] }); say("SHOT " + rest[0]); }
    say("ALARM " + (await el.textContent()).replace(/\s+/g, " ").trim());
  } else if (cmd === "MCPOPEN") {
    await page.goto(base + "/ui/#/mcp");
    await page.waitForSelector("#mcp-pending > *", { timeout: 20000 });
    say("MCPOPEN " + JSON.stringify({ pending: (await page.textContent("#mcp-pending")).replace(/\s+/g, " ").trim(),
      servers: (await page.textContent("#mcp-servers")).replace(/\s+/g, " ").trim() }));
  } else if (cmd === "MCPACCEPT") {
    const sel = `#mcp-pending .pin-pending[data-tool="${rest[0]}"]`;
    const card = await page.waitForSelector(sel, { timeout: 30000 });
    const info = await card.evaluate((el) => ({
      why: el.querySelector(".why").textContent,
      findings: [...el.querySelectorAll(".findings li")].map((li) => li.textContent),
      changes: [...el.querySelectorAll(".change")].map((c) => ({ field: c.dataset.field,
        old: (c.querySelector(".was .text") || { textContent: "" }).textContent,
        now: (c.querySelector(".now .text") || { textContent: "" }).textContent,
        ins: [...c.querySelectorAll("ins")].map((x) => x.textContent).join(""),
        del: [...c.querySelectorAll("del")].map((x) => x.textContent).join(""),
        diff: (c.querySelector("pre.diff") || { textContent: "" }).textContent })),
      count: document.querySelector("#mcp-count").textContent,
      button: el.querySelector("button.accept-pin").textContent,
    }));
    if (rest[1]) { await page.screenshot({ path: rest[1], fullPage: true }); say("SHOT " + rest[1]); }
    await page.click(sel + " button.accept-pin");
    await page.waitForSelector("#mcp-none", { timeout: 20000 });
    info.after = (await page.textContent(`#mcp-servers tr[data-tool="${rest[0]}"]`)).replace(/\s+/g, " ").trim();
    say("MCPACCEPTED " + JSON.stringify(info));
  } else if (cmd === "GRANT") {
    await page.goto(base + "/ui/#/delegation");
    await page.waitForSelector("#grant-form", { state: "visible", timeout: 20000 });
    const f = "#grant-form ";
    await page.fill(f + "input[name=agent]", "claude-code");
    await page.fill(f + "input[name=subagent_type]", "*");
    await page.fill(f + "input[name=kinds]", "file_read");
    await page.fill(f + "input[name=under]", rest[0]);
    await page.fill(f + "input[name=steps]", "4");
    await page.fill(f + "input[name=ttl]", "1h");
    await page.click(f + "button[type=submit]");
    const row = await page.waitForSelector("#grants .grant", { timeout: 20000 });
    const text = (await row.textContent()).replace(/\s+/g, " ").trim();
    if (rest[1]) { await page.screenshot({ path: rest[1], fullPage: true }); say("SHOT " + rest[1]); }
    page.once("dialog", (d) => d.accept());
    await page.click("#grants .grant button.revoke");
    await page.waitForFunction(() => !document.querySelector("#grants .grant"), null, { timeout: 20000 });
    say("GRANTED " + JSON.stringify({ row: text, after: (await page.textContent("#grants")).trim() }));
  } else if (cmd === "AGENTS") {
    await page.goto(base + "/ui/#/agents");
    await page.click("#agents li a", { timeout: 20000 });
    await page.waitForSelector("#agent-detail .agent", { timeout: 20000 });
    const modeIs = (m) => page.waitForFunction((m) => {
      const e = document.querySelector("#agent-detail .agent h2 .mode"); return e && e.textContent === m; }, m, { timeout: 20000 });
    const name = await page.getAttribute("#agent-detail .agent", "data-agent");
    const first = (await page.textContent("#agent-detail .agent h2 .mode")).trim();
    await page.click("#agent-detail button.promote");
    await modeIs("delegated");
    const promoted = (await page.textContent("#agent-detail .agent")).replace(/\s+/g, " ");
    await page.click("#agent-detail button.demote");
    await modeIs("audited");
    say("AGENTS " + JSON.stringify({ name, first, promoted, demoted: "audited",
      pwned: await page.evaluate(() => window.__pwned || 0) }));
  } else if (cmd === "ROLLBACK") {
    await page.goto(base + "/ui/#/audit");
    await page.click("#audit button.undo:has-text('Roll back')", { timeout: 20000 });
    await page.waitForSelector("#dialog[open] #dialog-ok", { timeout: 20000 });
    await page.click("#dialog-ok");
    await page.waitForFunction(() => /Rolled back/.test(document.querySelector("#toast").textContent), null, { timeout: 20000 });
    say("ROLLEDBACK " + (await page.textContent("#toast")).trim());
  } else if (cmd === "LIMITS") {
    await page.goto(base + "/ui/#/limits");
    await page.waitForSelector("#paused .paused-agent", { timeout: 20000 });
    await page.waitForSelector("#budget-banner .budget-alert", { state: "visible", timeout: 20000 });
    await page.waitForSelector("#rate-limits .limit meter", { timeout: 20000 });
    await page.waitForSelector("#budget-caps .cap meter", { timeout: 20000 });
    if (rest[0]) { await page.screenshot({ path: rest[0], fullPage: true }); say("SHOT " + rest[0]); }
    const got = await page.evaluate(() => ({
      banner: document.querySelector("#budget-banner").textContent.replace(/\s+/g, " ").trim(),
      paused: [...document.querySelectorAll("#paused .paused-agent")].map((li) => ({ agent: li.dataset.agent, text: li.textContent.replace(/\s+/g, " ").trim() })),
      pausedCount: document.querySelector("#paused-count").textContent,
      gauges: [...document.querySelectorAll("#page-limits .gauge")].map((g) => ({ value: g.querySelector("meter").value, max: g.querySelector("meter").max, text: g.querySelector(".gauge-text").textContent })),
      bars: document.querySelectorAll("#cost-chart rect.bar").length,
      totals: document.querySelector("#budget-totals").textContent.replace(/\s+/g, " ").trim(),
    }));
    await page.fill("#limit-form input[name=tool]", "WebFetch");
    await page.selectOption("#limit-form select[name=effect]", "new_host");
    await page.fill("#limit-form input[name=max_calls]", "5");
    await page.selectOption("#limit-form select[name=action_on_limit]", "ask");
    await page.click("#limit-form button[type=submit]");
    await page.waitForFunction(() => document.querySelectorAll("#rate-limits .limit").length === 2, null, { timeout: 20000 });
    got.limits = await page.evaluate(() => [...document.querySelectorAll("#rate-limits .limit")].map((l) => l.textContent.replace(/\s+/g, " ").trim()));
    await page.click("#paused .paused-agent button.resume");
    await page.waitForFunction(() => !document.querySelector("#paused .paused-agent"), null, { timeout: 20000 });
    got.afterResume = (await page.textContent("#paused")).trim();
    say("LIMITS " + JSON.stringify(got));
  } else if (cmd === "PANES") {
    const row = `#panes-list tr[data-pane="${rest[0]}"]`;
    const rows = () => page.evaluate(() => [...document.querySelectorAll("#panes-list tr[data-pane]")].map((tr) => ({
      id: tr.dataset.pane, state: tr.querySelector(".badge").textContent, text: tr.textContent.replace(/\s+/g, " ").trim() })));
    await page.goto(base + "/ui/#/panes");
    await page.waitForSelector(row + " a.pane-request", { timeout: 60000 });
    const before = await rows();
    if (rest[1]) { await page.screenshot({ path: rest[1], fullPage: true }); say("SHOT " + rest[1]); }
    const link = await page.getAttribute(row + " a.pane-request", "href");
    const approval = decodeURIComponent(link.replace(/^#\/queue\//, ""));
    await page.click(row + " a.pane-request");
    await page.waitForSelector(`article.item.selected[data-id="${approval}"]`, { timeout: 20000 });
    await page.click(`article.item[data-id="${approval}"] button.approve`);
    await page.waitForSelector(`article.item[data-id="${approval}"]`, { state: "detached", timeout: 20000 });
    await page.goto(base + "/ui/#/panes");
    await page.waitForFunction((sel) => { const b = document.querySelector(sel + " .badge"); return b && b.textContent === "answered"; }, row, { timeout: 30000 });
    say("PANES " + JSON.stringify({ before, link, approval, after: await rows() }));
  } else if (cmd === "QUIT") {
    break;
  }
}
await finish(0);
