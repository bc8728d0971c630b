// sayso sandbox page: a simplified Slack client for the local emulator.
// Vanilla JS, no build step, no external URLs. State comes from Server-Sent Events at
// /sandbox/events?user=... (falling back to polling /sandbox/state); actions go through
// POST /sandbox/ui/*. Test hooks are data-testid attributes (see bot/sandbox/README.md).
"use strict";

const ACTORS = [
  ["U_REQUESTER", "requester"],
  ["U_APPROVER", "approver"],
  ["U_APPROVER2", "approver"],
  ["U_MEMBER", "member"],
  ["U_GUEST", "guest"],
  ["U_EXTERNAL", "external"],
];

const params = new URLSearchParams(location.search);
const ui = {
  user: params.get("user") || localStorage.getItem("sandbox.user") || "U_REQUESTER",
  channel: params.get("channel") || "C_GENERAL",
  tab: "channel", // or "home"
  threadTs: null,
  state: null,
  source: null,
  modalKey: null,
  lastCount: 0,
};

const $ = (id) => document.getElementById(id);

// ---------------------------------------------------------------------------------------
// Helpers

function esc(s) {
  return String(s ?? "")
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;");
}

function unescapeSlack(s) {
  return String(s ?? "").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "html") node.innerHTML = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k.startsWith("data") && k !== "data") node.setAttribute(k.replace(/[A-Z]/g, (c) => "-" + c.toLowerCase()), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function person(id) {
  const people = (ui.state && ui.state.people) || [];
  return people.find((p) => p.id === id);
}

function displayName(id) {
  if (id === "USLACKBOT") return "Slackbot";
  const p = person(id);
  return p ? p.real_name : id;
}

function groupHandle(id) {
  const g = ((ui.state && ui.state.groups) || []).find((x) => x.id === id);
  return g ? g.handle : id;
}

function channelName(id) {
  const c = ((ui.state && ui.state.channels) || []).find((x) => x.id === id);
  return c ? c.name : id;
}

function timeOf(ts) {
  const d = new Date(parseFloat(ts) * 1000);
  return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

const EMOJI = {
  "+1": "👍", "-1": "👎", alarm_clock: "⏰", arrow_right: "➡️", arrows_counterclockwise: "🔄",
  bell: "🔔", bulb: "💡", calendar: "📅", clipboard: "📋", clock3: "🕒", construction: "🚧",
  email: "📧", envelope: "✉️", eyes: "👀", fire: "🔥", gear: "⚙️", hammer_and_wrench: "🛠️",
  heavy_check_mark: "✔️", hourglass: "⌛", hourglass_flowing_sand: "⏳", information_source: "ℹ️",
  large_green_circle: "🟢", lock: "🔒", mag: "🔍", memo: "📝", no_entry: "⛔", no_entry_sign: "🚫",
  octagonal_sign: "🛑", package: "📦", pencil2: "✏️", question: "❓", raising_hand: "🙋",
  red_circle: "🔴", repeat: "🔁", robot_face: "🤖", rocket: "🚀", sparkles: "✨", speech_balloon: "💬",
  stopwatch: "⏱️", tada: "🎉", thumbsup: "👍", thumbsdown: "👎", ticket: "🎫", warning: "⚠️",
  wave: "👋", white_check_mark: "✅", x: "❌", zzz: "💤", broom: "🧹", link: "🔗", key: "🔑",
  shield: "🛡️", busts_in_silhouette: "👥", bust_in_silhouette: "👤", inbox_tray: "📥",
  outbox_tray: "📤", leftwards_arrow_with_hook: "↩️", heavy_plus_sign: "➕", pause_button: "⏸️",
  arrow_forward: "▶️", stop_button: "⏹️", skull: "💀", boom: "💥", ok: "🆗", new: "🆕",
};

function emoji(html) {
  return html.replace(/:([a-z0-9_+-]+):/g, (m, name) => EMOJI[name] || m);
}

// ---------------------------------------------------------------------------------------
// mrkdwn -> HTML: *bold* _italic_ ~strike~ `code` ```blocks``` > quotes, <@U..> <#C..|n>
// <!subteam^S..|@h> <!here> <url|text> <url>, and Slack's &lt; &gt; &amp; escapes.

function entity(inner) {
  const [target, label] = inner.split("|", 2);
  if (target.startsWith("@")) {
    const name = label || displayName(target.slice(1));
    return `<span class="mention">@${esc(name)}</span>`;
  }
  if (target.startsWith("#")) return `<span class="mention">#${esc(label || channelName(target.slice(1)))}</span>`;
  if (target.startsWith("!subteam^")) {
    const name = label || "@" + groupHandle(target.slice(9));
    return `<span class="mention">${esc(name)}</span>`;
  }
  if (target.startsWith("!date^")) return esc(label || target.split("^")[1]);
  if (target.startsWith("!")) return `<span class="mention">@${esc(label || target.slice(1))}</span>`;
  const href = unescapeSlack(target);
  const safe = /^(https?:|mailto:)/i.test(href) ? href : "#";
  return `<a href="${esc(safe)}" target="_blank" rel="noopener">${esc(unescapeSlack(label || target))}</a>`;
}

function mrkdwn(text) {
  const held = [];
  const hold = (html) => `\u0000${held.push(html) - 1}\u0000`;
  let s = String(text ?? "");
  s = s.replace(/```([\s\S]*?)```/g, (_, c) =>
    hold(`<pre class="code-block">${esc(unescapeSlack(c.replace(/^\n/, "")))}</pre>`));
  s = s.replace(/`([^`\n]+)`/g, (_, c) => hold(`<code>${esc(unescapeSlack(c))}</code>`));
  s = s.replace(/<([^<>\n]+)>/g, (_, inner) => hold(entity(inner)));
  s = esc(unescapeSlack(s));
  s = s.replace(/(^|[\s(>\u0000])\*([^*\n]+)\*(?=$|[\s).,!?:;\u0000<])/gm, "$1<b>$2</b>");
  s = s.replace(/(^|[\s(>\u0000])_([^_\n]+)_(?=$|[\s).,!?:;\u0000<])/gm, "$1<i>$2</i>");
  s = s.replace(/(^|[\s(>\u0000])~([^~\n]+)~(?=$|[\s).,!?:;\u0000<])/gm, "$1<s>$2</s>");
  s = s.replace(/^&gt; ?(.*)$/gm, "<blockquote>$1</blockquote>");
  s = emoji(s).replace(/\n/g, "<br>").replace(/<\/blockquote><br>/g, "</blockquote>");
  return s.replace(/\u0000(\d+)\u0000/g, (_, i) => held[Number(i)]);
}

// Standard Markdown (markdown blocks, streamed text) -> HTML: # headings, **bold**, *italic*,
// ~~strike~~, `code`, ``` fences, [text](url), lists, > quotes and | tables.
function markdownInline(s) {
  const held = [];
  const hold = (html) => `\u0000${held.push(html) - 1}\u0000`;
  s = s.replace(/`([^`\n]+)`/g, (_, c) => hold(`<code>${esc(c)}</code>`));
  s = s.replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, (_, t, u) => {
    const safe = /^(https?:|mailto:)/i.test(u) ? u : "#";
    return hold(`<a href="${esc(safe)}" target="_blank" rel="noopener">${esc(t)}</a>`);
  });
  s = s.replace(/<([^<>\n]+)>/g, (_, inner) => hold(entity(inner)));
  s = esc(s);
  s = s.replace(/\*\*([^*\n]+)\*\*/g, "<b>$1</b>").replace(/__([^_\n]+)__/g, "<b>$1</b>");
  s = s.replace(/(^|[^*\w])\*([^*\n]+)\*(?!\w)/g, "$1<i>$2</i>");
  s = s.replace(/~~([^~\n]+)~~/g, "<s>$1</s>");
  return emoji(s).replace(/\u0000(\d+)\u0000/g, (_, i) => held[Number(i)]);
}

function markdownTable(lines) {
  const cells = (line) => line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim());
  const head = cells(lines[0]).map((c) => `<th>${markdownInline(c)}</th>`).join("");
  const body = lines.slice(2).map((l) => `<tr>${cells(l).map((c) => `<td>${markdownInline(c)}</td>`).join("")}</tr>`).join("");
  return `<table class="md-table"><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
}

function markdown(text) {
  const lines = String(text ?? "").split("\n");
  const out = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = line.match(/^\s{0,3}(`{3,}|~{3,})/);
    if (fence) {
      const code = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(fence[1]); i++) code.push(lines[i]);
      out.push(`<pre class="code-block">${esc(code.join("\n"))}</pre>`);
      continue;
    }
    if (/^\s*\|/.test(line) && /^\s*\|?\s*:?-+/.test(lines[i + 1] || "")) {
      const rows = [line, lines[i + 1]];
      for (i += 2; i < lines.length && /^\s*\|/.test(lines[i]); i++) rows.push(lines[i]);
      i--;
      out.push(markdownTable(rows));
      continue;
    }
    const h = line.match(/^\s{0,3}(#{1,6})\s+(.*)$/);
    if (h) { out.push(`<div class="md-h md-h${h[1].length}">${markdownInline(h[2])}</div>`); continue; }
    const li = line.match(/^\s*(?:[-*+]|\d+\.)\s+(.*)$/);
    if (li) { out.push(`<div class="md-li">• ${markdownInline(li[1])}</div>`); continue; }
    const q = line.match(/^\s*>\s?(.*)$/);
    if (q) { out.push(`<blockquote>${markdownInline(q[1])}</blockquote>`); continue; }
    out.push(line.trim() ? `<div>${markdownInline(line)}</div>` : `<div class="md-gap"></div>`);
  }
  return out.join("");
}

function tableBlock(block) {
  const cellText = (c) => (c.type === "raw_text" ? c.text : richText(c.elements || []));
  const aligns = (block.column_settings || []).map((c) => (c && c.align) || "left");
  const rows = (block.rows || []).map((row, r) => `<tr>${row.map((c, j) => {
    const tag = r === 0 ? "th" : "td";
    const html = c.type === "raw_text" ? esc(c.text) : cellText(c);
    return `<${tag} style="text-align:${aligns[j] || "left"}">${html}</${tag}>`;
  }).join("")}</tr>`).join("");
  return `<table class="md-table" data-testid="table-block">${rows}</table>`;
}

function textHtml(obj) {
  if (!obj) return "";
  if (typeof obj === "string") return mrkdwn(obj);
  if (obj.type === "mrkdwn") return mrkdwn(obj.text);
  const html = esc(obj.text).replace(/\n/g, "<br>");
  return obj.emoji === false ? html : emoji(html);
}

function plain(obj) {
  return obj ? (typeof obj === "string" ? obj : obj.text || "") : "";
}

// ---------------------------------------------------------------------------------------
// Block Kit rendering. `ctx` says where an interaction goes: {kind: "message", channel, ts}
// | {kind: "view", viewId} | {kind: "home"}.

function renderBlocks(blocks, ctx) {
  return (blocks || []).map((b) => renderBlock(b, ctx));
}

function renderBlock(block, ctx) {
  const wrap = (cls, ...kids) => el("div", { class: `block ${cls}`, dataBlockId: block.block_id }, ...kids);
  switch (block.type) {
    case "header":
      return wrap("bk-header", el("span", { html: textHtml(block.text) }));
    case "section": {
      const main = el("div", { class: "bk-section-main" });
      if (block.text) main.append(el("div", { class: "msg-text", html: textHtml(block.text) }));
      if (block.fields) {
        main.append(el("div", { class: "bk-fields" },
          block.fields.map((f) => el("div", { class: "msg-text", html: textHtml(f) }))));
      }
      const acc = block.accessory ? renderElement(block.accessory, block.block_id, ctx) : null;
      return wrap("bk-section", main, acc);
    }
    case "divider":
      return el("hr", { class: "bk-divider" });
    case "context":
      return wrap("bk-context", (block.elements || []).map((e) =>
        e.type === "image" ? el("span", {}, `[${e.alt_text}]`) : el("span", { html: textHtml(e) })));
    case "actions":
      return wrap("bk-actions", (block.elements || []).map((e) => renderElement(e, block.block_id, ctx)));
    case "image":
      return wrap("bk-image", `[image: ${block.alt_text || block.image_url}]`,
        block.title ? ` ${plain(block.title)}` : "");
    case "rich_text":
      return wrap("msg-text", el("div", { html: richText(block.elements) }));
    case "markdown":
      return wrap("msg-text bk-markdown", el("div", { html: markdown(block.text) }));
    case "table":
      return wrap("bk-table", el("div", { html: tableBlock(block) }));
    case "input":
      return renderInput(block, ctx, {});
    default:
      return wrap("bk-unsupported", `[${block.type} block]`);
  }
}

function richText(elements) {
  const inline = (items) => (items || []).map((it) => {
    if (it.type === "text") {
      let h = esc(it.text).replace(/\n/g, "<br>");
      const st = it.style || {};
      if (st.code) h = `<code>${h}</code>`;
      if (st.bold) h = `<b>${h}</b>`;
      if (st.italic) h = `<i>${h}</i>`;
      if (st.strike) h = `<s>${h}</s>`;
      return h;
    }
    if (it.type === "link") return entity(`${it.url}|${it.text || it.url}`);
    if (it.type === "user") return entity(`@${it.user_id}`);
    if (it.type === "usergroup") return entity(`!subteam^${it.usergroup_id}`);
    if (it.type === "channel") return entity(`#${it.channel_id}`);
    if (it.type === "emoji") return esc(it.unicode ? String.fromCodePoint(parseInt(it.unicode, 16)) : `:${it.name}:`);
    if (it.type === "broadcast") return `<span class="mention">@${esc(it.range)}</span>`;
    return esc(it.text || "");
  }).join("");
  return (elements || []).map((e) => {
    if (e.type === "rich_text_section") return `<div>${inline(e.elements)}</div>`;
    if (e.type === "rich_text_preformatted") return `<pre class="code-block">${inline(e.elements)}</pre>`;
    if (e.type === "rich_text_quote") return `<blockquote>${inline(e.elements)}</blockquote>`;
    if (e.type === "rich_text_list") {
      const tag = e.style === "ordered" ? "ol" : "ul";
      return `<${tag}>${(e.elements || []).map((i) => `<li>${inline(i.elements)}</li>`).join("")}</${tag}>`;
    }
    return "";
  }).join("");
}

function allOptions(element) {
  const opts = [...(element.options || [])];
  for (const g of element.option_groups || []) opts.push(...(g.options || []));
  return opts;
}

function renderElement(e, blockId, ctx) {
  const common = { dataActionId: e.action_id, dataBlockId: blockId };
  if (e.type === "button") {
    return el("button", {
      ...common,
      class: `bk-btn ${e.style || ""}`,
      "data-testid": "button",
      dataValue: e.value,
      type: "button",
      onclick: (ev) => withConfirm(e.confirm, () => interact(ctx, e, blockId, e.value, ev.currentTarget)),
    }, plain(e.text));
  }
  if (["static_select", "overflow", "radio_buttons", "users_select"].includes(e.type)) {
    const options = e.type === "users_select"
      ? (ui.state.people || []).filter((p) => !p.is_bot).map((p) => ({ value: p.id, text: { text: p.real_name } }))
      : allOptions(e);
    const select = el("select", {
      ...common,
      class: "bk-select",
      "data-testid": "select",
      onchange: (ev) => {
        const value = ev.currentTarget.value;
        if (value) withConfirm(e.confirm, () => interact(ctx, e, blockId, value, ev.currentTarget));
      },
    }, el("option", { value: "" }, e.type === "overflow" ? "⋯" : plain(e.placeholder) || "Choose…"),
    options.map((o) => el("option", { value: o.value }, plain(o.text))));
    return select;
  }
  if (e.type === "image") return el("span", { class: "bk-image" }, `[image: ${e.alt_text}]`);
  return el("span", { class: "bk-unsupported" }, `[${e.type}]`);
}

function withConfirm(confirm, go) {
  if (!confirm) return go();
  const box = $("confirm");
  const close = () => { $("confirm-overlay").hidden = true; box.innerHTML = ""; };
  box.replaceChildren(
    el("div", { class: "modal-head" }, plain(confirm.title) || "Are you sure?"),
    el("div", { class: "modal-body", html: textHtml(confirm.text) }),
    el("div", { class: "modal-foot" },
      el("button", { class: "bk-btn", "data-testid": "confirm-no", type: "button", onclick: close },
        plain(confirm.deny) || "Cancel"),
      el("button", {
        class: `bk-btn ${confirm.style === "danger" ? "danger" : "primary"}`,
        "data-testid": "confirm-yes",
        type: "button",
        onclick: () => { close(); go(); },
      }, plain(confirm.confirm) || "Yes")));
  $("confirm-overlay").hidden = false;
}

// ---------------------------------------------------------------------------------------
// Talking to the sandbox

async function post(path, body) {
  let answer;
  try {
    const resp = await fetch(`/sandbox/ui/${path}`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ user: ui.user, ...body }),
    });
    answer = await resp.json();
  } catch (err) {
    toast(`The sandbox did not answer: ${err}`, true);
    return null;
  }
  if (!answer.ok) {
    toast(answer.error, true);
    return null;
  }
  const d = answer.delivery;
  if (d && d.error === "client_validation") return answer;
  if (d && (d.status === 0 || d.timed_out || d.status >= 300)) {
    const why = d.timed_out && d.status ? "did not answer within 3 seconds" : d.error || `answered HTTP ${d.status}`;
    toast(`sayso ${why}.`, true);
  }
  return answer;
}

