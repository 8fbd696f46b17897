#!/usr/bin/env python3
"""Renders dedupsim's pictures in headless Chromium and checks them from the rendered page.

  check_pictures.py runs    DEDUPSIM RUNSDIR  every scenario's run (and the variants below) once,
                                               writing its --timeline, its --html page and its
                                               --diagram mermaid into RUNSDIR (emptied first):
                                               the pictures the three checks below read (a
                                               CTest fixture, so the runs are made once)
  check_pictures.py svg     DEDUPSIM RUNSDIR WORKDIR [--screenshot PNG]
                                               every scenario's --timeline at 1920 x 1080:
                                               1920 wide, every label at least 16 px on
                                               screen, no two labels overlap, no label
                                               crosses a leader line or a mark, nothing is
                                               cut at the edge, no bar runs past its
                                               band's end
  check_pictures.py mermaid DEDUPSIM RUNSDIR WORKDIR
                                               every scenario's --diagram mermaid parses and
                                               renders with the pinned mermaid 11; the
                                               scenario check's box is grey
  check_pictures.py html    DEDUPSIM RUNSDIR WORKDIR CONNINFO_FILE [--screenshot PNG]
                                               every scenario's --html page at 1920 x 1080
                                               (and pages made on PostgreSQL, on the server
                                               CONNINFO_FILE names, each in a schema of its
                                               own), at every step: every text at least
                                               16 px, no two texts overlap; naive's page,
                                               stepped by key presses, shows Reserved 2 then
                                               4; and the page of check-then-process's crash
                                               counterexample (explore --counterexample
                                               --html, on SQLite and on PostgreSQL) shows
                                               2 after the crash, then 4
  check_pictures.py postgres DEDUPSIM WORKDIR CONNINFO_FILE
                                               every scenario's --timeline and --html made on
                                               PostgreSQL (the server CONNINFO_FILE names,
                                               each run in a schema of its own): the svg
                                               checks and the html checks at every step

A check fails if RUNSDIR was not made by `runs` for this dedupsim's scenarios (its list of
runs differs): never a check of stale pictures.

The checks run as a small script inside the page; Chromium prints the page after it ran
(--dump-dom) and this script reads the verdict from it. A missing tool is a failure, not a
skip: `sh tools/setup.sh --tests` installs chromium and the pinned npm packages.
"""
import html
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
MERMAID = os.path.join(HERE, "node_modules", "mermaid", "dist", "mermaid.min.js")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars"]


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def chromium(work, args, timeout=240):
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        fail("chromium is not installed (run: sh tools/setup.sh --tests)")
    profile = os.path.join(work, "profile-%d" % len(os.listdir(work)))
    cmd = [exe] + FLAGS + ["--user-data-dir=" + profile] + args
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    shutil.rmtree(profile, ignore_errors=True)
    return run


def dump(work, page, budget_ms=20000, size=None, timeout=240):
    args = ["--virtual-time-budget=%d" % budget_ms, "--run-all-compositor-stages-before-draw",
            "--allow-file-access-from-files"]
    if size:
        args.append("--window-size=%d,%d" % size)
    run = chromium(work, args + ["--dump-dom", "file://" + page], timeout)
    m = re.search(r'<pre id="verdict">(.*?)</pre>', run.stdout, re.S)
    if not m:
        print(run.stderr[-3000:])
        fail("the page gave no verdict (see Chromium's output above)")
    return json.loads(html.unescape(m.group(1)))


def run_each(dedupsim, argvs, command="run"):
    """Runs `dedupsim COMMAND ARGV` for each ARGV (COMMAND None: `dedupsim ARGV`), several
    at once (a run mostly waits out its holds and staggers, on its own database), and
    returns their outputs in order. A run that fails fails the check, as one by one."""
    prefix = [command] if command else []
    def one(argv):
        return subprocess.run([dedupsim] + prefix + argv, capture_output=True, text=True,
                              check=True).stdout
    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(one, argvs))


def scenarios(dedupsim):
    out = subprocess.run([dedupsim, "list", "--format", "json"], capture_output=True, text=True,
                         check=True).stdout
    return [json.loads(line)["scenario"] for line in out.splitlines() if line.strip()]


