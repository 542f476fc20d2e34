/*
 * The ternmq web console.
 *
 * Theory of operation. One page, four views chosen by the URL fragment (#/, #/destinations/
 * KIND/NAME, #/connections, #/subscriptions). Every datum comes from the broker's JSON API
 * (/api/..., docs/console.md); nothing is fetched from anywhere else. A single poller asks for
 * /api/overview and /api/destinations every POLL_MS and keeps a bounded history of message
 * rates: a rate is the difference of the enqueued/dequeued counters between two polls divided
 * by the time between them (a counter that went down, after a restart, counts as 0). The
 * charts are inline SVG drawn from that history. Credentials are HTTP basic ones, kept in
 * sessionStorage (gone when the tab closes) and sent as an Authorization header with
 * credentials: "omit", so the browser neither prompts on a 401 nor reuses a cached login.
 * Every text from the broker is put in the page with textContent, never parsed as HTML:
 * message bodies and names are hostile input.
 */
"use strict";

(() => {
  const POLL_MS = 2000;
  const HISTORY = 60; // samples kept per series: two minutes at POLL_MS
  const PAGE_SIZE = 25;
  const MAX_ROWS = 500; // destinations drawn at most; a filter narrows the rest
  const AUTH_KEY = "ternmq.console.authorization";
  const BODY_PREVIEW = 65536; // characters of a body shown before "show all"

  // ---------------------------------------------------------------- small DOM helpers

  const $ = (id) => document.getElementById(id);

  /** Build an element: h("td", {class: "num"}, "12"). Strings become text nodes. */
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
      else if (key === "class") el.className = value;
      else if (value === true) el.setAttribute(key, "");
      else el.setAttribute(key, String(value));
    }
    append(el, children);
    return el;
  }

  function append(el, children) {
    for (const child of children.flat()) {
      if (child === undefined || child === null || child === false) continue;
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
  }

  const SVG_NS = "http://www.w3.org/2000/svg";

  function s(tag, attrs, ...children) {
    const el = document.createElementNS(SVG_NS, tag);
    for (const [key, value] of Object.entries(attrs || {})) el.setAttribute(key, String(value));
    append(el, children);
    return el;
  }

  // ---------------------------------------------------------------- formatting

  function fmtCount(n) {
    return typeof n === "number" ? n.toLocaleString("en-US") : "–";
  }

  function fmtRate(r) {
    if (typeof r !== "number" || !isFinite(r)) return "–";
    if (r === 0) return "0";
    return r < 10 ? r.toFixed(1) : Math.round(r).toLocaleString("en-US");
  }

  function fmtBytes(n) {
    if (typeof n !== "number") return "–";
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    let v = n;
    while (v >= 1024 && i < units.length - 1) {
      v /= 1024;
      i += 1;
    }
    return i === 0 ? `${v} B` : `${v.toFixed(1)} ${units[i]}`;
  }

  function fmtDuration(seconds) {
    if (typeof seconds !== "number") return "–";
    const s = Math.floor(seconds);
    const d = Math.floor(s / 86400);
    const hh = Math.floor((s % 86400) / 3600);
    const mm = Math.floor((s % 3600) / 60);
    if (d > 0) return `${d}d ${hh}h`;
    if (hh > 0) return `${hh}h ${mm}m`;
    return `${mm}m ${s % 60}s`;
  }

  /** A time from the API: epoch milliseconds, epoch seconds or an ISO string. */
  function fmtTime(t) {
    if (t === null || t === undefined || t === 0) return "–";
    let date;
    if (typeof t === "number") date = new Date(t < 1e11 ? t * 1000 : t);
    else date = new Date(t);
    if (isNaN(date.getTime())) return String(t);
    const pad = (n, w = 2) => String(n).padStart(w, "0");
    return (
      `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
      `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.` +
      pad(date.getMilliseconds(), 3)
    );
  }

  const TIME_HEADERS = new Set(["JMSTimestamp", "JMSExpiration", "JMSDeliveryTime"]);

  /** A JMS header's value; its times (epoch milliseconds) also as a date. */
  function fmtHeader(v, name) {
    if (!TIME_HEADERS.has(name) || typeof v !== "number") return fmtValue(v);
    if (v === 0) return name === "JMSExpiration" ? "0 (never)" : "0";
    return `${fmtTime(v)} (${v})`;
  }

  /** A selector string literal: in single quotes, a quote doubled (JMS 1.1, 3.8.1.1). */
  function sqlString(text) {
    return `'${String(text).replaceAll("'", "''")}'`;
  }

  function fmtValue(v) {
    if (v === null || v === undefined) return "null";
    if (typeof v === "string") return v;
    return JSON.stringify(v);
  }

  // ---------------------------------------------------------------- banners

  function showError(err) {
    const text = err instanceof ApiError ? err.describe() : String(err && err.message ? err.message : err);
    $("error-text").textContent = text;
    $("error").hidden = false;
  }

  function clearError() {
    $("error").hidden = true;
    $("error-text").textContent = "";
  }

  let noticeTimer = 0;

  function notice(text) {
    $("notice-text").textContent = text;
    $("notice").hidden = false;
    clearTimeout(noticeTimer);
    noticeTimer = setTimeout(() => {
      $("notice").hidden = true;
    }, 6000);
  }

  // ---------------------------------------------------------------- the API

  class ApiError extends Error {
    /** status 0 means the broker did not answer at all. */
    constructor(status, message) {
      super(message);
      this.status = status;
    }

    describe() {
      return this.status ? `${this.message} (HTTP ${this.status})` : this.message;
    }
  }

  function storedAuth() {
    return sessionStorage.getItem(AUTH_KEY);
  }

  function basicAuth(user, password) {
    const bytes = new TextEncoder().encode(`${user}:${password}`);
    let bin = "";
    for (const b of bytes) bin += String.fromCharCode(b);
    return `Basic ${btoa(bin)}`;
  }

  /** Call the API; resolve to the parsed JSON (null for 204), reject with an ApiError. */
  async function api(method, path, body, auth = storedAuth()) {
    const headers = { Accept: "application/json" };
    if (auth) headers.Authorization = auth;
    const init = { method, headers, credentials: "omit", cache: "no-store" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let resp;
    try {
      resp = await fetch(path, init);
    } catch (e) {
      throw new ApiError(0, `Cannot reach the broker (${e.message}); is it running?`);
    }
    const text = await resp.text();
    let data = null;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch (e) {
        data = null;
      }
    }
    if (!resp.ok) {
      const message =
        data && typeof data.error === "string" ? data.error : `${resp.status} ${resp.statusText}`.trim();
      const err = new ApiError(resp.status, message);
      if (resp.status === 401 && auth === storedAuth()) requireLogin(err.message);
      throw err;
    }
    return data;
  }

  /** The API path of a destination named like "queue://orders". */
  function destPath(name) {
    const [kind, rest] = splitName(name);
    return `/api/destinations/${kind}/${encodeURIComponent(rest)}`;
  }

  function splitName(name) {
    const i = name.indexOf("://");
    return i < 0 ? ["queue", name] : [name.slice(0, i), name.slice(i + 3)];
  }

  // ---------------------------------------------------------------- rates and history

  /** A bounded series of rate samples. */
  class Series {
    constructor() {
      this.values = [];
    }

    push(v) {
      this.values.push(v);
      if (this.values.length > HISTORY) this.values.shift();
    }

    last() {
      return this.values.length ? this.values[this.values.length - 1] : undefined;
    }
  }

  /** In/out rates of one counter pair, from the deltas between polls. */
  class RateTracker {
    constructor() {
      this.prev = null;
      this.in = new Series();
      this.out = new Series();
    }

    sample(now, enqueued, dequeued) {
      if (this.prev !== null) {
        const dt = (now - this.prev.t) / 1000;
        if (dt > 0) {
          this.in.push(Math.max(0, enqueued - this.prev.enqueued) / dt);
          this.out.push(Math.max(0, dequeued - this.prev.dequeued) / dt);
        }
      }
      this.prev = { t: now, enqueued, dequeued };
    }
  }

  const state = {
    overview: null,
    destinations: [],
    byName: new Map(),
    total: new RateTracker(),
    rates: new Map(), // destination name -> RateTracker
    lastOk: 0,
  };

  function absorb(now, overview, destinations) {
    state.overview = overview;
    state.destinations = destinations;
    state.byName = new Map(destinations.map((d) => [d.name, d]));
    state.total.sample(now, overview.enqueued || 0, overview.dequeued || 0);
    for (const d of destinations) {
      let tracker = state.rates.get(d.name);
      if (!tracker) {
        tracker = new RateTracker();
        state.rates.set(d.name, tracker);
      }
      tracker.sample(now, d.enqueued || 0, d.dequeued || 0);
    }
    for (const name of [...state.rates.keys()]) {
      if (!state.byName.has(name)) state.rates.delete(name);
    }
  }

  // ---------------------------------------------------------------- the chart

  function niceMax(v) {
    if (!(v > 0)) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
    return 10 * p;
  }

  /**
   * An SVG line chart of message rates; tracker holds the in and out series. The drawing is
   * as wide as its box in CSS pixels (width), so its text keeps one size on every screen.
   */
  function rateChart(tracker, title, width) {
    const W = Math.max(240, Math.round(width || 640));
    const H = 180;
    const left = 48;
    const right = W - 10;
    const top = 22;
    const bottom = H - 24;
    const inV = tracker.in.values;
    const outV = tracker.out.values;
    const max = niceMax(Math.max(0, ...inV, ...outV));
    const y = (v) => bottom - (v / max) * (bottom - top);
    const step = (right - left) / (HISTORY - 1);
    const line = (values, cls) => {
      const n = values.length;
      const pts = values.map((v, i) => `${(right - (n - 1 - i) * step).toFixed(1)},${y(v).toFixed(1)}`);
      return n > 1
        ? s("polyline", { class: `series ${cls}`, points: pts.join(" ") })
        : n === 1
          ? s("circle", { class: `series ${cls}`, cx: right, cy: y(values[0]).toFixed(1), r: 2.5 })
          : null;
    };
    const grid = [0, max / 2, max].map((v) => [
      s("line", { class: "grid", x1: left, x2: right, y1: y(v), y2: y(v) }),
      s("text", { class: "axis", x: left - 6, y: y(v) + 4, "text-anchor": "end" }, fmtRate(v)),
    ]);
    const label = `${title}: in ${fmtRate(tracker.in.last())}/s, out ${fmtRate(tracker.out.last())}/s`;
    const svg = s(
      "svg",
      { class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": label },
      ...grid.flat(),
      s("text", { class: "axis", x: left, y: H - 6 }, `−${(HISTORY * POLL_MS) / 60000} min`),
      s("text", { class: "axis", x: right, y: H - 6, "text-anchor": "end" }, "now"),
      s("text", { class: "axis", x: 4, y: 12 }, "msg/s"),
      line(inV, "in"),
      line(outV, "out")
    );
    return h(
      "figure",
      { class: "chart-box" },
      svg,
      h(
        "figcaption",
        {},
        h("span", { class: "key in" }, "in"),
        ` ${fmtRate(tracker.in.last())}/s `,
        h("span", { class: "key out" }, "out"),
        ` ${fmtRate(tracker.out.last())}/s`
      )
    );
  }

  // ---------------------------------------------------------------- shared bits of views

  function table(headers, rows, empty) {
    const head = h("tr", {}, headers.map(([text, cls]) => h("th", { class: cls, scope: "col" }, text)));
    const body = rows.length
      ? rows
      : [h("tr", {}, h("td", { class: "empty", colspan: headers.length }, empty))];
    return h("div", { class: "scroll" }, h("table", {}, h("thead", {}, head), h("tbody", {}, body)));
  }

  function cell(value, cls) {
    return h("td", { class: cls }, value);
  }

  function stat(label, value, id) {
    return h("div", { class: "stat" }, h("span", { class: "label" }, label), h("span", { class: "value", id }, value));
  }

  /** Run an action of a button: disable it meanwhile, show what went wrong. */
  async function act(button, fn) {
    if (button) button.disabled = true;
    try {
      clearError();
      await fn();
    } catch (e) {
      showError(e);
    } finally {
      if (button) button.disabled = false;
    }
  }

  /** A form whose submission runs onSubmit() instead of loading another page. */
  function form(attrs, onSubmit, ...children) {
    return h("form", { ...attrs, onsubmit: (e) => { e.preventDefault(); onSubmit(); } }, ...children);
  }

  /** A red button that asks `question` first, then runs `action` as act() does. */
  function confirmButton(label, attrs, question, action) {
    const button = h("button", { type: "button", class: "danger", ...attrs }, label);
    button.addEventListener("click", () => {
      if (window.confirm(question)) act(button, action);
    });
    return button;
  }

  function field(label, input, hint) {
    const id = input.id;
    return h("div", { class: "field" }, h("label", { for: id }, label), input, hint ? h("small", {}, hint) : null);
  }

  // ---------------------------------------------------------------- view: destinations

  const destinationsView = {
    page: "destinations",
    filter: "",

    mount(root) {
      this.cards = h("div", { class: "cards", id: "overview" });
      this.chart = h("div", { id: "total-chart" });
      this.tbody = h("div", { id: "destinations" });
      const filter = h("input", {
        id: "dest-filter",
        type: "search",
        placeholder: "Filter by name",
        "aria-label": "Filter destinations by name",
        value: this.filter,
        oninput: (e) => {
          this.filter = e.target.value;
          this.render();
        },
      });
      const name = h("input", { id: "create-name", placeholder: "queue://name or topic://name", required: true });
      const create = form(
        { class: "inline", id: "create-form" },
        () => {
          const button = create.querySelector("button");
          act(button, async () => {
            const made = await api("POST", "/api/destinations", { name: name.value.trim() });
            notice(`Created ${made && made.name ? made.name : name.value.trim()}`);
            name.value = "";
            await poll();
          });
        },
        h("label", { for: "create-name" }, "New destination"),
        name,
        h("button", { type: "submit" }, "Create")
      );
      root.append(
        h("h1", {}, "Broker"),
        this.cards,
        h("section", { class: "card" }, h("h2", {}, "Message rates"), this.chart),
        h(
          "section",
          { class: "card" },
          h("div", { class: "toolbar" }, h("h2", {}, "Destinations"), filter),
          this.tbody,
          create
        )
      );
      this.render();
    },

    render() {
      const o = state.overview;
      if (!o) return;
      const rates = state.total;
      this.cards.replaceChildren(
        stat("Messages", fmtCount(o.messages), "ov-messages"),
        stat("In /s", fmtRate(rates.in.last()), "ov-in"),
        stat("Out /s", fmtRate(rates.out.last()), "ov-out"),
        stat("Destinations", fmtCount(o.destinations), "ov-destinations"),
        stat("Consumers", fmtCount(o.consumers), "ov-consumers"),
        stat("Connections", fmtCount(o.connections), "ov-connections"),
        stat("Uptime", fmtDuration(o.uptime_seconds), "ov-uptime"),
        stat("Version", o.version || "–", "ov-version")
      );
      this.chart.replaceChildren(rateChart(rates, "All destinations", this.chart.clientWidth));
      const needle = this.filter.trim().toLowerCase();
      const matching = state.destinations.filter((d) => !needle || d.name.toLowerCase().includes(needle));
      const shown = matching.slice(0, MAX_ROWS);
      const rows = shown.map((d) => {
        const t = state.rates.get(d.name);
        return h(
          "tr",
          { "data-name": d.name },
          h(
            "td",
            { class: "name" },
            // A temporary destination belongs to its connection: listed, not administered.
            String(d.kind).startsWith("temp-")
              ? h("span", { title: "temporary: it goes with the connection that created it" }, d.name)
              : h("a", { href: `#/destinations/${splitName(d.name).map(encodeURIComponent).join("/")}` }, d.name)
          ),
          cell(fmtCount(d.depth), "num depth"),
          cell(fmtCount(d.in_flight), "num opt"),
          cell(fmtCount(d.consumers), "num consumers"),
          cell(fmtRate(t && t.in.last()), "num rate-in"),
          cell(fmtRate(t && t.out.last()), "num rate-out"),
          cell(fmtCount(d.enqueued), "num opt"),
          cell(fmtCount(d.dequeued), "num opt"),
          cell(fmtCount(d.dead_lettered), "num opt")
        );
      });
      const headers = [
        ["Name"],
        ["Depth", "num"],
        ["In flight", "num opt"],
        ["Consumers", "num"],
        ["In /s", "num"],
        ["Out /s", "num"],
        ["Enqueued", "num opt"],
        ["Dequeued", "num opt"],
        ["Dead-lettered", "num opt"],
      ];
      const more =
        matching.length > shown.length
          ? h("p", { class: "hint" }, `Showing ${shown.length} of ${matching.length}; type a filter to narrow.`)
          : null;
      this.tbody.replaceChildren(table(headers, rows, needle ? "No destination matches." : "No destinations yet."), more || "");
    },
  };

  // ---------------------------------------------------------------- view: one destination

  function destinationView(name) {
    const [kind] = splitName(name);
    const isQueue = kind === "queue";
    const path = destPath(name);
    const view = {
      page: "destinations",
      offset: 0,
      selector: "",
      selected: null,

      mount(root) {
        this.stats = h("div", { class: "cards", id: "dest-stats" });
        this.chart = h("div", { id: "dest-chart" });
        root.append(
          h("p", { class: "crumbs" }, h("a", { href: "#/" }, "Destinations"), " / "),
          h("h1", { class: "dest-name", id: "dest-name" }, name),
          this.stats,
          h("section", { class: "card" }, h("h2", {}, "Message rates"), this.chart),
          this.actions(),
          isQueue ? this.browser() : h("section", { class: "card" }, h("p", { class: "hint" }, "A topic holds no messages of its own to browse: its subscriptions do (see Subscriptions).")),
          isQueue ? this.moveForm() : null,
          this.sendForm()
        );
        this.render();
        if (isQueue) this.load();
      },

      render() {
        const d = state.byName.get(name);
        if (!d) {
          this.stats.replaceChildren(h("p", { class: "hint" }, state.overview ? "This destination does not exist (any more)." : "Loading…"));
          return;
        }
        this.stats.replaceChildren(
          stat("Depth", fmtCount(d.depth), "dest-depth"),
          stat("In flight", fmtCount(d.in_flight), "dest-in-flight"),
          stat("Consumers", fmtCount(d.consumers), "dest-consumers"),
          stat("Enqueued", fmtCount(d.enqueued), "dest-enqueued"),
          stat("Dequeued", fmtCount(d.dequeued), "dest-dequeued"),
          stat("Expired", fmtCount(d.expired)),
          stat("Dead-lettered", fmtCount(d.dead_lettered)),
          stat("Redelivered", fmtCount(d.redelivered)),
          stat("Memory", fmtBytes(d.memory_bytes)),
          stat("Paged", fmtCount(d.paged))
        );
        const tracker = state.rates.get(name);
        if (tracker) this.chart.replaceChildren(rateChart(tracker, name, this.chart.clientWidth));
      },

      actions() {
        const force = h("input", { type: "checkbox", id: "delete-force" });
        const purge = confirmButton("Purge", { id: "purge" }, `Remove every message of ${name}? This cannot be undone.`, async () => {
          const r = await api("POST", `${path}/purge`);
          notice(`Purged ${fmtCount(r && r.purged)} message(s) from ${name}`);
          this.closeDetail();
          await this.afterChange();
        });
        const del = confirmButton("Delete destination", { id: "delete-destination" }, `Delete ${name} and every message it holds?`, async () => {
          await api("DELETE", path + (force.checked ? "?force=true" : ""));
          notice(`Deleted ${name}`);
          location.hash = "#/";
        });
        return h(
          "section",
          { class: "card toolbar" },
          h("h2", {}, "Actions"),
          isQueue ? purge : null,
          del,
          h("label", { class: "check", for: "delete-force" }, force, " even with consumers")
        );
      },

      browser() {
        const sel = h("input", {
          id: "browse-selector",
          placeholder: "selector, e.g. JMSPriority > 4 AND region = 'eu'",
          "aria-label": "Message selector",
        });
        this.list = h("div", { id: "messages" });
        this.pager = h("div", { class: "pager" });
        this.detail = h("div", { id: "message-detail" });
        const browseForm = form(
          { class: "inline", id: "browse-form" },
          () => {
            this.selector = sel.value.trim();
            this.offset = 0;
            this.load();
          },
          sel,
          h("button", { type: "submit" }, "Browse"),
          h("button", { type: "button", class: "ghost", id: "browse-refresh", onclick: () => this.load() }, "Refresh")
        );
        return h("section", { class: "card" }, h("h2", {}, "Messages"), browseForm, this.list, this.pager, this.detail);
      },

      async load() {
        if (!isQueue) return;
        const q = new URLSearchParams({ offset: String(this.offset), limit: String(PAGE_SIZE) });
        if (this.selector) q.set("selector", this.selector);
        let page;
        try {
          page = await api("GET", `${path}/messages?${q}`);
        } catch (e) {
          showError(e);
          this.list.replaceChildren(h("p", { class: "hint" }, "The messages could not be listed (see above)."));
          this.pager.replaceChildren();
          return;
        }
        if (view !== current) return;
        if (!page.messages.length && this.offset > 0) {
          // The messages of this page went (consumed, moved, deleted): show the last page.
          this.offset = Math.max(0, this.offset - PAGE_SIZE);
          await this.load();
          return;
        }
        const rows = page.messages.map((m) =>
          h(
            "tr",
            {
              class: this.selected === m.id ? "selected clickable" : "clickable",
              "data-id": m.id,
              tabindex: 0,
              onclick: () => this.show(m.id),
              onkeydown: (e) => {
                if (e.key === "Enter") this.show(m.id);
              },
            },
            cell(m.id, "mono id"),
            cell(fmtTime(m.timestamp), "opt"),
            cell(m.priority, "num"),
            cell(m.delivery_count, "num opt"),
            cell(m.redelivered ? "yes" : "", "opt"),
            cell(m.body_type),
            cell(fmtBytes(m.size), "num opt"),
            cell(m.preview, "preview")
          )
        );
        const headers = [["ID"], ["Time", "opt"], ["Pri", "num"], ["Deliveries", "num opt"], ["Redelivered", "opt"], ["Body"], ["Size", "num opt"], ["Preview"]];
        this.list.replaceChildren(table(headers, rows, this.selector ? "No message matches the selector." : "The queue is empty."));
        const first = page.messages.length ? page.offset + 1 : 0;
        const last = page.offset + page.messages.length;
        const prev = h("button", { type: "button", class: "ghost", id: "page-prev", disabled: page.offset === 0 }, "‹ Previous");
        prev.addEventListener("click", () => {
          this.offset = Math.max(0, this.offset - PAGE_SIZE);
          this.load();
        });
        const next = h("button", { type: "button", class: "ghost", id: "page-next", disabled: !page.more }, "Next ›");
        next.addEventListener("click", () => {
          this.offset += PAGE_SIZE;
          this.load();
        });
        this.pager.replaceChildren(prev, h("span", { id: "page-range" }, `${first}–${last}`), next);
      },

      async show(id) {
        this.selected = id;
        for (const tr of this.list.querySelectorAll("tr[data-id]")) tr.classList.toggle("selected", tr.dataset.id === id);
        let m;
        try {
          m = await api("GET", `${path}/messages/${encodeURIComponent(id)}`);
        } catch (e) {
          showError(e);
          return;
        }
        if (view !== current) return;
        const pairs = (obj, show = fmtValue) =>
          Object.entries(obj || {}).map(([k, v]) => h("tr", {}, h("th", { scope: "row" }, k), h("td", { class: "mono" }, show(v, k))));
        const del = confirmButton("Delete message", { id: "message-delete" }, `Delete message ${id}?`, async () => {
          await api("DELETE", `${path}/messages/${encodeURIComponent(id)}`);
          notice(`Deleted ${id}`);
          this.closeDetail();
          await this.afterChange();
        });
        const close = h("button", { type: "button", class: "ghost", onclick: () => this.closeDetail() }, "Close");
        // A dead letter names the queue it came from: offer to send this one back there
        // (picked by its JMSMessageID: a message sent without one has none to select by).
        const origin = (m.properties || {}).JMS_TernMQ_OriginalDestination;
        let back = null;
        if (typeof origin === "string" && origin && origin !== name && id.startsWith("ID:")) {
          back = h("button", { type: "button", id: "message-move-back" }, `Move back to ${origin}`);
          back.addEventListener("click", () => {
            act(back, async () => {
              const r = await api("POST", `${path}/move`, { to: origin, selector: `JMSMessageID = ${sqlString(id)}` });
              notice(`Moved ${fmtCount(r && r.moved)} message(s) to ${origin}`);
              this.closeDetail();
              await this.afterChange();
            });
          });
          if (this.moveTo && !this.moveTo.value) {
            this.moveTo.value = origin;
            this.moveSel.value = `JMS_TernMQ_OriginalDestination = ${sqlString(origin)}`;
          }
        }
        this.detail.replaceChildren(
          h(
            "article",
            { class: "message", "aria-label": `Message ${id}` },
            h("div", { class: "toolbar" }, h("h3", { class: "mono" }, m.id), m.state ? h("span", { class: "badge", id: "message-state" }, m.state.replace("_", " ")) : null, back, del, close),
            h("div", { class: "kv" },
              h("div", {}, h("h4", {}, "Headers"), h("table", { class: "pairs", id: "message-headers" }, h("tbody", {}, pairs(m.headers, fmtHeader)))),
              h("div", {}, h("h4", {}, "Properties"), h("table", { class: "pairs", id: "message-properties" }, h("tbody", {}, pairs(m.properties))))
            ),
            h("h4", {}, `Body (${m.body_type})`),
            bodyView(m)
          )
        );
      },

      moveForm() {
        const to = h("input", { id: "move-to", placeholder: "queue://orders", required: true });
        const sel = h("input", { id: "move-selector", placeholder: "optional selector; empty = every message" });
        this.moveTo = to;
        this.moveSel = sel;
        const button = h("button", { type: "submit", id: "move-submit" }, "Move");
        const moveForm = form(
          { id: "move-form" },
          () => {
            const body = { to: to.value.trim() };
            if (sel.value.trim()) body.selector = sel.value.trim();
            act(button, async () => {
              const r = await api("POST", `${path}/move`, body);
              notice(`Moved ${fmtCount(r && r.moved)} message(s) to ${body.to}`);
              this.closeDetail();
              await this.afterChange();
            });
          },
          h("div", { class: "grid2" }, field("To destination", to), field("Selector", sel)),
          button
        );
        return h(
          "section",
          { class: "card" },
          h("h2", {}, "Move messages"),
          h("p", { class: "hint" }, "Send messages back for another try (for example from a dead-letter queue to their queue): the ones matching the selector move, headers and properties kept."),
          moveForm
        );
      },

      sendForm() {
        const body = h("textarea", { id: "send-body", rows: 4, placeholder: "message body" });
        const type = h("select", { id: "send-body-type" }, h("option", { value: "text" }, "text"), h("option", { value: "bytes" }, "bytes (base64)"));
        const props = h("textarea", { id: "send-properties", rows: 2, placeholder: '{"region": "eu"}' });
        const persistent = h("input", { type: "checkbox", id: "send-persistent", checked: true });
        const priority = h("input", { type: "number", id: "send-priority", min: 0, max: 9, value: 4 });
        const corr = h("input", { id: "send-correlation-id" });
        const jmsType = h("input", { id: "send-type" });
        const ttl = h("input", { type: "number", id: "send-ttl", min: 0, value: 0 });
        const button = h("button", { type: "submit", id: "send-submit" }, "Send");
        const sendForm = form(
          { id: "send-form" },
          () => {
            act(button, async () => {
              let properties = {};
              if (props.value.trim()) {
                try {
                  properties = JSON.parse(props.value);
                } catch (err) {
                  throw new Error(`Properties must be a JSON object such as {"region": "eu"}: ${err.message}`);
                }
                if (properties === null || typeof properties !== "object" || Array.isArray(properties)) {
                  throw new Error('Properties must be a JSON object such as {"region": "eu"}.');
                }
              }
              const msg = {
                body: body.value,
                body_type: type.value,
                properties,
                persistent: persistent.checked,
                priority: Number(priority.value),
                time_to_live_ms: Number(ttl.value) || 0,
              };
              if (corr.value) msg.correlation_id = corr.value;
              if (jmsType.value) msg.type = jmsType.value;
              const r = await api("POST", `${path}/messages`, msg);
              notice(`Sent ${r && r.id ? r.id : "the message"} to ${name}`);
              await this.afterChange();
            });
          },
          field("Body", body),
          h(
            "div",
            { class: "grid3" },
            field("Body type", type),
            field("Priority", priority),
            field("Time to live (ms, 0 = forever)", ttl),
            field("Correlation ID", corr),
            field("Type", jmsType),
            field("Properties (JSON)", props)
          ),
          h("label", { class: "check", for: "send-persistent" }, persistent, " persistent"),
          button
        );
        return h("section", { class: "card" }, h("h2", {}, "Send a message"), sendForm);
      },

      closeDetail() {
        if (this.detail) this.detail.replaceChildren();
        this.selected = null;
      },

      async afterChange() {
        await poll();
        if (isQueue) await this.load();
      },
    };
    return view;
  }

  function bodyView(m) {
    const b = m.body;
    if (m.body_type === "none" || b === null || b === undefined) return h("p", { class: "hint" }, "(no body)");
    if (m.body_type === "bytes" && typeof b === "string") {
      let bin = "";
      try {
        bin = atob(b);
      } catch (e) {
        return h("pre", { class: "body", id: "message-body" }, b);
      }
      const lines = [];
      const n = Math.min(bin.length, 4096);
      for (let i = 0; i < n; i += 16) {
        const chunk = bin.slice(i, i + 16);
        const hex = [...chunk].map((c) => c.charCodeAt(0).toString(16).padStart(2, "0")).join(" ");
        const ascii = [...chunk].map((c) => (c >= " " && c <= "~" ? c : ".")).join("");
        lines.push(`${i.toString(16).padStart(8, "0")}  ${hex.padEnd(48)} ${ascii}`);
      }
      if (bin.length > n) lines.push(`… ${fmtCount(bin.length - n)} more bytes`);
      return h("pre", { class: "body", id: "message-body" }, `${fmtCount(bin.length)} bytes\n${lines.join("\n")}`);
    }
    if (m.body_type === "map" && typeof b === "object" && !Array.isArray(b)) {
      return h("table", { class: "pairs", id: "message-body" }, h("tbody", {}, Object.entries(b).map(([k, v]) => h("tr", {}, h("th", { scope: "row" }, k), h("td", { class: "mono" }, fmtValue(v))))));
    }
    const text = typeof b === "string" ? b : JSON.stringify(b, null, 2);
    const pre = h("pre", { class: "body", id: "message-body" }, text.slice(0, BODY_PREVIEW));
    if (text.length <= BODY_PREVIEW) return pre;
    const more = h("button", { type: "button", class: "ghost" }, `Show all ${fmtCount(text.length)} characters`);
    more.addEventListener("click", () => {
      pre.textContent = text;
      more.remove();
    });
    return h("div", {}, pre, more);
  }

  // ---------------------------------------------------------------- views: connections, subscriptions

  /** A page listing what GET `path` answers, one table row per item, refreshed by the poller. */
  function listView({ page, title, path, headers, empty, row }) {
    return {
      page,

      mount(root) {
        this.box = h("div", { id: page }, h("p", { class: "hint" }, "Loading…"));
        root.append(h("h1", {}, title), h("section", { class: "card" }, this.box));
        return this.tick();
      },

      async tick() {
        let list;
        try {
          list = await api("GET", path);
        } catch (e) {
          if (current === this) this.box.replaceChildren(h("p", { class: "hint" }, "This list could not be shown (see the error above)."));
          throw e;
        }
        if (current !== this) return;
        this.box.replaceChildren(table(headers, list.map((item) => row(item, () => this.tick())), empty));
      },
    };
  }

  const connectionsView = listView({
    page: "connections",
    title: "Connections",
    path: "/api/connections",
    empty: "No client is connected.",
    headers: [["ID"], ["Protocol"], ["User"], ["Client ID", "opt"], ["Address"], ["Connected", "opt"], ["Sessions", "num opt"], ["Consumers", "num"], [""]],
    row: (c, refresh) =>
      h(
        "tr",
        { "data-id": c.id },
        cell(c.id, "mono"),
        cell(c.protocol),
        cell(c.user || "anonymous"),
        cell(c.client_id || "", "opt"),
        cell(c.address, "mono"),
        cell(fmtTime(c.connected_at), "opt"),
        cell(fmtCount(c.sessions), "num opt"),
        cell(fmtCount(c.consumers), "num"),
        h(
          "td",
          {},
          confirmButton("Close", { class: "danger small" }, `Close connection ${c.id} (${c.user || "anonymous"} from ${c.address})?`, async () => {
            await api("DELETE", `/api/connections/${encodeURIComponent(c.id)}`);
            notice(`Closed connection ${c.id}`);
            await refresh();
          })
        )
      ),
  });

  const subscriptionsView = listView({
    page: "subscriptions",
    title: "Subscriptions",
    path: "/api/subscriptions",
    empty: "No subscriptions.",
    headers: [["Topic"], ["Name"], ["Client ID", "opt"], ["Kind"], ["Shared", "opt"], ["Selector", "opt"], ["Consumers", "num"], ["Depth", "num"], [""]],
    row: (sub, refresh) =>
      h(
        "tr",
        { "data-id": sub.id },
        cell(sub.topic),
        cell(sub.name || "", "mono"),
        cell(sub.client_id || "", "opt"),
        cell(sub.durable ? "durable" : "non-durable"),
        cell(sub.shared ? "yes" : "", "opt"),
        cell(sub.selector || "", "mono opt"),
        cell(fmtCount(sub.consumers), "num"),
        cell(fmtCount(sub.depth), "num"),
        h(
          "td",
          {},
          // Only a durable subscription outlives its consumer, so only it can be deleted.
          sub.durable
            ? confirmButton("Delete", { class: "danger small" }, `Delete the durable subscription ${sub.name} on ${sub.topic} and its ${sub.depth} message(s)?`, async () => {
                await api("DELETE", `/api/subscriptions/${encodeURIComponent(sub.id)}`);
                notice(`Deleted subscription ${sub.name}`);
                await refresh();
              })
            : null
        )
      ),
  });

  // ---------------------------------------------------------------- routing and polling

  let current = null;
  let pollTimer = 0;
  let polling = false;

  function route() {
    const hash = location.hash.replace(/^#\/?/, "");
    const parts = hash.split("/").filter(Boolean);
    if (parts[0] === "connections") return connectionsView;
    if (parts[0] === "subscriptions") return subscriptionsView;
    if (parts[0] === "destinations" && parts.length >= 3) {
      let kind;
      let rest;
      try {
        kind = decodeURIComponent(parts[1]);
        rest = decodeURIComponent(parts.slice(2).join("/"));
      } catch (e) {
        return destinationsView;
      }
      return destinationView(`${kind}://${rest}`);
    }
    return destinationsView;
  }

  function show() {
    if (!loggedIn) return;
    current = route();
    const root = $("view");
    root.replaceChildren();
    for (const a of document.querySelectorAll("#nav a")) {
      if (a.dataset.page === current.page) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
    Promise.resolve(current.mount(root)).catch(showError);
  }

  /** One poll: overview and destinations for the rates, then the current view's own data. */
  async function poll() {
    if (polling || document.hidden) return; // a tab nobody looks at costs the broker nothing
    polling = true;
    try {
      const [overview, destinations] = await Promise.all([api("GET", "/api/overview"), api("GET", "/api/destinations")]);
      absorb(performance.now(), overview, destinations);
      state.lastOk = Date.now();
      $("status").textContent = `updated ${new Date().toLocaleTimeString()}`;
      $("status").classList.remove("stale");
      if (current && current.render) current.render();
      if (current && current.tick) await current.tick();
    } catch (e) {
      if (e instanceof ApiError && e.status === 0) {
        $("status").textContent = "broker unreachable";
        $("status").classList.add("stale");
      } else if (!(e instanceof ApiError && e.status === 401)) {
        showError(e);
      }
    } finally {
      polling = false;
    }
  }

  function startPolling() {
    clearInterval(pollTimer);
    pollTimer = setInterval(poll, POLL_MS);
  }

  // ---------------------------------------------------------------- login

  let loggedIn = false;

  function requireLogin(message) {
    sessionStorage.removeItem(AUTH_KEY);
    loggedIn = false;
    clearInterval(pollTimer);
    current = null;
    $("view").replaceChildren();
    $("nav").hidden = true;
    $("logout").hidden = true;
    $("who").textContent = "";
    $("status").textContent = "";
    $("login").hidden = false;
    const err = $("login-error");
    err.textContent = message || "";
    err.hidden = !message;
    $("login-user").focus();
  }

  async function enter(user) {
    loggedIn = true;
    $("login").hidden = true;
    $("nav").hidden = false;
    $("who").textContent = user ? `as ${user}` : "anonymous";
    $("logout").hidden = !user;
    show();
    await poll();
    startPolling();
  }

  /**
   * Whether these credentials may use the console. The API answers a user without the admin
   * permission with empty lists rather than a refusal, so an empty overview is checked with a
   * request that needs admin on every destination: its 403 means the user would see nothing.
   */
  async function checkAccess(auth) {
    const overview = await api("GET", "/api/overview", undefined, auth);
    if (overview && overview.destinations === 0) await api("GET", "/api/connections", undefined, auth);
  }

  async function login(e) {
    e.preventDefault();
    const user = $("login-user").value;
    const auth = basicAuth(user, $("login-password").value);
    const button = $("login-submit");
    button.disabled = true;
    try {
      await checkAccess(auth);
      sessionStorage.setItem(AUTH_KEY, auth);
      sessionStorage.setItem(`${AUTH_KEY}.user`, user);
      $("login-password").value = "";
      clearError();
      await enter(user);
    } catch (err) {
      const text =
        err.status === 401
          ? "Wrong user or password."
          : err.status === 403
            ? `${user} may not administer any destination of this broker: the console needs the admin permission.`
            : err instanceof ApiError
              ? err.describe()
              : String(err);
      $("login-error").textContent = text;
      $("login-error").hidden = false;
    } finally {
      button.disabled = false;
    }
  }

  function logout() {
    requireLogin("");
    sessionStorage.removeItem(`${AUTH_KEY}.user`);
  }

  async function start() {
    $("login-form").addEventListener("submit", login);
    $("logout").addEventListener("click", logout);
    $("error-close").addEventListener("click", clearError);
    window.addEventListener("hashchange", show);
    let resizing = 0;
    window.addEventListener("resize", () => {
      // Charts are drawn at their box's width: redraw once per frame while it changes.
      cancelAnimationFrame(resizing);
      resizing = requestAnimationFrame(() => current && current.render && current.render());
    });
    document.addEventListener("visibilitychange", () => {
      if (!document.hidden && loggedIn) poll();
    });
    const auth = storedAuth();
    try {
      await checkAccess(auth);
      await enter(auth ? sessionStorage.getItem(`${AUTH_KEY}.user`) || "" : "");
    } catch (e) {
      if (e instanceof ApiError && (e.status === 401 || e.status === 403)) {
        requireLogin(auth ? "Log in again." : "");
      } else {
        requireLogin("");
        showError(e);
      }
    }
  }

  start();
})();