async function interact(ctx, element, blockId, value, node) {
  if (node) node.disabled = true;
  try {
    const base = { action_id: element.action_id, block_id: blockId, value };
    if (ctx.kind === "message") await post("click", { ...base, channel: ctx.channel, message_ts: ctx.ts });
    else if (ctx.kind === "home") await post("click", { ...base, home: true });
    else await post("click", { ...base, view_id: ctx.viewId, values: modalValues() });
  } finally {
    if (node && node.isConnected) node.disabled = false;
  }
}

function toast(message, isError = false) {
  const t = el("div", { class: `toast ${isError ? "error" : ""}`, "data-testid": "toast", role: "status" }, message);
  $("toasts").append(t);
  setTimeout(() => t.remove(), 6000);
}

// ---------------------------------------------------------------------------------------
// Messages, threads, ephemerals

function avatar(msg) {
  const isBot = !!msg.bot_id || msg.user === "USLACKBOT";
  const name = msg.bot_id ? "sayso" : displayName(msg.user);
  return el("div", { class: `avatar ${isBot ? "bot" : ""}` }, name.slice(0, 1).toUpperCase());
}

function renderMessage(msg, channel, { ephemeral = false, inThread = false } = {}) {
  const isBot = !!msg.bot_id;
  const author = isBot ? "sayso" : displayName(msg.user);
  const ctx = { kind: "message", channel, ts: msg.ts };
  const hasRichOnly = (msg.blocks || []).every((b) => b.type === "rich_text");
  const body = el("div", { class: "msg-body" },
    el("div", { class: "msg-head" },
      el("span", { class: "author" }, author),
      isBot ? el("span", { class: "app-tag", style: "background:#ddd;color:#555" }, "APP") : null,
      el("span", { class: "time" }, timeOf(msg.ts)),
      msg.edited ? el("span", { class: "edited" }, "(edited)") : null),
    ephemeral ? el("div", { class: "eph-note" }, "Only visible to you") : null,
    msg.markdown_text !== undefined
      ? el("div", { class: `msg-text bk-markdown ${msg.streaming ? "streaming" : ""}`,
        "data-testid": "streamed-text", html: markdown(msg.markdown_text) })
      : msg.blocks && msg.blocks.length && !(hasRichOnly && msg.text)
      ? el("div", { class: "blocks" }, renderBlocks(msg.blocks, ctx))
      : el("div", { class: "msg-text", "data-testid": "message-text", html: mrkdwn(msg.text) }),
    msg.reactions ? el("div", { class: "reactions" },
      msg.reactions.map((r) => el("span", { class: "reaction", html: `${emoji(esc(`:${r.name}:`))} ${r.count}` }))) : null,
    !inThread && msg.reply_count
      ? el("button", { class: "replies", "data-testid": "replies", dataTs: msg.ts, type: "button",
        onclick: () => openThread(msg.ts) }, `${msg.reply_count} ${msg.reply_count === 1 ? "reply" : "replies"}`)
      : null,
    !inThread && !ephemeral && !msg.reply_count
      ? el("button", { class: "replies", "data-testid": "reply", dataTs: msg.ts, type: "button",
        style: "font-weight:400;color:#888", onclick: () => openThread(msg.ts) }, "Reply in thread")
      : null);
  return el("div", {
    class: `msg ${ephemeral ? "ephemeral" : ""}`,
    "data-testid": ephemeral ? "ephemeral" : "message",
    dataTs: msg.ts,
    dataUser: msg.user,
  }, avatar(msg), body);
}