# Every scenario as it runs by default, plus the variants whose pictures differ most.
def runs(dedupsim):
    out = [[name] for name in scenarios(dedupsim)]
    out += [["crash-before-commit", "--crash-mode", "kill"],
            ["check-then-process", "--crash-mode", "exit"],
            ["email", "--crash-mode", "kill"],
            ["concurrent", "--instances", "processes"],
            ["all"]]
    return out


# Step-through pages made on PostgreSQL: a race (a wait seen by the server's wait watcher)
# and a crash (an uncommitted change the probe's own session never sees).
PG_PAGES = [["concurrent", "--backend", "postgres"],
            ["crash-before-commit", "--backend", "postgres"],
            ["crash-before-commit", "--backend", "postgres", "--crash-mode", "kill"]]


# Step-through pages of a counterexample as the explorer replays it (the whole command line:
# `dedupsim explore ...`), on SQLite and on PostgreSQL (its schema's tables read from the
# server after each step).
COUNTEREXAMPLE = ["explore", "--strategy", "check-then-process", "--fault", "crash",
                  "--counterexample"]
COUNTEREXAMPLE_PAGES = [COUNTEREXAMPLE, COUNTEREXAMPLE + ["--backend", "postgres"]]


SVG_CHECK = r"""
<pre id="verdict"></pre>
<script>
(function () {
  const problems = [];
  let texts = 0;
  let smallest = 1000;
  function inter(a, b, slack) {
    return a.left < b.right - slack && b.left < a.right - slack &&
           a.top < b.bottom - slack && b.top < a.bottom - slack;
  }
  document.querySelectorAll('div.case').forEach(function (box) {
    const name = box.dataset.name;
    const svg = box.querySelector('svg');
    const frame = svg.getBoundingClientRect();
    // Drawn at its own size on a 1920 x 1080 screen: as wide as the screen.
    if (Math.abs(frame.width - 1920) > 0.5) problems.push(name + ': ' + frame.width + ' px wide, not 1920');
    const scale = frame.width / svg.viewBox.baseVal.width;
    const ts = Array.from(svg.querySelectorAll('text')).map(function (t) {
      return {t: t.textContent, r: t.getBoundingClientRect(),
              px: parseFloat(getComputedStyle(t).fontSize) * scale};
    }).filter(function (x) { return x.t.trim() !== '' && x.r.width > 0; });
    texts += ts.length;
    ts.forEach(function (a) {
      smallest = Math.min(smallest, a.px);
      if (a.px < 16 - 0.01) problems.push(name + ': "' + a.t + '" is ' + a.px.toFixed(1) + ' px');
    });
    ts.forEach(function (a) {
      if (a.r.left < frame.left - 0.5 || a.r.right > frame.right + 0.5 ||
          a.r.top < frame.top - 0.5 || a.r.bottom > frame.bottom + 0.5) {
        problems.push(name + ': cut at the edge: "' + a.t + '"');
      }
    });
    for (let i = 0; i < ts.length; i++) {
      for (let j = i + 1; j < ts.length; j++) {
        if (inter(ts[i].r, ts[j].r, 1.0)) {
          problems.push(name + ': "' + ts[i].t + '" overlaps "' + ts[j].t + '"');
        }
      }
    }
    const marks = Array.from(svg.querySelectorAll('line.leader, line.divider, [class*="-mark"]')).map(function (m) {
      return {c: m.getAttribute('class'), r: m.getBoundingClientRect()};
    });
    ts.forEach(function (a) {
      marks.forEach(function (m) {
        if (inter(a.r, m.r, 1.5)) problems.push(name + ': "' + a.t + '" is crossed by a ' + m.c);
      });
    });
  });
  // A band's time ends at its dashed band-end line: no transaction or wait drawn in that
  // band runs past it (one that goes on is drawn to it and resumes in the next band; a
  // statement's short bar may stand across it).
  document.querySelectorAll('div.case').forEach(function (box) {
    const name = box.dataset.name;
    const bars = Array.from(box.querySelectorAll('rect.wait, rect.bar')).filter(function (r) {
      return r.getBoundingClientRect().width > 12;
    }).map(function (r) { return {r: r.getBoundingClientRect(), t: r.textContent}; });
    box.querySelectorAll('line.band-end').forEach(function (l) {
      const e = l.getBoundingClientRect();
      bars.forEach(function (b) {
        const mid = (b.r.top + b.r.bottom) / 2;
        if (mid > e.top && mid < e.bottom && b.r.left < e.left && b.r.right > e.left + 0.5) {
          problems.push(name + ': a bar runs ' + (b.r.right - e.left).toFixed(1) +
                        ' px past its band\'s end: ' + b.t.slice(0, 80));
        }
      });
    });
  });
  document.getElementById('verdict').textContent =
      JSON.stringify({cases: document.querySelectorAll('div.case').length, texts: texts,
                      smallest: smallest, problems: problems});
})();
</script>
"""


