//! HTML (self-contained: inline SVG and CSS, no network), Markdown and SVG rendering.

use crate::{Distribution, Legend, MarkKind, NodeRow, Report, Unit};
use minijinja::value::Value;
use minijinja::{context, Environment};
use std::fmt::Write;

const W: f64 = 1100.0;
const LEFT: f64 = 120.0;
const RIGHT: f64 = 20.0;
const ROW: f64 = 38.0;
const TOP: f64 = 28.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The node's wall-clock offset at true time `t` (step function of the samples).
fn offset_at(n: &NodeRow, t: f64) -> f64 {
    n.offsets
        .iter()
        .take_while(|(at, _)| *at <= t)
        .last()
        .map_or(n.offsets.first().map_or(0.0, |(_, o)| *o), |(_, o)| *o)
}

/// Text that may hold Markdown inline code (`` `etcd_timeout` ``) as HTML: escaped, with each
/// code span (a run of backticks up to the next run of the same length, as CommonMark has it) in
/// `<code>`; an unmatched run of backticks stays as written.
fn inline_html(s: &str) -> String {
    // Runs of backticks as (start, length) in bytes (a backtick is one byte: both are char
    // boundaries).
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for (i, c) in s.char_indices() {
        match runs.last_mut() {
            Some((start, len)) if c == '`' && *start + *len == i => *len += 1,
            _ if c == '`' => runs.push((i, 1)),
            _ => {}
        }
    }
    let (mut out, mut done, mut k) = (String::new(), 0, 0);
    while k < runs.len() {
        let (open, ticks) = runs[k];
        let Some(m) = (k + 1..runs.len()).find(|&m| runs[m].1 == ticks) else {
            k += 1;
            continue;
        };
        let (close, _) = runs[m];
        let code = &s[open + ticks..close];
        // One space on each side is stripped when both are there (and the code is not all spaces).
        let code = match code.strip_prefix(' ').and_then(|c| c.strip_suffix(' ')) {
            Some(c) if !c.trim().is_empty() => c,
            _ => code,
        };
        let _ = write!(out, "{}<code>{}</code>", esc(&s[done..open]), esc(code));
        done = close + ticks;
        k = m + 1;
    }
    out + &esc(&s[done..])
}

/// The CSS of the kinds a legend explains (each kind's colour on its class).
fn kinds_css(l: &Legend) -> String {
    let mut s = String::new();
    for b in &l.bands {
        let _ = write!(s, ".band.{}{{fill:{}}}", b.name, b.colour);
    }
    for m in &l.marks {
        let _ = write!(s, ".mark.{}{{fill:{}}}", m.name, m.colour);
    }
    s
}