function currentChannel() {
  return (ui.state.channels || []).find((c) => c.id === ui.channel) || { id: ui.channel, name: ui.channel, messages: [], threads: {} };
}

function renderChannel() {
  const channel = currentChannel();
  $("channel-header").textContent = ui.tab === "home" ? "sayso · Home" : `# ${channel.name}`;
  const box = $("messages");
  const nearBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 80;
  const ephemerals = (ui.state.ephemerals || []).filter((e) => e.channel === channel.id && !e.thread_ts);
  const items = [
    ...channel.messages.map((m) => ({ ts: m.ts, node: () => renderMessage(m, channel.id) })),
    ...ephemerals.map((m) => ({ ts: m.ts, node: () => renderMessage(m, channel.id, { ephemeral: true }) })),
  ].sort((a, b) => parseFloat(a.ts) - parseFloat(b.ts));
  box.replaceChildren(...(items.length ? items.map((i) => i.node())
    : [el("div", { class: "empty" }, "No messages yet. Try /sayso help.")]));
  if (nearBottom || items.length !== ui.lastCount) box.scrollTop = box.scrollHeight;
  ui.lastCount = items.length;
}

function openThread(ts) {
  ui.threadTs = ts;
  $("thread-panel").hidden = false;
  renderThread();
  $("thread-composer").focus();
}