RUNS_LIST = "runs.json"


def make_runs(dedupsim, runs_dir):
    """Each of runs(dedupsim) once, with its timeline (t<i>.svg), its step-through page
    (p<i>.html) and its Mermaid diagrams (m<i>.json, the run's --format json lines) written
    into runs_dir, and the list of runs last (runs.json): a folder without it is not whole."""
    shutil.rmtree(runs_dir, ignore_errors=True)
    os.makedirs(runs_dir)
    all_args = runs(dedupsim)
    outs = run_each(dedupsim, [args + ["--timeline", os.path.join(runs_dir, "t%d.svg" % i),
                                       "--html", os.path.join(runs_dir, "p%d.html" % i),
                                       "--diagram", "mermaid", "--format", "json"]
                               for i, args in enumerate(all_args)])
    for i, out in enumerate(outs):
        with open(os.path.join(runs_dir, "m%d.json" % i), "w", encoding="utf-8") as f:
            f.write(out)
    with open(os.path.join(runs_dir, RUNS_LIST), "w", encoding="utf-8") as f:
        json.dump(all_args, f)
    print("runs: %d, each with its timeline, page and diagrams in %s" % (len(all_args), runs_dir))


def made_runs(dedupsim, runs_dir, kind):
    """The runs' arguments and the paths of their files of one kind ("t" timelines, "p"
    pages, "m" diagrams) in runs_dir, made by make_runs for this dedupsim's scenarios."""
    listed = os.path.join(runs_dir, RUNS_LIST)
    if not os.path.exists(listed):
        fail("%s has no %s: the pictures were not made (check_pictures.py runs)" %
             (runs_dir, RUNS_LIST))
    all_args = json.load(open(listed, encoding="utf-8"))
    if all_args != runs(dedupsim):
        fail("%s was made for other runs than this dedupsim's: %s" % (runs_dir, all_args))
    ext = {"t": "svg", "p": "html", "m": "json"}[kind]
    return all_args, [os.path.join(runs_dir, "%s%d.%s" % (kind, i, ext))
                      for i in range(len(all_args))]


def check_svg(dedupsim, runs_dir, work):
    all_args, paths = made_runs(dedupsim, runs_dir, "t")
    check_svg_files(work, all_args, paths)


def check_svg_files(work, all_args, paths):
    """SVG_CHECK on the timelines at paths (made by `dedupsim run ARGS`), one Chromium start."""
    parts = []
    for args, path in zip(all_args, paths):
        svg = open(path, encoding="utf-8").read()
        svg = svg[svg.index("<svg"):]
        parts.append('<div class="case" data-name="%s">%s</div>' % (html.escape(" ".join(args)), svg))
    page = os.path.join(work, "svg.html")
    with open(page, "w", encoding="utf-8") as f:
        f.write('<!DOCTYPE html><html><head><meta charset="utf-8"><style>body{margin:0}'
                'div.case{margin:0 0 20px 0;width:1920px}svg{display:block}</style></head><body>' +
                "".join(parts) + SVG_CHECK + "</body></html>")
    verdict = dump(work, page, size=(1920, 1080))
    print("timelines: %d, texts checked: %d, smallest label %.1f px" %
          (verdict["cases"], verdict["texts"], verdict["smallest"]))
    if verdict["cases"] != len(parts) or verdict["texts"] < 20 * len(parts):
        fail("the timelines did not render: %s" % verdict)
    for p in verdict["problems"]:
        print("  " + p)
    if verdict["problems"]:
        fail("%d label problems" % len(verdict["problems"]))
    print("PASS: every timeline lays out without overlaps or cut labels")


