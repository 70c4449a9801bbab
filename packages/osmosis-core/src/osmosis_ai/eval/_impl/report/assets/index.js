// osmosis eval report --all: the index page over every local run. No network.
(() => {
  "use strict";
  const runs = JSON.parse(document.getElementById("runs").textContent);
  const body = document.querySelector("#run-index tbody");
  const fmt = (v, d) => (v === null || v === undefined ? "–" : Number(v).toFixed(d));
  const usd = (v) => (v === null || v === undefined ? "–" : "$" + (v >= 1 ? v.toFixed(2) : v.toPrecision(2)));
  const picked = [];
  const td = (text, cls) => { const c = document.createElement("td"); if (cls) c.className = cls; c.textContent = text; return c; };
  for (const r of runs) {
    const tr = document.createElement("tr");
    tr.dataset.run = r.name;
    tr.dataset.text = [r.name, r.status, r.stop_code, r.model, r.rollout].join(" ").toLowerCase();
    const box = document.createElement("input");
    box.type = "checkbox";
    box.addEventListener("change", () => {
      if (box.checked) picked.push(r.name); else picked.splice(picked.indexOf(r.name), 1);
      while (picked.length > 2) { const old = picked.shift(); document.querySelector(`tr[data-run="${CSS.escape(old)}"] input`).checked = false; }
      const out = document.getElementById("compare-command");
      out.textContent = picked.length === 2
        ? `osmosis eval report ${picked[1]} --compare ${picked[0]} -o ${picked[1]}-vs-${picked[0]}.html`
        : "tick two runs (the baseline first) to get the command that compares them";
    });
    const pick = document.createElement("td"); pick.append(box);
    const link = document.createElement("a"); link.href = r.report; link.textContent = r.name;
    const name = document.createElement("td"); name.append(link);
    tr.append(pick, name, td(r.status + (r.stop_code ? ` (${r.stop_code})` : "")), td(r.started_at || "–"),
      td(r.model || "–"), td(r.rollout || "–"), td(r.rows ?? "–", "n"), td(fmt(r.mean_reward, 4), "n"),
      td(r.pass_rate === null || r.pass_rate === undefined ? "–" : (100 * r.pass_rate).toFixed(1) + "%", "n"), td(usd(r.cost_usd), "n"));
    body.append(tr);
  }
  document.getElementById("run-filter").addEventListener("input", (e) => {
    const q = e.target.value.trim().toLowerCase();
    for (const tr of body.rows) tr.hidden = q !== "" && !tr.dataset.text.includes(q);
  });
  document.body.dataset.ready = "1";
})();