/// The legend of a timeline: its bands and marks, each in its colour.
fn legend_html(l: &Legend) -> String {
    let mut s = String::from(r#"<div class="legend">"#);
    for b in &l.bands {
        let _ = write!(
            s,
            r#"<span><i style="background:{}"></i>{}</span>"#,
            b.colour,
            esc(b.legend)
        );
    }
    s.push_str("<span>marks:");
    for m in &l.marks {
        let _ = write!(
            s,
            r#" <b style="color:{}">&#9650;</b> {}"#,
            m.colour,
            esc(m.legend)
        );
    }
    let _ = write!(
        s,
        r#" <b style="color:{}">|</b> violation; dashed: faults stop</span></div>"#,
        MarkKind::VIOLATION.colour
    );
    s
}

/// The timeline, one row per node; `local` places each row on its node's wall clock.
pub fn timeline_svg(r: &Report, local: bool) -> String {
    let map = |n: &NodeRow, t: f64| if local { t + offset_at(n, t) } else { t };
    let (mut lo, mut hi) = (0.0f64, r.sim_time_s.max(1.0));
    if local {
        for n in &r.nodes {
            for t in [0.0, r.sim_time_s] {
                lo = lo.min(map(n, t));
                hi = hi.max(map(n, t));
            }
        }
    }
    let x = |t: f64| LEFT + (t - lo) / (hi - lo).max(1e-9) * (W - LEFT - RIGHT);
    let h = TOP + ROW * r.nodes.len() as f64 + 10.0;
    let id = if local { "timeline-local" } else { "timeline" };
    let mut s = format!(
        r#"<svg id="{id}" class="timeline" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}">"#
    );
    // Axis: a tick per minute.
    let step = if hi - lo > 1200.0 { 120.0 } else { 60.0 };
    let mut t = (lo / step).ceil() * step;
    while t <= hi {
        let _ = write!(
            s,
            r#"<line class="tick" x1="{0:.1}" x2="{0:.1}" y1="{1}" y2="{2}"/><text class="axis" x="{0:.1}" y="14">{3:.0} s</text>"#,
            x(t),
            TOP - 6.0,
            h - 10.0,
            t
        );
        t += step;
    }
    if !local {
        let fx = x(r.fault_window_s);
        let _ = write!(
            s,
            r#"<line class="window" x1="{fx:.1}" x2="{fx:.1}" y1="{}" y2="{}"><title>faults stop; liveness phase</title></line>"#,
            TOP - 6.0,
            h - 10.0
        );
    }
    for (i, n) in r.nodes.iter().enumerate() {
        let y = TOP + ROW * i as f64;
        // The node's name and how far its wall clock strayed from true time.
        let (omin, omax) = n
            .offsets
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), (_, o)| {
                (a.min(*o), b.max(*o))
            });
        let clock = if n.offsets.is_empty() || (omin.abs() < 0.05 && omax.abs() < 0.05) {
            String::new()
        } else if (omax - omin).abs() < 0.05 {
            format!("clock {omin:+.1} s")
        } else {
            format!("clock {omin:+.1}..{omax:+.1} s")
        };
        let _ = write!(
            s,
            r#"<text class="name" x="6" y="{:.1}">{}</text><text class="clock" x="6" y="{:.1}">{clock}</text><line class="row" x1="{LEFT}" x2="{:.1}" y1="{:.1}" y2="{:.1}"/>"#,
            y + 14.0,
            esc(&n.name),
            y + 26.0,
            W - RIGHT,
            y + ROW - 0.5,
            y + ROW - 0.5
        );
        for b in &n.bands {
            let (x0, x1) = (x(map(n, b.from_s)), x(map(n, b.to_s)));
            let (dy, bh, opacity) = b.kind.lane.geometry();
            let _ = write!(
                s,
                r#"<rect class="band {k}" x="{x0:.1}" y="{:.1}" width="{:.1}" height="{bh}" opacity="{opacity}"><title>{}: {:.3} s to {:.3} s</title></rect>"#,
                y + dy,
                (x1 - x0).max(1.0),
                esc(&b.label),
                b.from_s,
                b.to_s,
                k = b.kind.name
            );
        }
        for m in &n.marks {
            let mx = x(map(n, m.at_s));
            if m.kind == MarkKind::VIOLATION {
                let _ = write!(
                    s,
                    r#"<line class="violation" x1="{mx:.1}" x2="{mx:.1}" y1="{}" y2="{}"><title>{}</title></line>"#,
                    TOP - 6.0,
                    h - 10.0,
                    esc(&m.label)
                );
                continue;
            }
            let yy = y + 31.0;
            let _ = write!(
                s,
                r#"<path class="mark {}" d="M{mx:.1} {:.1} l4 6 h-8 z"><title>{} at {:.3} s</title></path>"#,
                m.kind.name,
                yy - 6.0,
                esc(&m.label),
                m.at_s
            );
        }
    }
    s.push_str("</svg>");
    s
}