def timeline_shot(dedupsim, work, png):
    """The docs' timeline picture: crash-before-commit with a killed process."""
    path = os.path.join(work, "crash.svg")
    subprocess.run([dedupsim, "run", "crash-before-commit", "--crash-mode", "kill", "--timeline",
                    path], capture_output=True, check=True)
    svg = open(path, encoding="utf-8").read()
    width, height = re.search(r'<svg [^>]*width="([0-9.]+)" height="([0-9.]+)"', svg).groups()
    chromium(work, ["--window-size=%d,%d" % (float(width), float(height)), "--screenshot=" + png,
                    "file://" + path])
    if not os.path.exists(png):
        fail("no screenshot of the timeline")
    print("screenshot: " + png)


MERMAID_CHECK = r"""
<pre id="verdict"></pre>
<script>
(async function () {
  const out = {rendered: 0, boxes: 0, errors: []};
  try {
    mermaid.initialize({startOnLoad: false, securityLevel: 'strict'});
    const cases = JSON.parse(document.getElementById('cases').textContent);
    for (let i = 0; i < cases.length; i++) {
      try {
        await mermaid.parse(cases[i].text);
        const r = await mermaid.render('d' + i, cases[i].text);
        if (!r.svg || r.svg.indexOf('<svg') < 0) throw new Error('no svg');
        if (r.svg.indexOf('Syntax error') >= 0) throw new Error('rendered a syntax error');
        // The scenario check's box is grey, its title words only: a title Mermaid misreads
        // (parentheses) leaves the box transparent and prints the colour as text.
        if (cases[i].text.indexOf('box rgb(238,238,238)') >= 0) {
          if (!/<rect[^>]*class="rect"[^>]*fill="rgb\(238,238,238\)"/.test(r.svg)) throw new Error('the scenario check box is not grey');
          if (/>[^<]*rgb\(238/.test(r.svg)) throw new Error('the box title shows its colour as text');
          out.boxes++;
        }
        out.rendered++;
      } catch (e) {
        out.errors.push(cases[i].name + ': ' + (e && e.message ? e.message : String(e)));
      }
    }
  } catch (e) {
    out.errors.push('mermaid: ' + e);
  }
  document.getElementById('verdict').textContent = JSON.stringify(out);
})();
</script>
"""


def check_mermaid(dedupsim, runs_dir, work):
    if not os.path.exists(MERMAID):
        fail("mermaid is not installed in tests/browser (run: sh tools/setup.sh --tests)")
    cases = []
    all_args, paths = made_runs(dedupsim, runs_dir, "m")
    outs = [open(path, encoding="utf-8").read() for path in paths]
    for args, out in zip(all_args, outs):
        for line in out.splitlines():
            j = json.loads(line)
            cases.append({"name": " ".join(args) + " / " + j["scenario"], "text": j["diagram"]})
    page = os.path.join(work, "mermaid.html")
    data = json.dumps(cases).replace("<", "\\u003c")
    with open(page, "w", encoding="utf-8") as f:
        f.write('<!DOCTYPE html><html><head><meta charset="utf-8"><script src="file://%s"></script>'
                '</head><body><script type="application/json" id="cases">%s</script>%s</body></html>'
                % (MERMAID, data, MERMAID_CHECK))
    verdict = dump(work, page, 60000)
    # The version that rendered them: the one installed from the lockfile.
    package = os.path.join(HERE, "node_modules", "mermaid", "package.json")
    verdict["version"] = json.load(open(package, encoding="utf-8"))["version"]
    print("mermaid %s: %d of %d diagrams rendered, %d grey check boxes" %
          (verdict["version"], verdict["rendered"], len(cases), verdict["boxes"]))
    for e in verdict["errors"]:
        print("  " + e)
    if not verdict["version"].startswith("11."):
        fail("not mermaid 11: %r" % verdict["version"])
    if verdict["errors"] or verdict["rendered"] != len(cases):
        fail("%d diagrams failed" % len(verdict["errors"]))
    if verdict["boxes"] < 3:
        fail("only %d diagrams have the scenario check's box" % verdict["boxes"])
    print("PASS: every diagram renders with mermaid %s" % verdict["version"])


