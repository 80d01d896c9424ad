// The context explorer: asks /v1/assemble (with explain) and draws where the budget went.
// It reads only what the API returns, so a script gets everything shown here. Fields of the
// explanation that an older server does not give (depth_by, location, an omitted entry's
// reason) are shown when present and left out when not; the totals come from the fragments.
"use strict";
(function () {
  const auth = window.contextfuseAuth;
  const squarify = window.contextfuseTreemap.squarify;
  const SVG = "http://www.w3.org/2000/svg";
  const DEPTHS = { 9: "full source", 4: "signatures", 2: "outline", 0: "listing" };
  const WIDTH = 960;
  const HEIGHT = 440;

  const $ = (id) => document.getElementById(id);
  const state = { pinned: null, last: null, strategyRows: [] };

  // ---- small DOM helpers (text only: nothing from the server is parsed as HTML) -----------

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat()) {
      if (child === undefined || child === null) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  // replaceChildren() without the children that are absent (null: a fact not given).
  function fill(node, ...children) {
    node.replaceChildren(...children.flat().filter((child) => child !== null && child !== undefined));
  }

  function svg(tag, attrs) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
    return node;
  }

  const fmt = (n) => Number(n).toLocaleString("en-US");
  const depthName = (depth) => DEPTHS[depth] || "depth " + depth;
  const depthClass = (depth) => "d" + (depth in DEPTHS ? depth : "x");

  function setStatus(text, isError) {
    const status = $("status");
    status.textContent = text;
    status.className = isError ? "error" : "";
  }

  // ---- reading a payload ------------------------------------------------------------------

  // "project://name/path/to/file.py#Qual.name" -> {file: "path/to/file.py", symbol: "Qual.name"}
  function splitNode(uri) {
    const hash = uri.indexOf("#");
    const base = hash >= 0 ? uri.slice(0, hash) : uri;
    const symbol = hash >= 0 ? uri.slice(hash + 1) : "";
    const match = /^[a-z][a-z0-9+.-]*:\/\/[^/]*\/?(.*)$/i.exec(base);
    return { file: match ? match[1] || base : base, symbol };
  }

  // A node as a reader names it: its file, then its symbol.
  const shortNode = (item) => item.file + (item.symbol ? "#" + item.symbol : "");

  function lineSpan(location) {
    const match = /^L(\d+)-L(\d+)$/.exec(location || "");
    return match ? { first: Number(match[1]), last: Number(match[2]) } : null;
  }

  // Each fragment of the payload joined with its explanation entry (by node, in order).
  function readPayload(payload) {
    const explanation = payload.explanation || {};
    const pending = new Map();
    for (const entry of explanation.fragments || []) {
      if (!pending.has(entry.uko_node)) pending.set(entry.uko_node, []);
      pending.get(entry.uko_node).push(entry);
    }
    const fragments = payload.fragments.map((fragment, index) => {
      const queue = pending.get(fragment.uko_node);
      const why = (queue && queue.shift()) || {};
      const provenance = fragment.provenance || {};
      const fileUri = provenance.resource_uri || fragment.uko_node;
      const node = splitNode(fragment.uko_node);
      return {
        index,
        fragment,
        why,
        node: fragment.uko_node,
        file: splitNode(fileUri).file,
        symbol: node.symbol,
        location: provenance.location || why.location || "",
        depth: fragment.detail_depth,
        tokens: fragment.token_count,
        score: why.score !== undefined ? why.score : fragment.relevance_score,
        strategies: why.strategies || (fragment.metadata.strategy ? [fragment.metadata.strategy] : []),
        ranks: why.ranks || {},
      };
    });
    // An entry a strategy ranked but did not render ("below the cut") has no depth,
    // tokens or score: those stay null and show as a dash.
    const omitted = (explanation.omitted || []).map((entry) => ({
      ...entry,
      ...splitNode(entry.uko_node),
      depth: entry.depth ?? null,
      tokens: entry.tokens ?? null,
      score: entry.score ?? null,
      reason: entry.reason || "",
    }));
    return { payload, explanation, fragments, omitted };
  }

  // The strategy a fragment is counted for: the one that ranked it best (ties: listed first).
  function creditedStrategy(item) {
    let best = null;
    for (const name of item.strategies) {
      const rank = item.ranks[name];
      if (rank !== undefined && (best === null || rank < item.ranks[best])) best = name;
    }
    return best || item.strategies[0] || "(the engine)";
  }

  function totalsBy(items, key) {
    const totals = new Map();
    for (const item of items) {
      const name = key(item);
      const entry = totals.get(name) || { name, tokens: 0, count: 0, untold: 0 };
      entry.tokens += item.tokens || 0;
      entry.untold += item.tokens === null ? 1 : 0;
      entry.count += 1;
      totals.set(name, entry);
    }
    return [...totals.values()].sort((a, b) => b.tokens - a.tokens || (a.name < b.name ? -1 : 1));
  }

  // ---- drawing ----------------------------------------------------------------------------

  // Files as cells of the budget (with the overview, the reserve and what is unused), each
  // file split into its fragments coloured by depth.
  function drawTreemap(target, view, width, height) {
    const payload = view.payload;
    target.replaceChildren();
    const files = new Map();
    for (const item of view.fragments) {
      if (!files.has(item.file)) files.set(item.file, []);
      files.get(item.file).push(item);
    }
    const cells = [...files].map(([file, items]) => ({
      kind: "file",
      label: file,
      value: items.reduce((sum, item) => sum + item.tokens, 0),
      items,
    }));
    const budget = payload.budget || {};
    const max = budget.max_tokens || payload.total_tokens + payload.preamble_tokens;
    const reserved = budget.reserved_tokens || 0;
    const unused = max - reserved - payload.total_tokens - payload.preamble_tokens;
    cells.push({ kind: "overview", label: "context overview", value: payload.preamble_tokens });
    cells.push({ kind: "reserved", label: "reserved", value: reserved });
    cells.push({ kind: "unused", label: "unused", value: Math.max(0, unused) });
    target.setAttribute("viewBox", `0 0 ${width} ${height}`);
    target.dataset.budget = String(max);
    target.dataset.tokens = String(payload.total_tokens + payload.preamble_tokens);
    for (const cell of squarify(cells, { x: 0, y: 0, w: width, h: height })) {
      const { item } = cell;
      const group = svg("g", { class: "cell " + item.kind });
      const rect = svg("rect", {
        class: item.kind,
        x: cell.x,
        y: cell.y,
        width: cell.w,
        height: cell.h,
        "data-tokens": item.value,
        "data-label": item.label,
      });
      group.append(rect);
      const title = svg("title", {});
      title.textContent = `${item.label}: ${fmt(item.value)} tokens`;
      if (item.kind === "file") {
        const parts = squarify(
          item.items.map((fragment) => ({ value: fragment.tokens, fragment })),
          { x: cell.x, y: cell.y, w: cell.w, h: cell.h },
        );
        for (const part of parts) {
          const inner = svg("rect", {
            class: "fragment " + depthClass(part.item.fragment.depth),
            x: part.x,
            y: part.y,
            width: part.w,
            height: part.h,
            "data-tokens": part.item.value,
            "data-index": part.item.fragment.index,
          });
          const tip = svg("title", {});
          const f = part.item.fragment;
          tip.textContent = `${f.node}\n${depthName(f.depth)}, ${fmt(f.tokens)} tokens`;
          inner.append(tip);
          inner.addEventListener("click", () => openDetail(f.index));
          group.append(inner);
        }
        group.append(svg("rect", { class: "outline", x: cell.x, y: cell.y, width: cell.w, height: cell.h }));
      } else {
        group.append(title);
      }
      if (cell.w > 70 && cell.h > 18) {
        const label = svg("text", { x: cell.x + 4, y: cell.y + 14, class: "label" });
        const room = Math.floor((cell.w - 8) / 6.6);
        const text = `${item.label} ${fmt(item.value)}`;
        label.textContent = text.length > room ? "…" + text.slice(text.length - room + 1) : text;
        group.append(label);
      }
      if (item.kind === "file") group.querySelector("rect.file").append(title);
      target.append(group);
    }
  }

  // rows: [{name, tokens, count}]; the bar's segments measure `by` ("tokens" or "count").
  function stackedBar(rows, classOf, by = "tokens") {
    const bar = el("div", { class: "stack" });
    const table = el("table", { class: "totals" });
    const total = rows.reduce((sum, row) => sum + row[by], 0);
    for (const row of rows) {
      const share = total ? (100 * row[by]) / total : 0;
      const segment = el("span", {
        class: "segment " + classOf(row),
        title: `${row.name}: ${fmt(row.tokens)} tokens, ${row.count} fragments`,
      });
      segment.style.width = share + "%";
      bar.append(segment);
      table.append(
        el(
          "tr",
          {},
          el("td", {}, el("span", { class: "swatch " + classOf(row) })),
          el("td", {}, row.name),
          el("td", { class: "num" }, row.untold === row.count ? "—" : fmt(row.tokens)),
          el("td", { class: "num" }, share.toFixed(1) + "%"),
          el("td", { class: "num" }, row.count + (row.count === 1 ? " fragment" : " fragments")),
        ),
      );
    }
    return el("div", {}, bar, table);
  }

  function drawBreakdowns(view) {
    const byDepth = totalsBy(view.fragments, (item) => item.depth)
      .sort((a, b) => b.name - a.name)
      .map((row) => ({ ...row, depth: row.name, name: depthName(row.name) }));
    $("by-depth").replaceChildren(stackedBar(byDepth, (row) => depthClass(row.depth)));
    const strategies = totalsBy(view.fragments, creditedStrategy);
    const palette = strategies.map((row) => row.name);
    $("by-strategy").replaceChildren(
      stackedBar(strategies, (row) => "s" + (palette.indexOf(row.name) % 6)),
    );
    const reasons = totalsBy(view.omitted, (item) => item.reason || "not packed (no reason given)");
    const dedup = view.explanation.dedup_count;
    const stopped = view.explanation.stopped_by;
    fill(
      $("by-reason"),
      view.omitted.length
        ? stackedBar(reasons, (row) => "r" + (reasons.indexOf(row) % 6), "count")
        : el("p", {}, "Nothing of what the strategies found was left out."),
      stopped ? el("p", { class: "note" }, `Packing stopped: ${stopped}.`) : null,
      dedup ? el("p", { class: "note" }, `${fmt(dedup)} duplicate fragments were merged before packing.`) : null,
    );
  }

  function rankText(item) {
    return item.strategies
      .map((name) => (item.ranks[name] !== undefined ? `${name} #${item.ranks[name]}` : name))
      .join(", ");
  }

  function drawFragments(view) {
    const body = $("fragments").querySelector("tbody");
    body.replaceChildren();
    for (const item of view.fragments) {
      const row = el(
        "tr",
        { class: "fragment-row", "data-index": item.index, tabindex: 0 },
        el("td", { class: "num" }, item.index + 1),
        el("td", { class: "path" }, item.file),
        el("td", { class: "path" }, item.symbol || "(file)"),
        el("td", {}, item.location),
        el("td", {}, el("span", { class: "swatch " + depthClass(item.depth) }), " ", depthName(item.depth)),
        el("td", { class: "num" }, fmt(item.tokens)),
        el("td", { class: "num" }, Number(item.score).toFixed(4)),
        el("td", {}, rankText(item)),
      );
      row.addEventListener("click", () => openDetail(item.index));
      row.addEventListener("keydown", (event) => {
        if (event.key === "Enter") openDetail(item.index);
      });
      body.append(row);
    }
    const omitted = $("omitted").querySelector("tbody");
    omitted.replaceChildren(
      ...view.omitted.map((item) =>
        el(
          "tr",
          {},
          el("td", { class: "path" }, item.file),
          el("td", { class: "path" }, item.symbol || "(file)"),
          el("td", {}, item.depth === null ? "—" : depthName(item.depth)),
          el("td", { class: "num" }, item.tokens === null ? "—" : fmt(item.tokens)),
          el("td", { class: "num" }, item.score === null ? "—" : Number(item.score).toFixed(4)),
          el(
            "td",
            {},
            (item.reason || "not packed (no reason given)") +
              (item.strategy ? ` (${item.strategy})` : ""),
          ),
        ),
      ),
    );
    $("omitted-note").textContent = view.omitted.length
      ? `(${view.omitted.length} listed, best first; the explanation lists the 50 best of ` +
        "those the packer saw, then what each strategy ranked below its cut)"
      : "";
  }

  function sourceBlock(item) {
    const content = item.fragment.content;
    const lines = content.replace(/\n$/, "").split("\n");
    const span = lineSpan(item.location);
    // The file's own line numbers fit only a rendering that shows every line of its span.
    const numbered = span && span.last - span.first + 1 === lines.length;
    const pre = el("pre", { class: "source" });
    lines.forEach((line, i) => {
      pre.append(
        el("span", { class: "line" }, el("span", { class: "ln" }, numbered ? span.first + i : ""), line + "\n"),
      );
    });
    const note = numbered
      ? `${item.file}, lines ${span.first}-${span.last}`
      : span
        ? `${item.file}: ${depthName(item.depth)} of lines ${span.first}-${span.last} (not every line is shown, so lines are not numbered)`
        : item.file;
    return el("div", {}, el("p", { class: "note" }, note), pre);
  }

  function componentsTable(components) {
    const entries = Object.entries(components || {});
    const largest = Math.max(1e-12, ...entries.map(([, value]) => Math.abs(value)));
    return el(
      "table",
      { class: "components" },
      entries.map(([name, value]) => {
        const bar = el("span", { class: "part " + (value < 0 ? "negative" : "positive") });
        bar.style.width = (100 * Math.abs(value)) / largest + "%";
        return el(
          "tr",
          {},
          el("td", {}, name),
          el("td", { class: "num" }, value.toFixed(6)),
          el("td", { class: "barcell" }, bar),
        );
      }),
    );
  }

  function openDetail(index) {
    const view = state.last.view;
    const item = view.fragments[index];
    const body = $("fragments").querySelector("tbody");
    const open = body.querySelector("tr.detail-row");
    const wasOpen = open && open.dataset.index === String(index);
    if (open) open.remove();
    body.querySelectorAll("tr.selected").forEach((row) => row.classList.remove("selected"));
    if (wasOpen) return;
    const row = body.querySelector(`tr.fragment-row[data-index="${index}"]`);
    row.classList.add("selected");
    const why = item.why;
    const facts = el(
      "dl",
      { class: "facts" },
      el("dt", {}, "node"),
      el("dd", { class: "path" }, item.node),
      el("dt", {}, "depth"),
      el("dd", {}, `${item.depth} (${depthName(item.depth)})`),
      el("dt", {}, "why this depth"),
      el("dd", { class: "depth-reason" }, why.depth_reason || item.fragment.metadata.depth_reason || "not given"),
      why.depth_by ? [el("dt", {}, "depth chosen by"), el("dd", {}, why.depth_by)] : null,
      el("dt", {}, "tokens"),
      el("dd", {}, fmt(item.tokens)),
      el("dt", {}, "score"),
      el("dd", {}, Number(item.score).toFixed(6)),
      el("dt", {}, "found by"),
      el(
        "dd",
        {},
        item.strategies.length
          ? item.strategies.map((name) =>
              el("span", { class: "chip" }, item.ranks[name] !== undefined ? `${name}: rank ${item.ranks[name]}` : name),
            )
          : "the engine (no strategy ranked it)",
        why.agreement !== undefined ? ` agreement ${why.agreement}` : null,
      ),
      why.signals ? [el("dt", {}, "signals"), el("dd", {}, why.signals)] : null,
      Number(why.redacted || item.fragment.metadata.redacted || 0)
        ? [el("dt", {}, "redacted"), el("dd", {}, `${why.redacted || item.fragment.metadata.redacted} secret(s) replaced by [REDACTED:…]`)]
        : null,
      el("dt", {}, "tier"),
      el("dd", {}, item.fragment.tier),
    );
    const cell = el(
      "td",
      { colspan: 8 },
      el("div", { class: "detail" }, el("div", {}, facts, why.components ? componentsTable(why.components) : null), sourceBlock(item)),
    );
    row.after(el("tr", { class: "detail-row", "data-index": index }, cell));
  }

  function drawSummary(view, settings) {
    const payload = view.payload;
    const files = new Set(view.fragments.map((item) => item.file));
    const used = payload.total_tokens + payload.preamble_tokens;
    const max = (payload.budget && payload.budget.max_tokens) || used;
    fill(
      $("summary"),
      el("span", { class: "big", id: "used-tokens", "data-tokens": used }, `${fmt(used)} of ${fmt(max)} tokens`),
      el("span", {}, `${view.fragments.length} fragments from ${files.size} files`),
      el("span", {}, `overview ${fmt(payload.preamble_tokens)} tokens`),
      el("span", {}, "strategies: " + (payload.strategies_used.join(", ") || "none")),
      view.explanation.seconds !== undefined ? el("span", {}, `${view.explanation.seconds} s`) : null,
      el("span", { class: "hash", title: "context hash" }, payload.context_hash.slice(0, 12)),
    );
    drawCurl(settings);
  }

  function drawCurl(settings) {
    if (settings.saved) {
      $("curl").textContent = `Loaded from ${settings.project}; no request was made.`;
      return;
    }
    const body = JSON.stringify({ ...requestBody(settings) });
    const lines = [
      `curl -s ${location.origin}/v1/assemble \\`,
      `  -H 'content-type: application/json' \\`,
    ];
    if (auth.token()) lines.push(`  -H "Authorization: Bearer $CONTEXTFUSE_SERVER_TOKEN" \\`);
    lines.push(`  -d '${body.replace(/'/g, "'\\''")}'`);
    $("curl").textContent = lines.join("\n");
  }

  function drawLegend() {
    $("legend").replaceChildren(
      ...Object.keys(DEPTHS)
        .sort((a, b) => b - a)
        .map((depth) => el("span", {}, el("span", { class: "swatch " + depthClass(depth) }), DEPTHS[depth])),
      el("span", {}, el("span", { class: "swatch overview" }), "context overview"),
      el("span", {}, el("span", { class: "swatch unused" }), "unused"),
    );
  }

  // ---- comparing two payloads ---------------------------------------------------------------

  function byNode(view) {
    const nodes = new Map();
    for (const item of view.fragments) nodes.set(item.node, item);
    return nodes;
  }

  function compareColumn(label, run, other) {
    const mine = byNode(run.view);
    const theirs = byNode(other.view);
    const only = [...mine.values()].filter((item) => !theirs.has(item.node));
    const changed = [...mine.values()].filter(
      (item) => theirs.has(item.node) && theirs.get(item.node).depth !== item.depth,
    );
    const payload = run.view.payload;
    const list = (items, describe) =>
      items.length
        ? el("ul", { class: "diff" }, items.map((item) =>
              el("li", {}, el("span", { class: "path" }, shortNode(item)), " ", describe(item)),
            ),
          )
        : el("p", { class: "note" }, "none");
    const map = svg("svg", { class: "treemap small", preserveAspectRatio: "none" });
    const column = el(
      "div",
      { "data-run": label },
      el("h3", {}, `${label}: budget ${fmt(run.settings.budget)}, ${run.settings.strategies.join(", ") || "enabled strategies"}`),
      el(
        "p",
        {},
        `${fmt(payload.total_tokens + payload.preamble_tokens)} tokens, ${run.view.fragments.length} fragments`,
      ),
      map,
      el("h4", {}, `Only in ${label} (${only.length})`),
      list(only, (item) => `${depthName(item.depth)}, ${fmt(item.tokens)} tokens`),
      el("h4", {}, `Other depth in ${label} (${changed.length})`),
      list(changed, (item) => `${depthName(item.depth)} (was ${depthName(theirs.get(item.node).depth)})`),
    );
    drawTreemap(map, run.view, WIDTH, HEIGHT / 2);
    return column;
  }

  function drawCompare() {
    const section = $("compare");
    if (!state.pinned || !state.last || state.pinned === state.last) {
      section.hidden = true;
      return;
    }
    section.hidden = false;
    $("compare-a").replaceChildren(compareColumn("A", state.pinned, state.last));
    $("compare-b").replaceChildren(compareColumn("B", state.last, state.pinned));
  }

  // ---- the form -----------------------------------------------------------------------------

  function readSettings() {
    const strategies = [...document.querySelectorAll("#strategies input:checked")].map((box) => box.value);
    return {
      project: $("project").value,
      query: $("query").value,
      budget: Number($("budget").value),
      strategies,
    };
  }

  function requestBody(settings) {
    const body = { query: settings.query, project: settings.project, budget: settings.budget, explain: true };
    if (settings.strategies.length) body.strategies = settings.strategies;
    return body;
  }

  function saveToAddress(settings) {
    const params = new URLSearchParams({ project: settings.project, q: settings.query, budget: settings.budget });
    if (settings.strategies.length) params.set("strategies", settings.strategies.join(","));
    history.replaceState(null, "", "#" + params.toString());
  }

  function describeError(data, status) {
    const detail = data && data.detail;
    if (Array.isArray(detail)) return detail.map((p) => `${p.field}: ${p.message}`).join("; ");
    return typeof detail === "string" ? detail : "HTTP " + status;
  }

  // Draw a payload (from the API, or a saved `contextfuse assemble --format json --explain`).
  function show(payload, settings) {
    const view = readPayload(payload);
    state.last = { settings, view };
    $("result").hidden = false;
    drawSummary(view, settings);
    drawTreemap($("treemap"), view, WIDTH, HEIGHT);
    drawBreakdowns(view);
    drawFragments(view);
    drawCompare();
    $("pin").disabled = false;
    document.body.dataset.runs = String(Number(document.body.dataset.runs || 0) + 1);
  }

  function openSaved() {
    const file = $("load").files[0];
    if (!file) return;
    file
      .text()
      .then((text) => {
        const payload = JSON.parse(text);
        if (!payload || !Array.isArray(payload.fragments) || !payload.budget) {
          throw new Error("not a payload: it needs fragments and a budget");
        }
        const settings = {
          project: file.name,
          query: "",
          budget: payload.budget.max_tokens,
          strategies: payload.strategies_used || [],
          saved: true,
        };
        show(payload, settings);
        setStatus(`Showing ${file.name}.`);
      })
      .catch((error) => setStatus(`Could not read ${file.name}: ${error.message}`, true))
      .finally(() => {
        $("load").value = "";
      });
  }

  async function run(event) {
    if (event) event.preventDefault();
    const settings = readSettings();
    if (!settings.query.trim()) {
      setStatus("Write a query first.", true);
      return;
    }
    setStatus("Assembling…");
    $("run").disabled = true;
    try {
      const response = await auth.api("/v1/assemble", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(requestBody(settings)),
      });
      const data = await response.json().catch(() => null);
      if (!response.ok) {
        setStatus("The server refused the request: " + describeError(data, response.status), true);
        return;
      }
      saveToAddress(settings);
      show(data, settings);
      setStatus("");
    } catch (error) {
      setStatus("Could not reach the server: " + error, true);
    } finally {
      $("run").disabled = false;
    }
  }

  async function loadStrategies(project, wanted) {
    const fieldset = $("strategies");
    fieldset.querySelectorAll("label").forEach((label) => label.remove());
    const response = await auth.api("/v1/strategies?project=" + encodeURIComponent(project));
    if (!response.ok) return;
    const rows = (await response.json()).projects[project] || [];
    for (const row of rows) {
      const box = el("input", {
        type: "checkbox",
        value: row.name,
        disabled: !row.available,
        checked: wanted.includes(row.name),
      });
      const label = el(
        "label",
        { class: "strategy", title: row.available ? row.explain || "" : row.reason || "not available" },
        box,
        row.name,
        row.enabled ? el("small", {}, " (default)") : null,
      );
      fieldset.append(label);
    }
  }

  async function start() {
    drawLegend();
    const wanted = new URLSearchParams(location.hash.slice(1));
    const response = await auth.api("/healthz");
    if (!response.ok) {
      setStatus("The server did not answer: HTTP " + response.status, true);
      return;
    }
    const projects = (await response.json()).projects;
    $("served").textContent = projects.length ? "serving " + projects.join(", ") : "serving no project";
    $("project").replaceChildren(...projects.map((name) => el("option", { value: name }, name)));
    if (projects.includes(wanted.get("project"))) $("project").value = wanted.get("project");
    if (wanted.get("q")) $("query").value = wanted.get("q");
    if (Number(wanted.get("budget")) > 0) $("budget").value = wanted.get("budget");
    const strategies = (wanted.get("strategies") || "").split(",").filter(Boolean);
    if (projects.length) await loadStrategies($("project").value, strategies);
    $("project").addEventListener("change", () => loadStrategies($("project").value, []));
    $("query-form").addEventListener("submit", run);
    $("load").addEventListener("change", openSaved);
    $("pin").addEventListener("click", () => {
      state.pinned = state.last;
      $("unpin").hidden = false;
      setStatus("Kept as A: change the budget or the strategies and assemble again to compare.");
      drawCompare();
    });
    $("unpin").addEventListener("click", () => {
      state.pinned = null;
      $("unpin").hidden = true;
      drawCompare();
    });
    document.body.dataset.ready = "true";
    if (projects.length && $("query").value.trim()) await run();
  }

  start();
})();
