# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report as Markdown and as one self-contained HTML page (no server, no network): summaries by GPU model,
driver and kind of drift, one row per host with its whole stack and last upgrade, each host's GPUs, and filters.

The HTML filters read and write the URL's fragment (report.html#health=critical&drift=driver&q=gpu-1), so a
filtered view can be linked and a browser test can open one.
"""

from __future__ import annotations

import html
import re

from ansible_collections.gpufleet.stack.plugins.module_utils._controller.report import breakdowns, summary

# What Markdown (GitHub's, CommonMark) reads as markup in running text or a table cell.
MD_MARKUP = re.compile(r"([\\`*_\[\]{}|~#!])")


def md(value):
    """Node data as literal Markdown text: on one line, HTML escaped (<script> is shown, not run) and every markup
    character backslash-escaped (a table cell cannot be split, a link or image cannot be made)."""
    return MD_MARKUP.sub(r"\\\1", html.escape(" ".join(str(value).split()), quote=False))


COUNTS = (("hosts", "Hosts"), ("ok", "OK"), ("critical", "Critical"), ("warning", "Warning"), ("drifted", "Drifted"))


def finding_text(f):
    where = f"GPU {f['gpu']}: " if f.get("gpu") is not None else ""
    limit = f" (threshold {f['threshold']})" if f.get("threshold") is not None else ""
    value = f" = {f['value']}" if f.get("value") is not None else ""
    return f"{f.get('severity', '?')}: {where}{f.get('what', '?')}{value}{limit}"


def stack_text(stack):
    """ "driver 570.133.20 open, FM 570.133.20, CUDA 12.8.93, cuDNN 9.8.0, NCCL 2.26.2, CTK 1.17.8, torch 2.7.1" """
    if not stack:
        return "—"
    parts = [f"driver {stack.get('driver') or 'none'}" + (f" {stack['flavor']}" if stack.get("flavor") else "")]
    parts += [f"FM {stack['fabricmanager']}"] if stack.get("fabricmanager") else []
    parts += ["CUDA " + ", ".join(stack["cuda"])] if stack.get("cuda") else []
    for key, label in (("cudnn", "cuDNN"), ("nccl", "NCCL"), ("container_toolkit", "CTK"), ("dcgm", "DCGM")):
        parts += [f"{label} {stack[key]}"] if stack.get(key) else []
    parts += [f"{name} {version}" for name, version in sorted((stack.get("frameworks") or {}).items())]
    return ", ".join(parts)


def upgrade_text(upgrade):
    if not upgrade:
        return "—"
    moved = f"{upgrade.get('from') or '?'} → {upgrade.get('to') or '?'}"
    return f"{moved}, {upgrade.get('outcome')} {upgrade.get('time') or ''}".strip()


def temperature_text(g):
    if g.get("temp_c") is None:
        return "—"
    return f"{g['temp_c']} °C" + (f" / {g['slowdown_c']}" if g.get("slowdown_c") is not None else "")


def remapped_text(g):
    r = g.get("remapped")
    if not r:
        return "—"
    flags = [k for k in ("pending", "failed") if r.get(k)]
    return f"{r.get('correctable') or 0}/{r.get('uncorrectable') or 0}" + (f" {', '.join(flags)}" if flags else "")


def grid_cells(g):
    return [
        "—" if g.get("index") is None else str(g["index"]),
        str(g.get("name")),
        temperature_text(g),
        f"{g['memory_mib']} MiB" if g.get("memory_mib") is not None else "—",
        "—" if g.get("ecc_uncorrected") is None else str(g["ecc_uncorrected"]),
        remapped_text(g),
        str(g.get("xid") or 0),
    ]


GRID_HEAD = ["GPU", "Model", "Temp / slowdown", "Memory", "ECC uncorrected", "Remapped rows", "Xid"]


def render_markdown(rows, generated):
    s, b = summary(rows), breakdowns(rows)
    models = "; ".join(f"{md(m)} ({v['hosts']} hosts, {v['gpus']} GPUs)" for m, v in b["model"].items())
    lines = [
        "# GPU fleet report",
        "",
        f"Generated {generated}. {s['hosts']} hosts: {s['ok']} ok, {s['critical']} critical, "
        f"{s['warning']} warning, {s['drifted']} drifted from the desired stack.",
        "",
        "By GPU model: " + (models or "none") + ".",
        "By driver: " + ("; ".join(f"{md(d)} ({n})" for d, n in b["driver"].items()) or "none") + ".",
        "By kind of drift: " + ("; ".join(f"{md(k)} ({n})" for k, n in b["drift"].items()) or "none") + ".",
        "",
        "| Host | GPUs | Driver | CUDA (driver / toolkits) | Stack | Health | Last upgrade | Drift | Facts from |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]  # fmt: skip
    for r in rows:
        health = r["health"] + (f"; validation {r['validation']}" if r.get("validation") else "")
        gpus = r["gpus"] + (f"; fabric {r['fabric']}" if r.get("fabric") else "")
        cells = [r["host"], gpus, r["driver"], r["cuda"], stack_text(r["stack"]), health,
                 upgrade_text(r["upgrade"]), "; ".join(r["drift"]) or "none", r.get("facts_at") or "—"]  # fmt: skip
        lines.append("| " + " | ".join(md(c) for c in cells) + " |")
    for r in rows:
        if not (r["findings"] or r["gpu_grid"]):
            continue
        lines += ["", f"## {md(r['host'])}", ""] + [f"- {md(finding_text(f))}" for f in r["findings"]]
        if r["gpu_grid"]:
            lines += [""] if r["findings"] else []
            lines += ["| " + " | ".join(GRID_HEAD) + " |", "|" + " --- |" * len(GRID_HEAD)]
            lines += ["| " + " | ".join(md(c) for c in grid_cells(g)) + " |" for g in r["gpu_grid"]]
    return "\n".join(lines) + "\n"


CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#1d2433}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.5em}table{border-collapse:collapse;width:100%}
th,td{border:1px solid #d0d5dd;padding:.4em .6em;text-align:left;vertical-align:top}
th{background:#f2f4f7}.badge{padding:.1em .5em;border-radius:.8em;font-weight:600}
.ok{background:#d1fadf;color:#05603a}.warning{background:#fef0c7;color:#93370d}
.critical{background:#fee4e2;color:#912018}.unknown{background:#eaecf0;color:#344054}
.cards span{display:inline-block;margin-right:1.5em;font-size:1.1em}ul{margin:.2em 0;padding-left:1.2em}
td:first-child{font-weight:600;white-space:nowrap}.hot{background:#fee4e2}.small{font-size:.9em}
.breakdowns{display:flex;gap:2em;flex-wrap:wrap}.breakdowns table{width:auto}
.filters{margin:1em 0}.filters label{margin-right:1em}@page{size:A4 landscape;margin:1cm}
@media print{.filters{display:none}}
"""

