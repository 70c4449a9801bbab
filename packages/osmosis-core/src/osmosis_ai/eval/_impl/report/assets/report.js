// osmosis eval report: renders the data embedded in this file. No network, no dependencies.
(async () => {
  "use strict";
  const META = JSON.parse(document.getElementById("meta").textContent);
  const PAGE = 100;
  const $ = (sel) => document.querySelector(sel);
  const el = (tag, attrs, ...kids) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "on") for (const [ev, fn] of Object.entries(v)) node.addEventListener(ev, fn);
      else if (k === "class") node.className = v;
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const kid of kids.flat()) if (kid !== null && kid !== undefined)
      node.append(kid instanceof Node ? kid : String(kid));
    return node;
  };
  const num = (v, d = 4) => (v === null || v === undefined ? "–" : Number(v).toFixed(d));
  const int = (v) => (v === null || v === undefined ? "–" : Number(v).toLocaleString("en-US"));
  const ms = (v) => (v === null || v === undefined ? "–" : v >= 1000 ? (v / 1000).toFixed(2) + " s" : v.toFixed(0) + " ms");
  const pct = (v) => (v === null || v === undefined ? "–" : (100 * v).toFixed(1) + "%");
  const usd = (v) => (v === null || v === undefined ? "–" : "$" + (v >= 1 ? v.toFixed(2) : v.toPrecision(2)));

  async function unpack(id) {
    const bin = atob(document.getElementById(id).textContent);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }
  const details = {};  // run index -> promise of per-row details (decoded on first use)
  const detailsOf = (run) => (details[run] ||= unpack("details-" + run));

  const runs = META.runs;
  const rows = await unpack("rows-0");
  rows.forEach((r, k) => (r.k = k));
  const OUTCOME = { pass: "passed", fail: "below threshold", failed: "failed (no reward)", skipped: "skipped" };

  // ---- provenance ---------------------------------------------------------------------------
  const seen = (h, key, show) => {
    const values = (h.reproducibility || {})[key];
    return values === undefined ? "(not recorded)" : values.length ? values.map(show).join("; ") : "none";
  };
  function provenance() {
    const fields = [
      ["run", (h) => h.name], ["status", (h) => (h.pending ? `${h.status} (${h.pending} pending)` : h.status) + (h.stop_code ? ` · stop code ${h.stop_code}` : "")],
      ["rollout", (h) => h.rollout],
      ["entrypoint", (h) => h.entrypoint], ["model", (h) => h.model],
      ["base URL host", (h) => h.base_url_host || "(mock / local)"],
      ["dataset", (h) => h.dataset_file], ["dataset sha256", (h) => h.dataset_sha256],
      ["selected rows × n", (h) => `${h.selected_rows ?? "?"} × ${h.n}`],
      ["code digest", (h) => h.source_digest], ["pass threshold", (h) => h.pass_threshold],
      ["started", (h) => h.started_at], ["completed", (h) => h.completed_at],
      ["duration", (h) => ms(h.duration_ms)], ["command", (h) => h.command || "(not recorded)"],
      ["versions", (h) => Object.entries(h.versions || {}).map(([k, v]) => `${k} ${v}`).join(", ") || "(not recorded)"],
      ["sampling seen", (h) => seen(h, "sampling", (v) => JSON.stringify(v))],
      ["seeds seen", (h) => seen(h, "seeds", String)],
      ["system fingerprints", (h) => seen(h, "system_fingerprints", String)],
    ];
    // Harbor rollouts only: each task with its task and image digests (no row otherwise).
    const short = (v) => (v ? String(v).replace(/^sha256:/, "").slice(0, 12) : "none");
    const harborTask = (t) => `${t.name}: task ${short(t.task_sha256)}, Dockerfile ${short(t.dockerfile_sha256)}` +
      `, image ${t.docker_image || t.base_image || "none"} (digest ${short(t.image_digest)}), ${t.environment}`;
    if (runs.some((r) => r.header.halt_reason))
      fields.splice(2, 0, ["stopped early", (h) => h.halt_reason || "–"]);
    if (runs.some((r) => (r.header.reproducibility || {}).harbor_tasks))
      fields.push(["Harbor tasks", (h) => seen(h, "harbor_tasks", harborTask)]);
    const heads = runs.map((r, i) => el("th", {}, runs.length > 1 ? (i === 0 ? "this run" : "baseline") : ""));
    const table = el("table", { class: "kv" }, runs.length > 1 ? el("tr", {}, el("th"), heads) : null,
      fields.map(([label, get]) => el("tr", {}, el("th", {}, label),
        runs.map((r) => el("td", { class: "mono" }, get(r.header) ?? "–")))));
    $("#provenance").append(el("h2", {}, "Provenance"), table);
  }

  // ---- metrics ------------------------------------------------------------------------------
  const card = (label, value, note, attrs) => el("div", { class: "card" },
    el("div", { class: "label" }, label), el("div", Object.assign({ class: "value" }, attrs || {}), value),
    el("div", { class: "note" }, note));
  function metrics() {
    const m = runs[0].metrics;
    const ci = (c, f) => (c ? `95% CI ${f(c.low)} – ${f(c.high)}` : "no graded rows");
    const denom = `over ${int(m.graded)} graded · ${int(m.failed)} failed and ${int(m.skipped)} skipped excluded`;
    const cards = [
      card("rows", int(m.total), `of ${int(m.total_work_items)} work items`, { id: "row-count", "data-value": m.total }),
      card("mean reward", num(m.mean), `${ci(m.mean_ci, (x) => num(x, 3))}; ${denom}`, { id: "mean-reward", "data-value": m.mean ?? "" }),
      card("pass rate", m.pass_rate_ci ? pct(m.pass_rate_ci.estimate) : "–",
        `${int(m.passed)}/${int(m.graded)} graded at reward ≥ ${runs[0].header.pass_threshold}; ${ci(m.pass_rate_ci, pct)}`, { id: "pass-rate" }),
      card("failed", int(m.failed), `${int(m.failed)}/${int(m.total)} rows produced no reward`, { id: "failed-count" }),
      card("skipped", int(m.skipped), "removed by the rollout (remove_sample)"),
      card("tokens", int(m.tokens), "policy tokens, all rows"),
      ...(m.tool_errors ? [card("tool errors", int(m.tool_errors.rows), `rows in which a tool raised (${int(m.tool_errors.calls)} calls: ` +
        Object.entries(m.tool_errors.by_tool).map(([t, n]) => `${n} × ${t}`).join(", ") + ")", { id: "tool-error-rows", class: "value tool-error" })] : []),
      ...(m.tripwires && m.tripwires.rows ? [card("tripwires", int(m.tripwires.rows), "rows flagged by a reward-hacking tripwire (" +
        Object.entries(m.tripwires.by_name).map(([t, n]) => `${n} × ${t}`).join(", ") + "; docs/tripwires.md)", { id: "tripwire-rows", class: "value tripwire" })] : []),
      card("cost", usd(m.cost_usd), m.cost_usd === null || m.cost_usd === undefined ? "not priced (see docs/cost-and-rate-limits.md)" : "policy and judge, all rows", { id: "run-cost" }),
    ];
    for (const p of m.pass_at_k || [])
      cards.push(card(`pass@${p.k}`, p.value === null ? "–" : pct(p.value), `over ${int(p.rows)} rows with ≥ ${p.k} graded samples`));
    for (const [key, g] of Object.entries(m.grader_metrics || {}))
      cards.push(card(key, num(g.mean, 3), `grader metric · 95% CI ${num(g.ci95[0], 3)} – ${num(g.ci95[1], 3)} over ${int(g.n)} rows` +
        (g.pass_rate === undefined ? "" : ` · ${pct(g.pass_rate)} ≥ ${g.threshold}`), { class: "value grader-metric", "data-metric": key }));
    const h = runs[0].header;
    const banner = h.status === "failed" || h.stop_code
      ? el("p", { class: "error", id: "run-outcome" }, `Run ${h.status}` + (h.stop_code ? ` (stop code ${h.stop_code})` : "") +
        (h.stop_code === "append_only" ? ": some rollouts are not append-only and --require-append-only was set." :
          h.halt_reason ? `: ${h.halt_reason}` : "."))
      : m.graded && !m.passed ? el("p", { class: "error", id: "run-outcome" }, "Nothing passed: every graded row is below the pass threshold.") : null;
    const parts = [el("h2", {}, "Results"), banner, el("div", { class: "cards" }, cards)];
    if (runs.length > 1) {  // compare mode: the baseline's headline figures, under this run's
      const b = runs[1].metrics;
      parts.push(el("h3", {}, `Baseline ${runs[1].header.name}`), el("div", { class: "cards", id: "baseline-cards" },
        card("rows", int(b.total), `of ${int(b.total_work_items)} work items`),
        card("mean reward", num(b.mean), ci(b.mean_ci, (x) => num(x, 3)), { id: "baseline-mean", "data-value": b.mean ?? "" }),
        card("pass rate", b.pass_rate_ci ? pct(b.pass_rate_ci.estimate) : "–", `${int(b.passed)}/${int(b.graded)} graded`),
        card("failed", int(b.failed), `${int(b.failed)}/${int(b.total)} rows produced no reward`),
        card("cost", usd(b.cost_usd), "policy and judge, all rows"),
        ...Object.entries(b.grader_metrics || {}).map(([key, g]) => card(key, num(g.mean, 3), "grader metric"))));
    }
    $("#metrics").append(...parts.filter(Boolean));
  }

  // ---- training safety (docs/guides/training-safe-rollouts.md) -------------------------------
  const CAUSE = {
    tool_args_reformatted: "a tool call's arguments string came back with the same JSON value but other bytes",
    reasoning_dropped: "the response's reasoning is missing from the next call's history",
    history_edited: "an earlier message's role, content, name, tool-call id or arguments changed",
    history_truncated: "earlier messages were removed (a sliding window, summarisation)",
    system_changed: "the system prompt changed mid-conversation",
    token_mismatch: "the messages match but the prompt token ids do not (the chat template)",
  };
  const causeList = (t) => Object.entries(t.causes || {}).map(([c, n]) => `${n} × ${c}`).join(", ");
  function safety() {
    const t = runs[0].metrics.training_safety;
    const head = el("h2", {}, "Training safety");
    if (!t || !t.rollouts) {
      $("#safety").append(head, el("p", { class: "muted", id: "safety-none" },
        "No policy calls were recorded, so no rollout was checked."));
      return;
    }
    const cards = el("div", { class: "cards" },
      card("append-only rollouts", `${int(t.append_only)}/${int(t.rollouts)}`,
        t.broken ? `${int(t.broken)} break it: ${causeList(t)}` : "every checked rollout only appends",
        { id: "safety-append-only", "data-value": t.append_only, class: "value " + (t.broken ? "safety-broken" : "safety-ok") }),
      card("token ids", `${int(t.token_ids_rows)}/${int(t.rollouts)}`, t.token_ids_rows
        ? "rows whose calls all carried prompt and completion ids (checked on ids too)"
        : `no ids: ${t.token_ids_missing || "enable with --token-ids (vLLM)"}`, { id: "safety-token-ids", "data-value": t.token_ids_rows }),
      card("length-truncated rows", int(t.length_truncated_rows), "a call stopped at finish_reason = length",
        { id: "safety-truncated", "data-value": t.length_truncated_rows }));
    const causes = Object.entries(t.causes || {});
    const table = causes.length ? el("table", { class: "grid", id: "safety-causes" },
      el("tr", {}, ["rows", "cause", "meaning", ""].map((h) => el("th", {}, h))),
      causes.map(([c, n]) => el("tr", { "data-cause": c }, el("td", { class: "n" }, int(n)), el("td", { class: "mono" }, c),
        el("td", {}, CAUSE[c] || ""), el("td", {},
          el("button", { on: { click: () => { $("#f-safety").value = c; state.safety = c; applyFilters();
            $("#rows").scrollIntoView(); } } }, "show rows"), " ",
          t.first_rows && t.first_rows[c] ? el("button", { on: { click: () => openDetail(0, ...t.first_rows[c]) } }, "first row") : null)))) : null;
    const base = runs.length > 1 ? runs[1].metrics.training_safety : null;
    const baseline = base && base.rollouts ? el("p", { id: "safety-baseline", class: "muted" },
      `baseline ${runs[1].header.name}: ${int(base.append_only)}/${int(base.rollouts)} append-only` +
      (base.broken ? `; ${causeList(base)}` : "") + `; token ids ${int(base.token_ids_rows)}/${int(base.rollouts)} rows`) : null;
    $("#safety").append(...[head, cards, table, baseline].filter(Boolean));
  }
  function safetyDetail(v) {
    if (!v) return el("p", { class: "muted row-safety" }, "not checked (no policy call recorded)");
    const pre = (text) => el("pre", {}, text);
    const facts = [["verdict", el("span", { class: v.append_only ? "safety-ok" : "safety-broken" },
      v.append_only ? "append-only" : "breaks append-only")], ["calls · threads", `${v.calls} · ${v.threads}`],
      ["token ids", v.token_ids === "all" ? "on every call" : v.token_ids === "some" ? "on some calls" : "none"]];
    const d = v.divergence;
    if (d) facts.push(["first divergence", `call index ${d.call} (policy call ${d.call + 1} below) · message index ${d.message} · field ${d.field}`],
      ["cause", `${d.cause}: ${CAUSE[d.cause] || ""}`], ["expected", pre(d.expected)], ["actual", pre(d.actual)]);
    const m = v.token_mismatch;
    if (m) facts.push(["token mismatch", `call index ${m.call} · position ${m.position}: expected ${m.expected ?? "(end)"}, got ${m.actual ?? "(end)"}`]);
    if (m && !d) facts.push(["cause", `token_mismatch: ${CAUSE.token_mismatch}`]);
    if (v.truncated_calls) facts.push(["length-truncated calls", `call index ${v.truncated_calls.join(", ")}`]);
    return el("table", { class: "kv safety row-safety", "data-cause": d ? d.cause : m ? "token_mismatch" : "ok" },
      facts.map(([k, val]) => el("tr", {}, el("th", {}, k), el("td", { class: "mono" }, val))));
  }

  // ---- charts (inline SVG) ------------------------------------------------------------------
  const SVG = "http://www.w3.org/2000/svg";
  const svg = (tag, attrs, ...kids) => {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    node.append(...kids);
    return node;
  };
  const W = 420, H = 220, L = 44, B = 30;
  function axes(root, xlabel, ylabel, xs, ys) {
    root.append(svg("line", { x1: L, y1: H - B, x2: W - 8, y2: H - B, class: "axis" }),
      svg("line", { x1: L, y1: 8, x2: L, y2: H - B, class: "axis" }),
      svg("text", { x: (W + L) / 2, y: H - 4, class: "axlabel" }, xlabel),
      svg("text", { x: 10, y: (H - B) / 2, class: "axlabel", transform: `rotate(-90 10 ${(H - B) / 2})` }, ylabel));
    xs.forEach(([x, t], i) => root.append(svg("text", { x, y: H - B + 14, class: i === xs.length - 1 ? "tick end" : "tick" }, t)));
    for (const [y, t] of ys) root.append(svg("text", { x: L - 4, y: y + 4, class: "tick end" }, t));
  }
  function histogram() {
    const graded = rows.filter((r) => r.r !== null && (r.o === "pass" || r.o === "fail")).map((r) => r.r);
    const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", id: "histogram" });
    if (!graded.length) return root;
    let lo = Math.min(...graded), hi = Math.max(...graded);
    if (lo === hi) { lo -= 0.5; hi += 0.5; }
    const bins = 20, counts = new Array(bins).fill(0);
    for (const v of graded) counts[Math.min(bins - 1, Math.floor(((v - lo) / (hi - lo)) * bins))]++;
    const top = Math.max(...counts), bw = (W - 8 - L) / bins;
    counts.forEach((c, i) => {
      const h = ((H - B - 8) * c) / top;
      root.append(svg("rect", { x: L + i * bw + 1, y: H - B - h, width: bw - 2, height: h, class: "bar" },
        svg("title", {}, `${num(lo + (i * (hi - lo)) / bins, 3)} – ${num(lo + ((i + 1) * (hi - lo)) / bins, 3)}: ${c}`)));
    });
    axes(root, "reward", "rows", [[L, num(lo, 2)], [W - 8, num(hi, 2)]], [[8, String(top)], [H - B, "0"]]);
    return root;
  }
  function scatter() {
    const pts = rows.filter((r) => r.r !== null && r.d !== null);
    const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", id: "scatter" });
    if (!pts.length) return root;
    const dmax = Math.max(...pts.map((r) => r.d)) || 1;
    let lo = Math.min(...pts.map((r) => r.r)), hi = Math.max(...pts.map((r) => r.r));
    if (lo === hi) { lo -= 0.5; hi += 0.5; }
    const paths = {};
    for (const r of pts) {
      const x = L + ((W - 8 - L) * r.d) / dmax, y = H - B - ((H - B - 8) * (r.r - lo)) / (hi - lo);
      paths[r.o] = (paths[r.o] || "") + `M${x.toFixed(1)} ${y.toFixed(1)}h0`;
    }
    for (const [o, d] of Object.entries(paths)) root.append(svg("path", { d, class: "dot " + o }));
    axes(root, "duration (s)", "reward", [[L, "0"], [W - 8, (dmax / 1000).toFixed(1)]], [[8, num(hi, 2)], [H - B, num(lo, 2)]]);
    return root;
  }
  function charts() {
    $("#charts").append(
      el("figure", {}, el("figcaption", {}, "Reward histogram (graded rows)"), histogram()),
      el("figure", {}, el("figcaption", {}, "Reward vs duration per row"), scatter()));
  }

  // ---- failures -----------------------------------------------------------------------------
  function failures() {
    const groups = runs[0].metrics.failure_groups;
    if (!groups.length) return;
    $("#failures").append(el("h2", {}, "Failures by type"), el("table", { class: "grid", id: "failure-groups" },
      el("tr", {}, ["count", "type", "message", "where", ""].map((h) => el("th", {}, h))),
      groups.map((g) => el("tr", {}, el("td", { class: "n" }, g.count), el("td", {}, g.error_type),
        el("td", { class: "mono" }, g.message), el("td", { class: "mono" }, g.file ? `${g.file.split("/").pop()}:${g.line}` : "–"),
        el("td", {}, el("button", { on: { click: () => openDetail(0, g.rows[0][0], g.rows[0][1]) } }, "first row"))))));
  }

  // ---- row table ----------------------------------------------------------------------------
  const state = { sort: "i", dir: 1, page: 0, outcome: "", error: "", safety: "", tools: "", min: "", max: "", q: "", hits: null };
  const COLS = [["i", "row"], ["s", "sample"], ["src", "source row"], ["o", "status"], ["r", "reward"],
    ["d", "duration"], ["t", "tokens"], ["c", "calls"], ["cu", "cost"], ["te", "tool errors"], ["tw", "tripwires"], ["ts", "training safety"], ["et", "error"], ["p", "prompt"], ["l", "label"], ["a", "answer"]];
  let view = rows;
  function applyFilters() {
    const min = state.min === "" ? -Infinity : Number(state.min), max = state.max === "" ? Infinity : Number(state.max);
    const bounded = state.min !== "" || state.max !== "";
    view = rows.filter((r) => (!state.outcome || r.o === state.outcome) && (!state.error || r.et === state.error) &&
      (!state.safety || r.ts === state.safety) && (!state.tools || r.te > 0) &&
      (!bounded || (r.r !== null && r.r >= min && r.r <= max)) && (!state.hits || state.hits.has(r.k)));
    const key = state.sort, dir = state.dir;
    view.sort((a, b) => {
      const x = a[key], y = b[key];
      if (x === y) return a.k - b.k;
      if (x === null || x === undefined) return 1;
      if (y === null || y === undefined) return -1;
      return (x < y ? -1 : 1) * dir;
    });
    state.page = 0;
    drawTable();
  }
  let searchIndex = null;
  async function search(text) {
    state.q = text.trim().toLowerCase();
    if (!state.q) { state.hits = null; return applyFilters(); }
    if (!searchIndex) {
      $("#search-note").textContent = "loading transcripts…";
      const det = await detailsOf(0);
      searchIndex = rows.map((r, k) => [r.p, r.a, r.l, r.em, det[k].tb,
        ...det[k].m.map((m) => m.content + " " + (m.tool_calls || []).map((c) => c.name + " " + c.arguments).join(" "))]
        .join("\n").toLowerCase());
      $("#search-note").textContent = "";
    }
    state.hits = new Set();
    searchIndex.forEach((text, k) => text.includes(state.q) && state.hits.add(k));
    applyFilters();
  }
  function controls() {
    const errors = [...new Set(rows.map((r) => r.et).filter(Boolean))].sort();
    const safetyOptions = [...new Set(rows.map((r) => r.ts).filter(Boolean))].sort()
      .map((c) => [c, c === "ok" ? "append-only" : c]);
    let timer = null;
    const select = (id, label, options, key) => el("label", {}, label + " ",
      el("select", { id, on: { change: (e) => { state[key] = e.target.value; applyFilters(); } } },
        el("option", { value: "" }, "all"), options.map(([v, t]) => el("option", { value: v }, t))));
    return el("div", { class: "filters" },
      select("f-status", "status", Object.entries(OUTCOME), "outcome"),
      select("f-error", "error type", errors.map((e) => [e, e]), "error"),
      select("f-safety", "training safety", safetyOptions, "safety"),
      select("f-tools", "tool errors", [["1", "rows with tool errors"]], "tools"),
      el("label", {}, "reward ", el("input", { id: "f-min", type: "number", step: "any", placeholder: "min",
        on: { input: (e) => { state.min = e.target.value; applyFilters(); } } }), " – ",
        el("input", { id: "f-max", type: "number", step: "any", placeholder: "max",
          on: { input: (e) => { state.max = e.target.value; applyFilters(); } } })),
      el("input", { id: "f-search", type: "search", placeholder: "search prompt, answer, messages…",
        on: { input: (e) => { clearTimeout(timer); timer = setTimeout(() => search(e.target.value), 150); } } }),
      el("span", { id: "search-note", class: "muted" }));
  }
  function cell(r, key) {
    const v = r[key];
    if (key === "r") return el("td", { class: "n" }, num(v));
    if (key === "d") return el("td", { class: "n" }, ms(v));
    if (key === "t" || key === "c") return el("td", { class: "n" }, int(v));
    if (key === "cu") return el("td", { class: "n" }, usd(v));
    if (key === "te") return v ? el("td", { class: "n tool-error", title: "a tool call raised: see the row" }, `⚠ ${v}`) : el("td", { class: "muted n" }, "–");
    if (key === "tw") return (v || []).length ? el("td", { class: "tripwire", title: "reward-hacking tripwire: docs/tripwires.md" }, `⚑ ${v.join(", ")}`) : el("td", { class: "muted" }, "–");
    if (key === "o") return el("td", {}, el("span", { class: "pill " + v }, OUTCOME[v] || v));
    if (key === "p" || key === "a" || key === "l") return el("td", { class: "clip", title: v || "" }, v || "");
    if (key === "ts") return v === null || v === undefined ? el("td", { class: "muted" }, "–")
      : el("td", { class: v === "ok" ? "safety-ok" : "safety-broken mono" }, v === "ok" ? "append-only" : v);
    return el("td", {}, v ?? "");
  }
  function drawTable() {
    const pages = Math.max(1, Math.ceil(view.length / PAGE));
    const start = state.page * PAGE, slice = view.slice(start, start + PAGE);
    // n > 1 in row order: each dataset row's samples form a group (a rule above the first one)
    const grouped = runs[0].header.n > 1 && state.sort === "i";
    const body = el("tbody", {}, slice.map((r, k) => el("tr", { "data-row": `${r.i}.${r.s}`, tabindex: 0,
      class: grouped && k > 0 && slice[k - 1].i !== r.i ? "group-start" : null,
      on: { click: () => openDetail(0, r.i, r.s), keydown: (e) => e.key === "Enter" && openDetail(0, r.i, r.s) } },
      COLS.map(([key]) => cell(r, key)))));
    $("#row-table tbody").replaceWith(body);
    $("#shown").textContent = view.length === rows.length
      ? `${int(view.length)} rows` : `${int(view.length)} of ${int(rows.length)} rows match`;
    $("#shown").dataset.count = view.length;
    $("#page").textContent = `page ${state.page + 1} of ${pages}`;
    $("#prev").disabled = state.page === 0;
    $("#next").disabled = state.page >= pages - 1;
  }
  function table() {
    const head = el("tr", {}, COLS.map(([key, label]) => el("th", { class: "sortable", on: { click: () => {
      state.dir = state.sort === key ? -state.dir : 1; state.sort = key; applyFilters(); } } }, label)));
    const pager = el("div", { class: "pager" },
      el("button", { id: "prev", on: { click: () => { state.page--; drawTable(); } } }, "‹ prev"),
      el("span", { id: "page" }),
      el("button", { id: "next", on: { click: () => { state.page++; drawTable(); } } }, "next ›"),
      el("span", { id: "shown", class: "muted" }));
    $("#rows").append(el("h2", {}, "Rows"), controls(), pager,
      el("table", { class: "grid rows", id: "row-table" }, el("thead", {}, head), el("tbody")));
    applyFilters();
  }

  // ---- drill-down ---------------------------------------------------------------------------
  function message(m) {
    return el("div", { class: "msg " + m.role },
      el("div", { class: "role" }, m.role + (m.tool_call_id ? ` · ${m.tool_call_id}` : "")),
      m.reasoning ? el("details", {}, el("summary", {}, "reasoning"), el("pre", {}, m.reasoning)) : null,
      m.content ? el("pre", {}, m.content) : null,
      (m.tool_calls || []).map((c) => el("div", { class: "tool-call mono" }, `→ ${c.name}(${c.arguments})`,
        c.id ? el("span", { class: "muted" }, ` · ${c.id}`) : null)));
  }
  async function rowDetail(run, i, s) {
    const all = run === 0 ? rows : await (details["rows-" + run] ||= unpack("rows-" + run));
    const k = all.findIndex((r) => r.i === i && r.s === s);
    if (k < 0) return el("p", { class: "muted" }, "not in this run");
    const r = all[k], d = (await detailsOf(run))[k];
    const facts = [["status", OUTCOME[r.o] || r.o], ["reward", num(r.r)], ["label", r.l ?? "–"],
      ["duration", ms(r.d)], ["tokens", int(r.t)], ["cost", usd(r.cu)], ["policy calls", int(r.c)], ["error type", r.et || "–"],
      ["failed phase", d.ph || "–"], ["trajectory", d.tr || "–"]];
    const calls = d.c.length ? el("table", { class: "grid calls" },
      el("tr", {}, ["call", "latency", "prompt tok", "completion tok", "finish", "HTTP", "attempts"].map((h) => el("th", {}, h))),
      d.c.map((c) => el("tr", {}, el("td", {}, c.index + 1), el("td", { class: "n" }, ms(c.latency_ms)),
        el("td", { class: "n" }, int(c.prompt_tokens)), el("td", { class: "n" }, int(c.completion_tokens)),
        el("td", {}, c.finish_reason || "–"), el("td", {}, c.status_code ?? "–"), el("td", {}, c.attempts ?? "–")))) : null;
    const grader = Object.keys(d.x || {}).length ? el("pre", { class: "mono" }, JSON.stringify(d.x, null, 2)) : null;
    return el("div", { class: "row-detail" },
      el("table", { class: "kv" }, facts.map(([k2, v]) => el("tr", {}, el("th", {}, k2), el("td", { class: "mono" }, v)))),
      d.em ? el("div", { class: "error" }, el("strong", {}, "error: "), d.em) : null,
      d.tb ? el("details", { open: true, class: "traceback" }, el("summary", {}, "traceback"), el("pre", {}, d.tb)) : null,
      (d.te || []).length ? el("h4", {}, "tool errors") : null,
      (d.te || []).length ? el("ul", { class: "tool-errors" }, d.te.map((e) => el("li", { class: "mono" }, `${e.tool}: ${e.message}`))) : null,
      el("h4", {}, "training safety"), safetyDetail(d.ts),
      grader ? el("h4", {}, "grader metrics") : null, grader,
      d.ex ? el("h4", {}, "grader explanation") : null, d.ex ? el("pre", { class: "explanation" }, d.ex) : null,
      calls ? el("h4", {}, "policy calls") : null, calls,
      el("h4", {}, "transcript"), el("div", { class: "transcript" }, d.m.length ? d.m.map(message) : el("p", { class: "muted" }, "no trajectory")));
  }
  let current = null;  // position in the filtered table of the row open in the panel
  async function openDetail(run, i, s, pair) {
    current = !pair && run === 0 ? view.findIndex((r) => r.i === i && r.s === s) : null;
    const panel = $("#detail");
    panel.hidden = false;
    panel.replaceChildren(el("p", { class: "muted" }, "loading…"));
    const close = el("button", { class: "close", on: { click: closeDetail } }, "close ✕");
    const hint = pair ? null : el("span", { class: "muted", id: "nav-hint" }, "j / → next row · k / ← previous");
    const parts = [el("div", { class: "detail-head" }, el("h3", {}, `row ${i} · sample ${s}`), hint, close)];
    if (pair) {
      parts.push(el("p", {}, `${pair.change}: baseline ${num(pair.reward_a)} → this run ${num(pair.reward_b)} (Δ ${num(pair.delta)})`),
        el("div", { class: "side" },
          el("div", {}, el("h4", {}, "this run"), pair.row_index_b === null ? el("p", {}, "–") : await rowDetail(0, pair.row_index_b, s)),
          el("div", {}, el("h4", {}, "baseline"), pair.row_index_a === null ? el("p", {}, "–") : await rowDetail(1, pair.row_index_a, s))));
    } else parts.push(await rowDetail(run, i, s));
    panel.replaceChildren(...parts);
    if (!pair) history.replaceState(null, "", `#row=${i}.${s}`);
    else history.replaceState(null, "", `#pair=${pair.source_row_index}.${pair.run_index}`);
  }
  function closeDetail() { $("#detail").hidden = true; history.replaceState(null, "", location.pathname); }
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape") return closeDetail();
    if ($("#detail").hidden || current === null || e.target.closest("input, select, textarea")) return;
    // j / → : the next row of the table as filtered and sorted; k / ← : the previous one
    const step = e.key === "j" || e.key === "ArrowRight" ? 1 : e.key === "k" || e.key === "ArrowLeft" ? -1 : 0;
    const next = view[current + step];
    if (step && next) { e.preventDefault(); openDetail(0, next.i, next.s); }
  });

  // ---- compare ------------------------------------------------------------------------------
  let pairsLoaded = [];
  async function compare() {
    const c = META.compare;
    if (!c) return;
    const pairs = await unpack("pairs");
    pairsLoaded = pairs;
    const md = c.mean_difference;
    const interval = md ? `${num(md.estimate)} (95% paired-bootstrap CI ${num(md.low)} – ${num(md.high)}, n = ${int(md.n)})` : "–";
    const show = { value: "flipped" };
    const draw = () => {
      const keep = pairs.filter((p) => show.value === "all" ? true : show.value === "flipped"
        ? p.change === "regressed" || p.change === "improved" : p.change !== "same");
      const fresh = el("tbody", {}, keep.slice(0, 500).map((p) => el("tr", { "data-pair": `${p.source_row_index}.${p.run_index}`,
        on: { click: () => openDetail(0, p.source_row_index, p.run_index, p) } },
        el("td", {}, p.source_row_index), el("td", {}, p.run_index), el("td", {}, el("span", { class: "pill " + p.change }, p.change)),
        el("td", {}, p.outcome_a ?? "–"), el("td", {}, p.outcome_b ?? "–"), el("td", { class: "n" }, num(p.reward_a)),
        el("td", { class: "n" }, num(p.reward_b)), el("td", { class: "n" }, num(p.delta)))));
      $("#pair-table tbody").replaceWith(fresh);
      $("#pair-count").textContent = `${int(keep.length)} rows` + (keep.length > 500 ? " (first 500 shown)" : "");
    };
    $("#compare").append(el("h2", {}, `Compared with baseline ${runs[1].header.name}`),
      el("p", { id: "compare-summary" }, `mean reward difference (this run − baseline): `, el("strong", { id: "mean-diff" }, interval),
        `. ${c.regressed} regressed (pass → fail), ${c.improved} improved (fail → pass), ${c.status_changed} changed status ` +
        `(graded ↔ failed/skipped), ${c.only_a} only in the baseline, ${c.only_b} only in this run; ${int(c.paired_rows)} rows paired.`),
      el("p", { id: "compare-cost" }, `cost: this run ${usd(c.cost_b_usd)}, baseline ${usd(c.cost_a_usd)}` +
        (c.cost_difference_usd === null || c.cost_difference_usd === undefined ? "" : ` (difference ${c.cost_difference_usd >= 0 ? "+" : "−"}${usd(Math.abs(c.cost_difference_usd))})`)),
      Object.keys(c.metric_differences || {}).length ? el("ul", { id: "metric-diffs" }, Object.entries(c.metric_differences).map(([k, d]) =>
        el("li", {}, `${k}: ${num(d.estimate, 3)} (95% CI ${num(d.low, 3)} – ${num(d.high, 3)}, n = ${int(d.n)})`))) : "",
      el("label", {}, "show ", el("select", { id: "pair-filter", on: { change: (e) => { show.value = e.target.value; draw(); } } },
        el("option", { value: "flipped" }, "flipped rows"), el("option", { value: "changed" }, "every changed row"),
        el("option", { value: "all" }, "all rows"))), " ", el("span", { id: "pair-count", class: "muted" }),
      el("table", { class: "grid", id: "pair-table" }, el("thead", {}, el("tr", {},
        ["source row", "sample", "change", "baseline", "this run", "reward (baseline)", "reward (this run)", "Δ"].map((h) => el("th", {}, h)))), el("tbody")));
    draw();
  }

  // ---- start --------------------------------------------------------------------------------
  provenance();
  metrics();
  safety();
  table();
  performance.mark("osmosis-table-rendered");
  $("#loading").remove();
  charts();
  failures();
  await compare();
  const m = /^#row=(\d+)\.(\d+)$/.exec(location.hash);
  if (m) openDetail(0, Number(m[1]), Number(m[2]));
  const linked = /^#pair=(\d+)\.(\d+)$/.exec(location.hash);  // a deep link into the comparison
  const pair = linked && pairsLoaded.find((p) => p.source_row_index === Number(linked[1]) && p.run_index === Number(linked[2]));
  if (pair) await openDetail(0, pair.source_row_index, pair.run_index, pair);
  document.body.dataset.ready = "1";
})().catch((err) => {
  const p = document.getElementById("loading");
  if (p) p.textContent = "Could not render this report: " + err;
  throw err;
});
