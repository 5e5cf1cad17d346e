// groove serve's web view (docs/design/serve.md §4.1) and its eval history page (§4.2, the
// page whose body says data-page="report"). Hand-written, no framework, no build step: it
// talks to the same JSON routes as any client (/info, /status, /search, /get, /report/plots).
// Everything that comes from the notes is put into the page with textContent or as a text
// node, never as HTML; the server's Content-Security-Policy forbids inline script anyway. The
// history's plots are SVG documents shown as images (blob: URLs of what /report/plots sent),
// so nothing in them can run.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const TOKEN_KEY = "groove-token";
  let editorTemplate = "";
  let started = 0;
  let uptimeBase = 0;

  /** An element with attributes and children; a string child becomes a text node. */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "class") node.className = value;
      else node.setAttribute(key, value);
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  async function call(route, params) {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(params || {})) {
      if (Array.isArray(value)) value.forEach((v) => query.append(key, v));
      else if (value !== "" && value !== null && value !== undefined) query.set(key, value);
    }
    const headers = { Accept: "application/json" };
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = "Bearer " + token;
    const text = query.toString();
    const response = await fetch(route + (text ? "?" + text : ""), { headers });
    if (response.status === 401) {
      $("token-form").hidden = false;
      $("token").focus();
      throw new Error("this server needs its token");
    }
    let body = null;
    try {
      body = await response.json();
    } catch (_) {
      throw new Error(route + " answered " + response.status);
    }
    if (!response.ok) {
      const error = (body && body.error) || {};
      throw new Error((error.message || route + " answered " + response.status) +
                      (error.hint ? " (" + error.hint + ")" : ""));
    }
    return { body, headers: response.headers };
  }

  function say(kind, text) {
    $("messages").append(el("p", { class: kind }, text));
  }

  function duration(seconds) {
    const s = Math.floor(seconds);
    if (s < 60) return s + " s";
    if (s < 3600) return Math.floor(s / 60) + " min " + (s % 60) + " s";
    return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
  }

  function tickUptime() {
    if (started) $("s-uptime").textContent = duration(uptimeBase + (Date.now() - started) / 1000);
  }

  async function loadStatus() {
    const info = (await call("/info")).body;
    $("s-version").textContent = info.version;
    $("s-kbs").textContent = info.kbs.join(", ");
    $("s-watcher").textContent = info.watcher + (info.warm ? "" : " (warming up)");
    editorTemplate = String(info.editor_url || "");
    uptimeBase = info.uptime_s;
    started = Date.now();
    tickUptime();
    const select = fillKbs(info.kbs);
    $("report-link").href = "/report?kb=" + encodeURIComponent(select.value);
    const status = (await call("/status", { kb: select.value })).body;
    $("s-notes").textContent = String(status.documents);
    $("s-chunks").textContent = String(status.chunks);
    $("s-pending").textContent = String(status.pending_vectors ?? "–");
    $("s-model").textContent = status.model && status.model.name ? status.model.name : "–";
    document.body.dataset.ready = "1";
  }

  /** The KB choice: the served KBs, the one the address names (?kb=NAME) chosen first. */
  function fillKbs(kbs) {
    const select = $("kb");
    if (!select.options.length) {
      for (const name of kbs) select.append(el("option", { value: name }, name));
      const wanted = new URLSearchParams(location.search).get("kb");
      if (wanted !== null && kbs.includes(wanted)) select.value = wanted;
    }
    return select;
  }

  /** The editor link of a hit (config `[serve] editor_url`), or null when unsafe/absent. */
  function editorLink(hit) {
    if (!editorTemplate || !hit.abs_path) return null;
    if (/^\s*(javascript|data|vbscript):/i.test(editorTemplate)) return null;
    const path = hit.abs_path.replace(/\\/g, "/").replace(/^\/+/, "")
      .split("/").map(encodeURIComponent).join("/").replace(/^([A-Za-z])%3A/, "$1:");
    return editorTemplate.split("{path}").join(path).split("{line}").join(String(hit.line_start));
  }

  const SNIPPET = 320; // code points of a hit's text shown

  /** The hit's text with its match spans (code-point offsets) as <mark> elements. */
  function snippet(hit) {
    const chars = Array.from(hit.content || "");
    const spans = (hit.match_spans || []).filter((s) => s.start < s.end).sort((a, b) => a.start - b.start);
    let from = 0;
    if (spans.length && spans[0].start > SNIPPET - 80) from = Math.max(0, spans[0].start - 60);
    const to = Math.min(chars.length, from + SNIPPET);
    const node = el("p", { class: "snippet" });
    if (from > 0) node.append("…");
    let at = from;
    for (const span of spans) {
      const start = Math.max(span.start, at);
      const end = Math.min(span.end, to);
      if (start >= end) continue;
      node.append(chars.slice(at, start).join(""));
      node.append(el("mark", {}, chars.slice(start, end).join("")));
      at = end;
    }
    node.append(chars.slice(at, to).join(""));
    if (to < chars.length) node.append("…");
    return node;
  }

  function hitItem(hit, kb) {
    const place = hit.path + ":" + hit.line_start;
    const href = editorLink(hit);
    const location = href ? el("a", { class: "loc", href }, place) : el("span", { class: "loc" }, place);
    const meta = el("div", { class: "meta" },
      el("span", { class: "relevance" }, "relevance " + Number(hit.relevance).toFixed(2)),
      el("span", {}, "score " + Number(hit.score).toFixed(4)));
    if (hit.date) meta.append(el("span", {}, String(hit.date)));
    if (hit.tags && hit.tags.length) meta.append(el("span", { class: "tags" }, "tags: " + hit.tags.join(", ")));
    if (hit.stale) meta.append(el("span", { class: "stale" }, "changed since indexed"));
    const open = el("button", { type: "button", class: "open", "aria-expanded": "false" }, "open");
    const item = el("li", { class: "hit", tabindex: "-1" },
      el("h2", { class: "title" }, hit.title || hit.path),
      el("div", { class: "where" }, location,
         hit.heading ? el("span", { class: "heading" }, "§ " + hit.heading) : null),
      meta, snippet(hit), open);
    item.dataset.path = hit.path;
    item.dataset.line = String(hit.line_start);
    item.dataset.count = String(hit.line_end - hit.line_start + 1);
    item.dataset.kb = kb;
    open.addEventListener("click", () => toggleNote(item));
    return item;
  }

  /** `get` of a hit in place: the whole note, the hit's lines marked, below the hit. */
  async function toggleNote(item) {
    const shown = item.querySelector(".note");
    const button = item.querySelector(".open");
    if (shown) {
      shown.remove();
      button.textContent = "open";
      button.setAttribute("aria-expanded", "false");
      return;
    }
    button.disabled = true;
    try {
      const note = (await call("/get", { path: item.dataset.path, kb: item.dataset.kb })).body;
      const first = Number(item.dataset.line);
      const last = first + Number(item.dataset.count) - 1;
      const lines = String(note.content).split("\n");
      if (lines.length && lines[lines.length - 1] === "") lines.pop();
      const pre = el("pre", { class: "note", tabindex: "-1" });
      lines.forEach((line, i) => {
        const number = note.line_start + i;
        const row = el("span", { class: number >= first && number <= last ? "line hit-line" : "line" },
          el("span", { class: "n" }, String(number)), line || " ");
        pre.append(row);
      });
      item.append(pre);
      button.textContent = "close";
      button.setAttribute("aria-expanded", "true");
      const target = pre.querySelector(".hit-line");
      if (target) target.scrollIntoView({ block: "nearest" });
    } catch (error) {
      say("error", String(error.message || error));
    } finally {
      button.disabled = false;
    }
  }

  async function search(event) {
    if (event) event.preventDefault();
    const query = $("q").value.trim();
    $("messages").replaceChildren();
    if (!query) return;
    const tags = $("tags").value.split(",").map((t) => t.trim()).filter(Boolean);
    const globs = $("path_glob").value.trim();
    const kb = $("kb").value;
    const params = {
      q: query, limit: $("limit").value, mode: $("mode").value, kb,
      path_glob: globs ? [globs] : [], tag_any: tags,
      date_from: $("date_from").value, date_to: $("date_to").value,
    };
    const list = $("results");
    list.setAttribute("aria-busy", "true");
    try {
      const { body, headers } = await call("/search", params);
      list.replaceChildren(...body.results.map((hit) => hitItem(hit, kb)));
      let notes = [];
      try { notes = JSON.parse(headers.get("Groove-Messages") || "[]"); } catch (_) { notes = []; }
      for (const note of notes) say(note.kind, note.text);
      if (body.low_confidence) say("note", "low confidence: nothing matches this query well");
      if (!body.results.length) say("note", "no results");
      document.body.dataset.searched = String(Number(document.body.dataset.searched || 0) + 1);
    } catch (error) {
      list.replaceChildren();
      say("error", String(error.message || error));
    } finally {
      list.removeAttribute("aria-busy");
    }
  }

  function hits() {
    return Array.from(document.querySelectorAll("#results > li.hit"));
  }

  function onKey(event) {
    const items = hits();
    const here = items.indexOf(document.activeElement.closest ? document.activeElement.closest("li.hit") : null);
    const typing = document.activeElement && ["INPUT", "SELECT"].includes(document.activeElement.tagName);
    if (event.key === "ArrowDown" && (here >= 0 || document.activeElement === $("q")) && items.length) {
      event.preventDefault();
      items[Math.min(here + 1, items.length - 1)].focus();
    } else if (event.key === "ArrowUp" && here >= 0) {
      event.preventDefault();
      if (here === 0) $("q").focus(); else items[here - 1].focus();
    } else if ((event.key === "Enter" || event.key === "o") && here >= 0 &&
               document.activeElement === items[here]) {
      event.preventDefault();
      toggleNote(items[here]);
    } else if (event.key === "Escape" || (event.key === "/" && !typing)) {
      event.preventDefault();
      $("q").focus();
      $("q").select();
    }
  }

  /** The history page: the chosen KB's stored eval runs as pictures (/report/plots). */
  const plotUrls = [];

  async function loadReport() {
    const kb = $("kb").value;
    const box = $("report");
    box.setAttribute("aria-busy", "true");
    $("messages").replaceChildren();
    delete document.body.dataset.shown;
    try {
      const doc = (await call("/report/plots", { kb })).body;
      plotUrls.splice(0).forEach((url) => URL.revokeObjectURL(url));
      $("r-runs").textContent = String(doc.runs);
      const parts = [];
      if (!doc.runs) {
        parts.push(el("p", { class: "empty", id: "no-history" },
          "No eval history for " + doc.kb + " yet. Run ", el("code", {}, "groove eval"),
          " in its folder (the golden queries are its .groove-eval.yml) to record a run; " +
          "each run adds a point to the pictures here."));
      }
      for (const line of doc.meta) parts.push(el("p", { class: "run-meta" }, line));
      const images = [];
      for (const plot of doc.plots) {
        const url = URL.createObjectURL(new Blob([plot.svg], { type: "image/svg+xml" }));
        plotUrls.push(url);
        const image = el("img", { id: plot.id, class: "plot", src: url, alt: plot.title });
        images.push(image);
        const section = el("section", { class: "plot", id: "section-" + plot.id },
          el("h2", {}, plot.title), el("figure", {}, image, el("figcaption", {}, plot.caption)));
        if (plot.notes.length) {
          section.append(el("ol", { class: "notes" }, ...plot.notes.map((note) => el("li", {}, note))));
        }
        parts.push(section);
      }
      box.replaceChildren(...parts);
      await Promise.all(images.map((image) => image.decode()));
      document.body.dataset.shown = doc.kb;
    } catch (error) {
      box.replaceChildren();
      say("error", String(error.message || error));
      document.body.dataset.shown = "error";
    } finally {
      box.removeAttribute("aria-busy");
    }
  }

  async function loadKbsAndReport() {
    const kbs = fillKbs((await call("/info")).body.kbs);
    $("search-link").href = "/?kb=" + encodeURIComponent(kbs.value);
    await loadReport();
  }

  /** The token form: keep the token for the tab, then `reload`. */
  function askToken(reload) {
    $("token-form").addEventListener("submit", (event) => {
      event.preventDefault();
      sessionStorage.setItem(TOKEN_KEY, $("token").value);
      $("token-form").hidden = true;
      $("messages").replaceChildren();
      reload().catch((error) => say("error", String(error.message || error)));
    });
  }

  function startReport() {
    askToken(loadKbsAndReport);
    $("kb").addEventListener("change", () => {
      const kb = encodeURIComponent($("kb").value);
      history.replaceState(null, "", "/report?kb=" + kb);
      $("search-link").href = "/?kb=" + kb;
      loadReport();
    });
    loadKbsAndReport().catch((error) => say("error", String(error.message || error)));
  }

  function start() {
    if (document.body.dataset.page === "report") {
      startReport();
      return;
    }
    $("search").addEventListener("submit", search);
    askToken(async () => {
      $("q").focus();
      await loadStatus();
    });
    $("kb").addEventListener("change", () => loadStatus().catch((e) => say("error", String(e.message || e))));
    document.addEventListener("keydown", onKey);
    $("q").focus();
    loadStatus().catch((error) => say("error", String(error.message || error)));
    setInterval(tickUptime, 1000);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