HTML_CHECK = r"""
<pre id="verdict"></pre>
<script>
(function () {
  function press(key) { document.dispatchEvent(new KeyboardEvent('keydown', {key: key, bubbles: true})); }
  function reserved() {
    const cell = document.querySelector('table[data-table="StockItems"] td[data-col="Reserved"]');
    return cell ? cell.textContent : null;
  }
  const seen = [];
  press('End');
  const last = document.getElementById('title').textContent;
  press('Home');
  const total = Number(document.getElementById('slider').max) + 1;
  for (let i = 0; i < total; i++) {
    seen.push({title: document.getElementById('title').textContent, reserved: reserved(),
               changed: Array.from(document.querySelectorAll('td.changed')).map(function (c) { return c.dataset.col; }),
               chips: Array.from(document.querySelectorAll('.delivery')).map(function (c) { return c.textContent; }),
               hash: location.hash});
    press(i % 2 ? ' ' : 'ArrowRight');
  }
  press('ArrowLeft');
  const back = document.getElementById('title').textContent;
  document.getElementById('verdict').textContent = JSON.stringify({steps: seen, last: last, back: back});
})();
</script>
"""


PAGE_CHECK = r"""
<pre id="verdict"></pre>
<script>
window.addEventListener('load', function () {
  const problems = [];
  let checked = 0, steps = 0, smallest = 1000;
  function clip(r, el, win) {
    // The part of r left visible by el's clipping ancestors and the window.
    let box = {left: r.left, top: r.top, right: r.right, bottom: r.bottom};
    for (let a = el; a && a.nodeType === 1; a = a.parentElement) {
      const cs = win.getComputedStyle(a);
      if (cs.overflowX !== 'visible' || cs.overflowY !== 'visible') {
        const c = a.getBoundingClientRect();
        box = {left: Math.max(box.left, c.left), top: Math.max(box.top, c.top),
               right: Math.min(box.right, c.right), bottom: Math.min(box.bottom, c.bottom)};
      }
    }
    box = {left: Math.max(box.left, 0), top: Math.max(box.top, 0),
           right: Math.min(box.right, win.innerWidth), bottom: Math.min(box.bottom, win.innerHeight)};
    return box.right - box.left > 0.5 && box.bottom - box.top > 0.5 ? box : null;
  }
  const stepped = {};
  document.querySelectorAll('iframe.harness').forEach(function (frame) {
    // A page stepped by its own key presses (HTML_CHECK): its verdict, read as it left it.
    const v = frame.contentDocument && frame.contentDocument.getElementById('verdict');
    if (v && v.textContent) stepped[frame.dataset.name] = JSON.parse(v.textContent);
  });
  document.querySelectorAll('iframe:not(.harness)').forEach(function (frame) {
    const name = frame.dataset.name;
    const win = frame.contentWindow, doc = frame.contentDocument;
    if (!win || !win.dedupsimShow) { problems.push(name + ': the page did not load'); return; }
    const total = Number(doc.getElementById('slider').max) + 1;
    for (let i = 0; i < total; i++) {
      win.dedupsimShow(i);
      steps++;
      const texts = [];
      const walker = doc.createTreeWalker(doc.body, NodeFilter.SHOW_TEXT);
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        const el = n.parentElement;
        if (!n.textContent.trim() || el.tagName === 'SCRIPT' || el.tagName === 'STYLE') continue;
        // One box per line the text takes (a wrapped text is several).
        const range = doc.createRange();
        range.selectNodeContents(n);
        const boxes = Array.from(range.getClientRects()).filter(function (r) { return r.width > 0; })
            .map(function (r) { return clip(r, el, win); }).filter(function (b) { return b; });
        if (!boxes.length) continue;
        const px = parseFloat(win.getComputedStyle(el).fontSize);
        smallest = Math.min(smallest, px);
        if (px < 16 - 0.01) problems.push(name + ' step ' + (i + 1) + ': "' + n.textContent.slice(0, 40) + '" is ' + px + ' px');
        boxes.forEach(function (box) { texts.push({t: n.textContent, box: box, node: n}); });
      }
      checked += texts.length;
      // What the step changed is on screen: each changed cell and new row wholly inside the
      // window and its scrolled panel, not cut off at the right (orphan-claim step 19's
      // changed Owner and LeaseExpiresAt were off screen, walkthrough of 6 December).
      doc.querySelectorAll('td.changed, tr.added td').forEach(function (cell) {
        const r = cell.getBoundingClientRect();
        const box = clip(r, cell, win);
        if (!box || box.right - box.left < r.width - 1 || box.bottom - box.top < r.height - 1) {
          problems.push(name + ' step ' + (i + 1) + ': the changed cell "' + cell.textContent.slice(0, 40) + '" is not wholly on screen');
        }
      });
      for (let a = 0; a < texts.length; a++) {
        for (let b = a + 1; b < texts.length; b++) {
          if (texts[a].node === texts[b].node) continue;
          const p = texts[a].box, q = texts[b].box;
          if (p.left < q.right - 1 && q.left < p.right - 1 && p.top < q.bottom - 1 && q.top < p.bottom - 1) {
            problems.push(name + ' step ' + (i + 1) + ': "' + texts[a].t.slice(0, 40) + '" overlaps "' + texts[b].t.slice(0, 40) + '"');
          }
        }
      }
    }
  });
  document.getElementById('verdict').textContent = JSON.stringify(
      {pages: document.querySelectorAll('iframe:not(.harness)').length, steps: steps,
       texts: checked, smallest: smallest, problems: problems.slice(0, 200),
       count: problems.length, stepped: stepped});
});
</script>
"""