const CSS: &str = r#"
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#222;max-width:1180px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:22px 0 8px}
.verdict{padding:10px 14px;border-radius:6px;margin:12px 0}
.pass{background:#e8f5e9;border:1px solid #9c9} .fail{background:#fdecea;border:1px solid #e99}
code,pre{font:12px/1.4 ui-monospace,monospace;background:#f4f4f4;padding:2px 4px;border-radius:3px}
pre{padding:8px;overflow-x:auto;white-space:pre-wrap}
table{border-collapse:collapse;margin:6px 0} td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;font-size:13px}
.timeline text{font-size:11px;fill:#333} .timeline .axis{fill:#777;text-anchor:middle} .timeline .clock{font-size:9px;fill:#888}
.tick{stroke:#eee} .row{stroke:#ddd} .window{stroke:#555;stroke-dasharray:4 3}
.violation{stroke:#d00;stroke-width:2} .mark{fill:#555}
.legend span{display:inline-block;margin-right:12px;font-size:12px} .legend i{display:inline-block;width:12px;height:10px;margin-right:4px;vertical-align:-1px}
#view-local:checked ~ .views .true-view{display:none} #view-true:checked ~ .views .local-view{display:none}
.views{overflow-x:auto}
.reached{color:#2e7d32} .missed{color:#999}
"#;

const PAGE: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>faultline: {{ r.scenario }} seed {{ r.seed }}</title>
<style>{{ css|safe }}</style></head>
<body data-errors="0">
<script>window.onerror=function(){var b=document.body;b.dataset.errors=String(+b.dataset.errors+1);};</script>
<h1>{{ r.scenario }} &middot; seed {{ r.seed }}</h1>
<div>{% if r.bugs %}bugs: <code>{{ r.bugs|join(", ") }}</code> {% endif %}{% if r.fixes %}fixes: <code>{{ r.fixes|join(", ") }}</code> {% endif %}{{ r.events }} events &middot; {{ "%.0f"|format(r.sim_time_s) }} s simulated &middot; trace <code>{{ r.trace_hash }}</code></div>
{% if r.violation %}<div class="verdict fail" id="violation"><b>VIOLATION {{ r.violation.invariant }}</b> ({{ r.violation.kind }}) at {{ "%.3f"|format(r.violation.at_s) }} s true time, event #{{ r.violation.event_index }}{% if r.violation.node %}, node {{ r.violation.node }}{% endif %}<br>{{ r.violation.explanation|inline }}<br>replay: <code>{{ r.violation.replay }}</code></div>
{% else %}<div class="verdict pass"><b>PASS</b>: no invariant failed. Replay: <code>{{ r.replay }}</code></div>{% endif %}
<h2>Timeline</h2>
<input type="radio" name="view" id="view-true" checked> <label for="view-true">true time</label>
<input type="radio" name="view" id="view-local"> <label for="view-local">each node's local time</label>
{{ legend|safe }}
<div class="views"><div class="true-view">{{ svg_true|safe }}</div><div class="local-view">{{ svg_local|safe }}</div></div>
<h2>{{ r.headline.name|sentence|inline }}</h2>
<p>{% if r.headline.value is not none %}{{ r.headline.value|unit(r.headline.unit) }}{% elif r.violation %}not measured in this violation (see its explanation){% else %}nothing to measure in this run{% endif %}{% if r.headline.bound %} (bound: {{ r.headline.bound|inline }}){% endif %} (longest pause {{ "%.1f"|format(r.headline.longest_pause_s) }} s, largest clock skew {{ "%.1f"|format(r.headline.largest_skew_s) }} s)</p>
{% if r.headline.family %}<p>{{ r.headline.family.name|sentence|inline }}: {% if r.headline.family.value is not none %}{{ r.headline.family.value|unit(r.headline.family.unit) }}{% else %}nothing to measure in this run{% endif %}</p>{% endif %}
<h2>Fault schedule</h2>
<table><tr><th>at</th><th>for</th><th>fault</th></tr>{% for f in r.faults %}<tr><td>{{ "%.3f"|format(f.at_s) }} s</td><td>{% if f.dur_s > 0 %}{{ "%.3f"|format(f.dur_s) }} s{% endif %}</td><td>{{ f.what|inline }}</td></tr>{% endfor %}</table>
<h2>Coverage</h2>
<ul>{% for c in r.coverage %}<li class="{% if c[1] %}reached{% else %}missed{% endif %}">{% if c[1] %}&#10003;{% else %}&#10007;{% endif %} {{ c[0]|inline }}</li>{% endfor %}</ul>
<h2>Options (drawn from the seed)</h2>
<pre>{{ options }}</pre>
</body></html>
"#;

const MD: &str = r#"## faultline: {{ r.scenario }} seed {{ r.seed }}

{% if r.violation %}**VIOLATION `{{ r.violation.invariant }}`** ({{ r.violation.kind }}) at {{ "%.3f"|format(r.violation.at_s) }} s true time, event #{{ r.violation.event_index }}{% if r.violation.node %}, node `{{ r.violation.node }}`{% endif %}

> {{ r.violation.explanation }}

Replay: `{{ r.violation.replay }}`
{% else %}**PASS**: no invariant failed ({{ r.events }} events, {{ "%.0f"|format(r.sim_time_s) }} s simulated). Replay: `{{ r.replay }}`
{% endif %}
{% if r.bugs %}Bugs: `{{ r.bugs|join("`, `") }}`. {% endif %}{% if r.fixes %}Fixes: `{{ r.fixes|join("`, `") }}`. {% endif %}Trace `{{ r.trace_hash }}`.

**{{ r.headline.name|sentence }}:** {% if r.headline.value is not none %}{{ r.headline.value|unit(r.headline.unit) }}{% else %}n/a{% endif %}{% if r.headline.bound %} (bound: {{ r.headline.bound }}){% endif %} (longest pause {{ "%.1f"|format(r.headline.longest_pause_s) }} s, largest clock skew {{ "%.1f"|format(r.headline.largest_skew_s) }} s){% if r.headline.family %}

{{ r.headline.family.name|sentence }}: {% if r.headline.family.value is not none %}{{ r.headline.family.value|unit(r.headline.family.unit) }}{% else %}n/a{% endif %}.{% endif %}

### Fault schedule

| at (s) | for (s) | fault |
|---|---|---|
{% for f in r.faults %}| {{ "%.3f"|format(f.at_s) }} | {% if f.dur_s > 0 %}{{ "%.3f"|format(f.dur_s) }}{% endif %} | {{ f.what }} |
{% endfor %}
### What each node went through

| node | faults and beliefs | marks |
|---|---|---|
{% for n in r.nodes %}| {{ n.name }} | {% for b in n.bands %}{{ b.kind }} {{ "%.1f"|format(b.from_s) }}-{{ "%.1f"|format(b.to_s) }} s{% if not loop.last %}; {% endif %}{% endfor %} | {% for m in n.marks %}{{ m.kind }}{% if m.count > 1 %} x{{ m.count }}{% endif %} {{ "%.1f"|format(m.at_s) }} s{% if not loop.last %}; {% endif %}{% endfor %} |
{% endfor %}
### Coverage

{% for c in r.coverage %}- {% if c[1] %}[x]{% else %}[ ]{% endif %} {{ c[0] }}
{% endfor %}"#;

/// The first letter upper-cased, the rest as written (`capitalize` would lower-case "IP").
fn sentence(s: String) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// The unit a template names (`seconds`), or a template error.
fn unit_of(name: &str) -> Result<Unit, minijinja::Error> {
    Unit::parse(name).ok_or_else(|| {
        minijinja::Error::new(
            minijinja::ErrorKind::InvalidOperation,
            format!("unknown unit {name}"),
        )
    })
}

/// The templates; those named `*.html` escape what they show (minijinja escapes by the name's
/// extension), and their `inline` filter turns Markdown code spans into `<code>`.
fn env() -> Environment<'static> {
    let mut e = Environment::new();
    e.add_filter("sentence", sentence);
    e.add_filter("inline", |s: String| {
        Value::from_safe_string(inline_html(&s))
    });
    e.add_filter("unit", |v: f64, u: String| Ok(unit_of(&u)?.show(v)));
    e.add_filter("number", |v: f64, u: String| Ok(unit_of(&u)?.number(v)));
    e.add_template("page.html", PAGE).expect("page template");
    e.add_template("summary.md", MD).expect("markdown template");
    e.add_template("dist.html", DIST)
        .expect("distribution template");
    e.add_template("dist.md", DIST_MD)
        .expect("distribution markdown template");
    e
}

/// The self-contained HTML report of one run.
pub fn html(r: &Report) -> String {
    let options = serde_json::to_string_pretty(&r.options).unwrap_or_default();
    let css = format!("{CSS}{}", kinds_css(&r.legend));
    env()
        .get_template("page.html")
        .unwrap()
        .render(context! { r => r, css => css, legend => legend_html(&r.legend), svg_true => timeline_svg(r, false), svg_local => timeline_svg(r, true), options => options })
        .expect("the page renders")
}

/// The Markdown summary of one run (for a CI job summary).
pub fn markdown(r: &Report) -> String {
    env()
        .get_template("summary.md")
        .unwrap()
        .render(context! { r => r })
        .expect("the summary renders")
}

/// A scatter plot of the headline number against `x` (one point per seed; red when it failed).
fn scatter(d: &Distribution, x_of: impl Fn(&crate::SeedRow) -> f64, x_label: &str) -> String {
    // Width, height, left and bottom margins; the top margin holds the y axis's label, written
    // across (a long measure's name rotated along the axis would be clipped at both ends).
    let (w, h, l, b, top) = (520.0, 310.0, 56.0, 40.0, 34.0);
    let pts: Vec<(f64, f64, bool, u64)> = d
        .seeds
        .iter()
        .filter_map(|r| {
            r.headline
                .map(|y| (x_of(r), y, r.violation.is_some(), r.seed))
        })
        .collect();
    let xmax = pts.iter().map(|p| p.0).fold(1.0, f64::max) * 1.05;
    let ymax = pts.iter().map(|p| p.1).fold(1.0, f64::max) * 1.1;
    let px = |v: f64| l + v / xmax * (w - l - 12.0);
    let py = |v: f64| h - b - v / ymax * (h - b - top);
    let mut s = format!(
        r#"<svg class="scatter" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}">"#
    );
    let _ = write!(
        s,
        r#"<line x1="{l}" y1="{0}" x2="{1}" y2="{0}" stroke="gray"/><line x1="{l}" y1="{top}" x2="{l}" y2="{0}" stroke="gray"/>"#,
        h - b,
        w - 12.0
    );
    let _ = write!(
        s,
        r#"<text x="{:.0}" y="{:.0}" font-size="12" text-anchor="middle">{x_label} (s)</text>"#,
        (w + l) / 2.0,
        h - 8.0
    );
    let _ = write!(
        s,
        r#"<text x="4" y="{:.0}" font-size="12" text-anchor="start">&#8593; {}{}</text>"#,
        top - 14.0,
        esc(&d.headline),
        d.unit.suffix()
    );
    for i in 0..=4 {
        let (xv, yv) = (xmax * i as f64 / 4.0, ymax * i as f64 / 4.0);
        let prec = if xmax < 10.0 { 1 } else { 0 };
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="middle" fill="dimgray">{xv:.prec$}</text>"#,
            px(xv),
            h - b + 14.0
        );
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end" fill="dimgray">{yv:.1}</text>"#,
            l - 4.0,
            py(yv) + 3.0
        );
    }
    for (xv, yv, failed, seed) in pts {
        let c = if failed { "#d32f2f" } else { "#1e88e5" };
        let _ = write!(
            s,
            r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{c}" opacity=".75"><title>seed {seed}: {}</title></circle>"#,
            px(xv),
            py(yv),
            d.unit.show(yv)
        );
    }
    s.push_str("</svg>");
    s
}

const DIST: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>faultline: {{ d.scenario }} over {{ d.seeds|length }} seeds</title>
<style>{{ css|safe }}</style></head>
<body data-errors="0">
<script>window.onerror=function(){var b=document.body;b.dataset.errors=String(+b.dataset.errors+1);};</script>
<h1>{{ d.scenario }} &middot; {{ d.seeds|length }} seeds</h1>
<div>{% if d.bugs %}bugs: <code>{{ d.bugs|join(", ") }}</code> {% endif %}{% if d.fixes %}fixes: <code>{{ d.fixes|join(", ") }}</code> {% endif %}{{ d.failures }} failing seed(s)</div>
<h2>{{ d.headline|sentence|inline }}</h2>
<p>median {% if d.median is not none %}{{ d.median|unit(d.unit) }}{% else %}n/a{% endif %}, 90th percentile {% if d.p90 is not none %}{{ d.p90|unit(d.unit) }}{% else %}n/a{% endif %}, max {% if d.max is not none %}{{ d.max|unit(d.unit) }}{% else %}n/a{% endif %} (red: a seed that violated an invariant)</p>
<div id="charts">{{ by_pause|safe }} {{ by_skew|safe }}</div>
{{ detail|safe }}
<h2>Seeds</h2>
<table><tr><th>seed</th><th>{{ d.headline|inline }}{{ suffix }}</th><th>longest pause (s)</th><th>largest skew (s)</th><th>violation</th></tr>
{% for s in d.seeds %}<tr><td>{{ s.seed }}</td><td>{% if s.headline is not none %}{{ s.headline|number(d.unit) }}{% endif %}</td><td>{{ "%.1f"|format(s.longest_pause_s) }}</td><td>{{ "%.1f"|format(s.largest_skew_s) }}</td><td>{% if s.violation %}{{ s.violation }}{% endif %}</td></tr>
{% endfor %}</table>
</body></html>
"#;

const DIST_MD: &str = r#"## faultline: {{ d.scenario }} over {{ d.seeds|length }} seeds

{% if d.bugs %}Bugs: `{{ d.bugs|join("`, `") }}`. {% endif %}{% if d.fixes %}Fixes: `{{ d.fixes|join("`, `") }}`. {% endif %}{{ d.failures }} failing seed(s).

**{{ d.headline|sentence }}:** median {% if d.median is not none %}{{ d.median|unit(d.unit) }}{% else %}n/a{% endif %}, 90th percentile {% if d.p90 is not none %}{{ d.p90|unit(d.unit) }}{% else %}n/a{% endif %}, max {% if d.max is not none %}{{ d.max|unit(d.unit) }}{% else %}n/a{% endif %}.

| seed | {{ d.headline }}{{ suffix }} | longest pause (s) | largest skew (s) | violation |
|---|---|---|---|---|
{% for s in d.seeds %}| {{ s.seed }} | {% if s.headline is not none %}{{ s.headline|number(d.unit) }}{% endif %} | {{ "%.1f"|format(s.longest_pause_s) }} | {{ "%.1f"|format(s.largest_skew_s) }} | {% if s.violation %}{{ s.violation }}{% endif %} |
{% endfor %}"#;

/// The `--seeds` HTML report: charts against pause length and clock skew, the per-seed table, and
/// (as `detail`) the timeline of a representative seed.
pub fn distribution_html(d: &Distribution, detail: Option<&Report>) -> String {
    let detail_html = detail
        .map(|r| {
            let which = if r.violation.is_some() {
                " (the first failing seed)"
            } else {
                " (the first seed)"
            };
            let verdict = r.violation.as_ref().map(|v| {
                format!(
                    "<div class=\"verdict fail\" id=\"violation\"><b>VIOLATION {}</b><br>{}<br>replay: <code>{}</code></div>",
                    esc(&v.invariant),
                    inline_html(&v.explanation),
                    esc(&v.replay)
                )
            });
            format!(
                "<h2>Seed {} in detail{which}</h2>{}{}<div class=\"views\">{}</div>",
                r.seed,
                verdict.unwrap_or_default(),
                legend_html(&r.legend),
                timeline_svg(r, false),
            )
        })
        .unwrap_or_default();
    let css = format!(
        "{CSS}{}",
        detail.map(|r| kinds_css(&r.legend)).unwrap_or_default()
    );
    env()
        .get_template("dist.html")
        .unwrap()
        .render(context! { d => d, css => css, suffix => d.unit.suffix(), by_pause => scatter(d, |r| r.longest_pause_s, "longest pause"), by_skew => scatter(d, |r| r.largest_skew_s, "largest clock skew"), detail => detail_html })
        .expect("the distribution renders")
}

/// The `--seeds` Markdown summary.
pub fn distribution_markdown(d: &Distribution) -> String {
    env()
        .get_template("dist.md")
        .unwrap()
        .render(context! { d => d, suffix => d.unit.suffix() })
        .expect("the distribution summary renders")
}

#[cfg(test)]
mod tests {
    use super::inline_html;

    /// Code spans become `<code>`, everything is escaped, and backticks without a partner stay.
    #[test]
    fn inline_code_is_html() {
        assert_eq!(
            inline_html("one `etcd_timeout` (60 s) + `MASTER_TIMEOUT`"),
            "one <code>etcd_timeout</code> (60 s) + <code>MASTER_TIMEOUT</code>"
        );
        assert_eq!(
            inline_html("a <b> & `<i>`"),
            "a &lt;b&gt; &amp; <code>&lt;i&gt;</code>"
        );
        assert_eq!(inline_html("``a ` b`` é `x"), "<code>a ` b</code> é `x");
        assert_eq!(inline_html("`` ` ``"), "<code>`</code>");
        assert_eq!(inline_html("no code"), "no code");
    }
}