# Rows carry data-health, data-drift (kinds) and data-text; the fragment holds the filters, so a view can be linked.
SCRIPT = """
(function(){
  var q=document.getElementById('f-q'),h=document.getElementById('f-health'),d=document.getElementById('f-drift');
  function read(){var p=new URLSearchParams(location.hash.slice(1));q.value=p.get('q')||'';
    h.value=p.get('health')||'';d.value=p.get('drift')||'';}
  function apply(){var shown=0,text=q.value.toLowerCase();
    document.querySelectorAll('tr.host, section.host').forEach(function(el){
      var ok=(!h.value||el.dataset.health===h.value)&&(!d.value||(el.dataset.drift||'').split(',').indexOf(d.value)>=0)
        &&(!text||el.dataset.text.indexOf(text)>=0);
      el.hidden=!ok;if(ok&&el.tagName==='TR')shown++;});
    document.getElementById('shown').textContent=shown;}
  function save(){var p=new URLSearchParams();if(q.value)p.set('q',q.value);if(h.value)p.set('health',h.value);
    if(d.value)p.set('drift',d.value);history.replaceState(null,'','#'+p.toString());apply();}
  [q,h,d].forEach(function(el){el.addEventListener('input',save);});
  window.addEventListener('hashchange',function(){read();apply();});read();apply();
})();
"""


def _at_slowdown(g):
    return g.get("temp_c") is not None and g.get("slowdown_c") is not None and g["temp_c"] >= g["slowdown_c"]


def _breakdown_table(title, head, items):
    e = html.escape
    body = "".join(f"<tr><td>{e(str(k))}</td>" + "".join(f"<td>{e(str(v))}</td>" for v in vals) + "</tr>"
                   for k, vals in items) or f'<tr><td colspan="{len(head)}">none</td></tr>'  # fmt: skip
    return f"<table><caption>{e(title)}</caption><tr>{''.join(f'<th>{e(h)}</th>' for h in head)}</tr>{body}</table>"