def check_html(dedupsim, runs_dir, work, conninfo_file, screenshot):
    """Every scenario's step-through page at 1920 x 1080, at every step: each text at least
    16 px, no two texts overlap. With them, pages made on PostgreSQL (on the server
    conninfo_file names, each run in a schema of its own), whose tables the probe read from
    the server, and the counterexample pages of explore on both backends. Then naive's page
    and the two counterexample pages stepped by key presses (HTML_CHECK, a copy of each page
    with the script added). All of them are iframes of one page: one Chromium start for the
    lot."""
    made_args, made_paths = made_runs(dedupsim, runs_dir, "p")
    dsn = open(conninfo_file, encoding="utf-8").read().strip()
    if not dsn:
        fail("no server: %s is empty" % conninfo_file)
    own_args = [["run"] + args for args in PG_PAGES] + COUNTEREXAMPLE_PAGES
    own_paths = [os.path.join(work, "p%d.html" % i) for i in range(len(own_args))]
    # On the shared server: each run in a schema of its own (none of check_postgres's).
    on_server = [args + (["--dsn", dsn, "--pg-schema", "pictures_html_%d" % i]
                         if "postgres" in args else [])
                 for i, args in enumerate(own_args)]
    run_each(dedupsim, [args + ["--html", path] for args, path in zip(on_server, own_paths)],
             command=None)
    all_args = [["run"] + args for args in made_args] + own_args
    paths = made_paths + own_paths
    naive = paths[all_args.index(["run", "naive"])]
    text = open(naive, encoding="utf-8").read()
    for needle in ("http://", "https://", "<link", " src="):
        if needle in text:
            fail("the page is not self-contained: it contains %r" % needle)
    stepped = {"naive": naive}
    for args, backend in zip(COUNTEREXAMPLE_PAGES, ("sqlite", "postgres")):
        stepped["counterexample-" + backend] = paths[all_args.index(args)]
    harnesses = {}
    for name, path in stepped.items():
        harnesses[name] = os.path.join(work, name + "-harness.html")
        with open(harnesses[name], "w", encoding="utf-8") as f:
            f.write(open(path, encoding="utf-8").read().replace("</body>", HTML_CHECK + "</body>"))
    stepped_verdicts = check_page_files(work, all_args, paths, harnesses)
    if sorted(stepped_verdicts) != sorted(harnesses):
        fail("the stepped pages gave no verdict: %s" % sorted(stepped_verdicts))
    steps = check_naive_steps(stepped_verdicts["naive"])
    for backend in ("sqlite", "postgres"):
        check_counterexample_steps(backend, stepped_verdicts["counterexample-" + backend]["steps"])
    if screenshot:
        updates = [s for s in steps if "UPDATE StockItems" in s["title"]]
        n = steps.index(updates[1]) + 1
        run = chromium(work, ["--window-size=1280,720", "--screenshot=" + screenshot,
                              "file://%s#step-%d" % (naive, n)])
        if not os.path.exists(screenshot):
            print(run.stderr[-2000:])
            fail("no screenshot")
        print("screenshot: " + screenshot)