function renderThread() {
  const panel = $("thread-panel");
  if (!ui.threadTs) { panel.hidden = true; return; }
  const channel = currentChannel();
  const root = channel.messages.find((m) => m.ts === ui.threadTs);
  if (!root) { panel.hidden = true; ui.threadTs = null; return; }
  panel.dataset.threadTs = ui.threadTs;
  const replies = (channel.threads || {})[ui.threadTs] || [];
  const ephemerals = (ui.state.ephemerals || []).filter((e) => e.channel === channel.id && e.thread_ts === ui.threadTs);
  const items = [
    ...replies.map((m) => ({ ts: m.ts, node: () => renderMessage(m, channel.id, { inThread: true }) })),
    ...ephemerals.map((m) => ({ ts: m.ts, node: () => renderMessage(m, channel.id, { ephemeral: true, inThread: true }) })),
  ].sort((a, b) => parseFloat(a.ts) - parseFloat(b.ts));
  const rootNode = renderMessage(root, channel.id, { inThread: true });
  rootNode.classList.add("thread-root");
  const box = $("thread-messages");
  box.replaceChildren(rootNode, ...items.map((i) => i.node()), ...assistantPane(channel));
  box.scrollTop = box.scrollHeight;
}

// The AI side pane's thread: the app's status while it works, and its suggested prompts.
function assistantPane(channel) {
  const pane = channel.is_im && (ui.state.assistant_threads || {})[ui.threadTs];
  if (!pane) return [];
  const out = [];
  if (pane.status) out.push(el("div", { class: "assistant-status", "data-testid": "assistant-status" }, `sayso ${pane.status}`));
  if ((pane.prompts || []).length) {
    out.push(el("div", { class: "assistant-prompts", "data-testid": "assistant-prompts" },
      pane.prompts_title ? el("div", { class: "eph-note" }, pane.prompts_title) : null,
      pane.prompts.map((p) => el("button", { class: "btn", type: "button", "data-testid": "assistant-prompt",
        onclick: () => send(p.message, ui.threadTs) }, p.title))));
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Modals and App Home

function renderInput(block, ctx, errors) {
  const e = block.element || {};
  const id = `in-${block.block_id}`;
  const common = {
    id,
    "data-testid": "input",
    dataBlockId: block.block_id,
    dataActionId: e.action_id,
    dataType: e.type,
  };
  let control;
  if (e.type === "plain_text_input" || e.type === "email_text_input" || e.type === "url_text_input") {
    control = e.multiline
      ? el("textarea", { ...common, placeholder: plain(e.placeholder), maxlength: e.max_length })
      : el("input", { ...common, type: "text", placeholder: plain(e.placeholder), maxlength: e.max_length });
    control.value = e.initial_value || "";
  } else if (e.type === "number_input") {
    control = el("input", { ...common, type: "number", value: e.initial_value });
  } else if (e.type === "datepicker") {
    control = el("input", { ...common, type: "date", value: e.initial_date });
  } else if (e.type === "static_select" || e.type === "multi_static_select" || e.type === "users_select") {
    const multi = e.type === "multi_static_select";
    const options = e.type === "users_select"
      ? (ui.state.people || []).filter((p) => !p.is_bot).map((p) => ({ value: p.id, text: { text: p.real_name } }))
      : allOptions(e);
    const initial = new Set([
      ...(e.initial_option ? [e.initial_option.value] : []),
      ...((e.initial_options || []).map((o) => o.value)),
      ...(e.initial_user ? [e.initial_user] : []),
    ]);
    control = el("select", { ...common, multiple: multi },
      multi ? null : el("option", { value: "" }, plain(e.placeholder) || "Choose an option"),
      options.map((o) => el("option", { value: o.value, selected: initial.has(o.value) }, plain(o.text))));
  } else if (e.type === "checkboxes" || e.type === "radio_buttons") {
    const kind = e.type === "checkboxes" ? "checkbox" : "radio";
    const initial = new Set([
      ...(e.initial_option ? [e.initial_option.value] : []),
      ...((e.initial_options || []).map((o) => o.value)),
    ]);
    control = el("div", common, allOptions(e).map((o) => el("label", { style: "display:block;font-weight:400" },
      el("input", { type: kind, name: id, value: o.value, checked: initial.has(o.value) }), " ", plain(o.text))));
  } else {
    control = el("div", { class: "bk-unsupported", ...common }, `[${e.type} input]`);
  }
  const error = errors[block.block_id];
  return el("div", { class: `block bk-input ${error ? "has-error" : ""}`, dataBlockId: block.block_id },
    el("label", { for: id }, plain(block.label), block.optional ? el("span", { class: "optional" }, " (optional)") : null),
    control,
    block.hint ? el("div", { class: "hint" }, plain(block.hint)) : null,
    error ? el("div", { class: "input-error", "data-testid": "input-error", dataBlockId: block.block_id }, error) : null);
}

function modalValues() {
  const values = {};
  for (const node of $("modal").querySelectorAll('[data-testid="input"]')) {
    const blockId = node.dataset.blockId;
    const type = node.dataset.type;
    if (type === "checkboxes") {
      values[blockId] = [...node.querySelectorAll("input:checked")].map((i) => i.value);
    } else if (type === "radio_buttons") {
      const chosen = node.querySelector("input:checked");
      values[blockId] = chosen ? chosen.value : null;
    } else if (type === "multi_static_select") {
      values[blockId] = [...node.selectedOptions].map((o) => o.value);
    } else if ("value" in node) {
      values[blockId] = node.value === "" ? (type === "plain_text_input" ? "" : null) : node.value;
    }
  }
  return values;
}

function renderModal() {
  const views = ui.state.views || [];
  const overlay = $("modal-overlay");
  const box = $("modal");
  const view = views[views.length - 1];
  if (!view) {
    overlay.hidden = true;
    box.replaceChildren();
    ui.modalKey = null;
    return;
  }
  const errors = view.errors || {};
  const key = `${view.id}:${view.hash}`;
  if (key === ui.modalKey) { updateModalErrors(errors); return; }
  ui.modalKey = key;
  const ctx = { kind: "view", viewId: view.id };
  const blocks = (view.blocks || []).map((b) => (b.type === "input" ? renderInput(b, ctx, errors) : renderBlock(b, ctx)));
  box.dataset.viewId = view.id;
  box.dataset.callbackId = view.callback_id || "";
  box.replaceChildren(
    el("div", { class: "modal-head" },
      el("span", { "data-testid": "modal-title" }, plain(view.title)),
      el("button", { class: "icon", type: "button", "aria-label": "Close", onclick: closeModal }, "✕")),
    el("div", { class: "modal-body" },
      el("div", { class: "modal-error", "data-testid": "modal-error", hidden: !errors[""] }, errors[""] || ""),
      blocks),
    el("div", { class: "modal-foot" },
      el("button", { class: "bk-btn", type: "button", "data-testid": "modal-close", onclick: closeModal },
        plain(view.close) || "Cancel"),
      view.submit ? el("button", { class: "bk-btn primary", type: "button", "data-testid": "modal-submit",
        onclick: submitModal }, plain(view.submit)) : null));
  overlay.hidden = false;
  const first = box.querySelector("input, textarea, select");
  if (first) first.focus();
}

function updateModalErrors(errors) {
  const box = $("modal");
  const general = box.querySelector('[data-testid="modal-error"]');
  if (general) { general.textContent = errors[""] || ""; general.hidden = !errors[""]; }
  for (const wrap of box.querySelectorAll(".bk-input")) {
    const blockId = wrap.dataset.blockId;
    const message = errors[blockId];
    wrap.classList.toggle("has-error", !!message);
    let note = wrap.querySelector(".input-error");
    if (message && !note) {
      note = el("div", { class: "input-error", "data-testid": "input-error", dataBlockId: blockId });
      wrap.append(note);
    }
    if (note) { if (message) note.textContent = message; else note.remove(); }
  }
}

async function submitModal(ev) {
  const viewId = $("modal").dataset.viewId;
  const button = ev.currentTarget;
  button.disabled = true;
  try {
    await post("submit", { view_id: viewId, values: modalValues() });
  } finally {
    button.disabled = false;
  }
}

async function closeModal() {
  const viewId = $("modal").dataset.viewId;
  if (viewId) await post("close", { view_id: viewId });
}

function renderHome() {
  const box = $("home");
  const home = ui.state.home;
  const blocks = home ? renderBlocks(home.blocks, { kind: "home" }) : [el("div", { class: "empty" }, "sayso has not published a Home tab for you yet.")];
  box.replaceChildren(...blocks);
}

// ---------------------------------------------------------------------------------------
// Page chrome and live updates

function renderSidebar() {
  const list = $("channel-list");
  const channels = (ui.state.channels || []).filter((c) => !c.is_im || c.messages.length);
  list.replaceChildren(...channels.map((c) => el("li", {},
    el("button", {
      class: `side-link ${ui.tab === "channel" && c.id === ui.channel ? "active" : ""}`,
      "data-testid": "channel",
      dataChannelId: c.id,
      type: "button",
      onclick: () => { ui.channel = c.id; ui.tab = "channel"; ui.threadTs = null; render(); },
    }, c.is_im ? `✉ sayso (DM)` : `# ${c.name}`))));
  $("home-tab").classList.toggle("active", ui.tab === "home");
}

function renderActAs() {
  const select = $("actas");
  if (select.options.length) { select.value = ui.user; return; }
  const people = (ui.state.people || []).filter((p) => !p.is_bot);
  const roles = Object.fromEntries(ACTORS);
  for (const p of people) {
    const role = roles[p.id] || (p.is_restricted ? "guest" : p.team_id !== ui.state.team.id ? "external" : "member");
    select.append(el("option", { value: p.id }, `${p.real_name.split(" ")[0]} (${role})`));
  }
  select.value = ui.user;
}

function render() {
  if (!ui.state) return;
  renderActAs();
  renderSidebar();
  const home = ui.tab === "home";
  $("messages").hidden = home;
  $("composer-form").hidden = home;
  $("home").hidden = !home;
  if (home) renderHome();
  renderChannel();
  if (home) $("thread-panel").hidden = true;
  else renderThread();
  renderModal();
  $("composer").placeholder = `Message #${currentChannel().name} — or /sayso ops deploy v2 to staging`;
}

function connect() {
  if (ui.source) ui.source.close();
  ui.modalKey = null;
  const source = new EventSource(`/sandbox/events?user=${encodeURIComponent(ui.user)}`);
  ui.source = source;
  source.addEventListener("state", (ev) => {
    ui.state = JSON.parse(ev.data);
    $("status").textContent = "live";
    document.body.dataset.version = ui.state.version;
    render();
  });
  source.onerror = () => { $("status").textContent = "reconnecting…"; };
}

async function send(text, threadTs) {
  const trimmed = text.trim();
  if (!trimmed) return false;
  if (trimmed.startsWith("/")) {
    return !!(await post("command", { text: trimmed, channel: ui.channel }));
  }
  const withMentions = trimmed.replace(/@sayso\b/g, "<@U_SAYSO>");
  return !!(await post("message", { text: withMentions, channel: ui.channel, thread_ts: threadTs || null }));
}

function bindComposer(formId, inputId, threadTs) {
  const form = $(formId);
  const input = $(inputId);
  const submit = async (ev) => {
    if (ev) ev.preventDefault();
    const text = input.value;
    input.value = "";
    const ok = await send(text, threadTs());
    if (!ok && text.trim()) input.value = text;
  };
  form.addEventListener("submit", submit);
  input.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey) submit(ev);
  });
}

function init() {
  bindComposer("composer-form", "composer", () => null);
  bindComposer("thread-form", "thread-composer", () => ui.threadTs);
  $("thread-close").addEventListener("click", () => { ui.threadTs = null; renderThread(); });
  $("home-tab").addEventListener("click", async () => {
    ui.tab = "home";
    render();
    await post("home", {});
  });
  $("assistant-open").addEventListener("click", async () => {
    const answer = await post("assistant", { channel: ui.channel });
    if (answer && answer.delivery && answer.delivery.ts) {
      ui.channel = "D" + ui.user.slice(1);
      ui.tab = "channel";
      render();
      openThread(answer.delivery.ts);
    }
  });
  $("actas").addEventListener("change", (ev) => {
    ui.user = ev.currentTarget.value;
    localStorage.setItem("sandbox.user", ui.user);
    connect();
  });
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape" && !$("modal-overlay").hidden) closeModal();
  });
  connect();
}

init();