def _row_attrs(r):
    e = html.escape
    text = " ".join([r["host"], r["gpus"], r["driver"], stack_text(r["stack"]), *r["drift"]]).lower()
    return (f'data-health="{e(r["health"])}" data-drift="{e(",".join(r["drift_kinds"]))}" '
            f'data-text="{e(text)}"')  # fmt: skip


def render_html(rows, generated):
    e = html.escape
    s, b = summary(rows), breakdowns(rows)
    kinds = sorted({k for r in rows for k in r["drift_kinds"]})
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><title>GPU fleet report</title>',
        f"<style>{CSS}</style></head><body>",
        "<h1>GPU fleet report</h1>",
        f"<p>Generated {e(generated)}.</p>",
        '<p class="cards">' + "".join(f'<span id="count-{k}">{e(label)}: <b>{s[k]}</b></span>' for k, label in COUNTS)
        + "</p>",
        '<div class="breakdowns">',
        _breakdown_table("By GPU model", ["Model", "Hosts", "GPUs"],
                         [(m, (v["hosts"], v["gpus"])) for m, v in b["model"].items()]),
        _breakdown_table("By driver", ["Driver", "Hosts"], [(d, (n,)) for d, n in b["driver"].items()]),
        _breakdown_table("By kind of drift", ["Drift", "Hosts"], [(k, (n,)) for k, n in b["drift"].items()]),
        "</div>",
        '<p class="filters"><label>Find <input id="f-q" type="search" placeholder="host, model, version"></label>'
        '<label>Health <select id="f-health"><option value="">any</option>'
        + "".join(f'<option value="{h}">{h}</option>' for h in ("critical", "warning", "ok", "unknown"))
        + '</select></label><label>Drift <select id="f-drift"><option value="">any</option>'
        + "".join(f'<option value="{e(k)}">{e(k)}</option>' for k in kinds)
        + f'</select></label>Shown: <b id="shown">{len(rows)}</b></p>',
        "<table><thead><tr><th>Host</th><th>GPUs</th><th>Driver</th><th>CUDA (driver / toolkits)</th><th>Stack</th>"
        "<th>Health</th><th>Last upgrade</th><th>Drift from desired stack</th><th>Facts from</th></tr></thead><tbody>",
    ]  # fmt: skip
    for r in rows:
        findings = "".join(f"<li>{e(finding_text(f))}</li>" for f in r["findings"])
        drift_cell = "".join(f"<li>{e(d)}</li>" for d in r["drift"])
        validation = f'<div class="small">validation {e(r["validation"])}</div>' if r.get("validation") else ""
        fabric = f'<div class="small">fabric {e(r["fabric"])}</div>' if r.get("fabric") else ""
        out.append(
            f'<tr class="host" id="host-{e(r["host"])}" {_row_attrs(r)}><td>{e(r["host"])}</td>'
            f"<td>{e(r['gpus'])}{fabric}</td>"
            f'<td>{e(r["driver"])}</td><td>{e(r["cuda"])}</td><td class="small">{e(stack_text(r["stack"]))}</td>'
            f'<td><span class="badge {e(r["health"])}">{e(r["health"])}</span>'
            f"{'<ul>' + findings + '</ul>' if findings else ''}{validation}</td>"
            f"<td>{e(upgrade_text(r['upgrade']))}</td>"
            f"<td>{'<ul>' + drift_cell + '</ul>' if drift_cell else 'none'}</td>"
            f'<td class="small">{e(r.get("facts_at") or "—")}</td></tr>'
        )
    out.append("</tbody></table><h2>GPUs per host</h2>")
    for r in rows:
        if not r["gpu_grid"]:
            continue
        cells = "".join(
            f"<tr{' class=hot' if _at_slowdown(g) else ''}>{''.join(f'<td>{e(c)}</td>' for c in grid_cells(g))}</tr>"
            for g in r["gpu_grid"]
        )
        out.append(
            f'<section class="host" {_row_attrs(r)}><details open><summary>{e(r["host"])}: {e(r["gpus"])}</summary>'
            f"<table><tr>{''.join(f'<th>{e(h)}</th>' for h in GRID_HEAD)}</tr>{cells}</table></details></section>"
        )
    out.append(f"<script>{SCRIPT}</script></body></html>")
    return "\n".join(out) + "\n"