def check_page_files(work, all_args, paths, harnesses=None):
    """PAGE_CHECK on the pages at paths (made by `dedupsim ARGS`), every step of each, and
    the stepped harnesses' verdicts returned: all iframes of one page, one Chromium start."""
    harnesses = harnesses or {}
    frames = "".join('<iframe data-name="%s" src="file://%s" width="1920" height="1080"></iframe>' %
                     (html.escape(" ".join(args)), path) for args, path in zip(all_args, paths))
    frames += "".join('<iframe class="harness" data-name="%s" src="file://%s" width="1920" '
                      'height="1080"></iframe>' % (name, path) for name, path in harnesses.items())
    page = os.path.join(work, "pages.html")
    with open(page, "w", encoding="utf-8") as f:
        f.write('<!DOCTYPE html><html><head><meta charset="utf-8"><style>body{margin:0}'
                'iframe{display:block;border:0}</style></head><body>' + frames + PAGE_CHECK +
                "</body></html>")
    # All the html check's Chromium work in one start: at load 37 it took more than 240 s, so
    # it may take most of the test's 400 s (tests/CMakeLists.txt).
    verdict = dump(work, page, budget_ms=120000, size=(1920, 1080), timeout=360)
    print("pages: %d, steps: %d, texts checked: %d, smallest text %.1f px" %
          (verdict["pages"], verdict["steps"], verdict["texts"], verdict["smallest"]))
    if verdict["pages"] != len(all_args) or verdict["steps"] < 10 * len(all_args):
        fail("the pages did not render: %s" % verdict)
    for p in verdict["problems"]:
        print("  " + p)
    if verdict["count"]:
        fail("%d problems on the pages" % verdict["count"])
    print("PASS: every page reads at 1920 x 1080: texts of 16 px or more, none overlapping")
    return verdict["stepped"]


def check_postgres(dedupsim, work, conninfo_file):
    """Every scenario's timeline and page made on PostgreSQL (the runs and variants of the
    svg check, each in a schema of its own on the server conninfo_file names): SVG_CHECK on
    the timelines, PAGE_CHECK at every step of the pages."""
    dsn = open(conninfo_file, encoding="utf-8").read().strip()
    if not dsn:
        fail("no server: %s is empty" % conninfo_file)
    all_args = [args + ["--backend", "postgres", "--dsn", dsn, "--pg-schema", "pictures_%d" % i]
                for i, args in enumerate(runs(dedupsim))]
    svgs = [os.path.join(work, "t%d.svg" % i) for i in range(len(all_args))]
    pages = [os.path.join(work, "p%d.html" % i) for i in range(len(all_args))]
    run_each(dedupsim, [args + ["--timeline", svg, "--html", page]
                        for args, svg, page in zip(all_args, svgs, pages)])
    named = [args[:args.index("--dsn")] for args in all_args]  # no conninfo in the names
    # Made on the server: concurrent's second copy met PostgreSQL's duplicate key (23505).
    # Catches a --backend postgres run made on SQLite (OpenLessonDatabase handing out a
    # SQLite database for "postgres": the timeline then says duplicate key (1555)).
    concurrent = open(svgs[[a[0] for a in named].index("concurrent")], encoding="utf-8").read()
    if "duplicate key (23505)" not in concurrent:
        fail("concurrent's timeline shows no PostgreSQL duplicate key (23505): not made on "
             "PostgreSQL")
    check_svg_files(work, named, svgs)
    check_page_files(work, [["run"] + args for args in named], pages)


def check_naive_steps(verdict):
    """naive's page stepped by key presses: Reserved 2 then 4. Returns the steps seen."""
    steps = verdict["steps"]
    for i, s in enumerate(steps):
        print("  %2d  Reserved %-5s %s" % (i + 1, s["reserved"], s["title"]))
    updates = [s for s in steps if "UPDATE StockItems" in s["title"]]
    if len(updates) != 2:
        fail("expected two UPDATE StockItems steps, saw %d" % len(updates))
    if [u["reserved"] for u in updates] != ["2", "4"]:
        fail("Reserved after the two deliveries' updates: %s, expected 2 then 4" %
             [u["reserved"] for u in updates])
    if "Reserved" not in updates[1]["changed"]:
        fail("the second update's change to Reserved is not highlighted")
    # The delivery chip is the broker's count so far, said as a count (twelfth walkthrough:
    # "m1: delivery 2" beside an older delivery's step read as that step's delivery).
    # Mutation caught: the page's chip back to k + ': delivery ' + n.
    chips = [u.get("chips") for u in updates]
    if chips != [["m1: delivered once so far"], ["m1: delivered 2 times so far"]]:
        fail("the delivery chips at the two updates: %s, expected m1 delivered once, then 2 "
             "times so far" % chips)
    first = steps.index(updates[0])
    if first == 0 or steps[first - 1]["reserved"] not in ("0", None):
        fail("before the first update Reserved should be 0, saw %s" % steps[first - 1]["reserved"])
    if verdict["last"] != steps[-1]["title"] or verdict["back"] != steps[-2]["title"]:
        fail("End / ArrowLeft did not move to the last / previous step")
    if steps[-1]["hash"] != "#step-%d" % len(steps):
        fail("the link of the last step is %r" % steps[-1]["hash"])
    print("PASS: stepping through naive shows Reserved 2 then 4")
    return steps


def check_counterexample_steps(name, steps):
    """The crash counterexample's page stepped by key presses: 2 after the crash, then 4."""
    for i, s in enumerate(steps):
        print("  %2d  Reserved %-5s %s" % (i + 1, s["reserved"], s["title"]))
    crash = [i for i, s in enumerate(steps) if "crash at AfterStockCommitted" in s["title"]]
    updates = [i for i, s in enumerate(steps) if "UPDATE StockItems" in s["title"]]
    if len(crash) != 1 or len(updates) != 2 or not updates[0] < crash[0] < updates[1]:
        fail("%s: expected an update, the crash, then the redelivery's update; saw updates "
             "%s, crash %s" % (name, updates, crash))
    shown = [steps[updates[0]]["reserved"], steps[crash[0]]["reserved"],
             steps[updates[1]]["reserved"]]
    if shown != ["2", "2", "4"]:
        fail("%s: Reserved after the first update, the crash and the second update: %s, "
             "expected 2, 2, 4" % (name, shown))
    print("PASS (%s): stepping through the crash counterexample shows Reserved 2, 2 at the "
          "crash, then 4" % name)


def main():
    if len(sys.argv) < 4:
        fail(__doc__)
    mode, dedupsim, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    shot = None
    if len(args) >= 2 and args[-2] == "--screenshot":
        shot, args = args[-1], args[:-2]
    wanted = {"runs": 1, "svg": 2, "mermaid": 2, "html": 3, "postgres": 2}
    if mode not in wanted or len(args) != wanted[mode]:
        fail("unknown mode or arguments: %s\n%s" % (" ".join(sys.argv[1:]), __doc__))
    if mode == "runs":
        make_runs(dedupsim, args[0])
        return
    work = args[0] if mode == "postgres" else args[1]
    os.makedirs(work, exist_ok=True)
    if mode == "svg":
        check_svg(dedupsim, args[0], work)
        if shot:
            timeline_shot(dedupsim, work, shot)
    elif mode == "mermaid":
        check_mermaid(dedupsim, args[0], work)
    elif mode == "html":
        check_html(dedupsim, args[0], work, args[2], shot)
    else:
        check_postgres(dedupsim, work, args[1])


if __name__ == "__main__":
    main()
