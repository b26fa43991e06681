"""The Dagster UI as a user sees it, in a real browser: headless Chromium on `lectio dev`.

A throwaway LECTIO_HOME gets the fixture sources (tests/fixtures/sources.yaml, copied) plus one
entry without an `acl`, and `lectio run` over them twice (the entry still broken at the second
build); then `lectio dev` serves the UI on a loopback port and Chromium, driven over the DevTools
protocol (no driver to install: `websockets` comes with the Dagster webserver), opens:

- the asset graph (every group, the training group too, and the ingest group's assets),
- the `chunk_size_distribution` page: its description, the distribution drawn as a table that
  fits the 1600-pixel window with no row over two lines, the histogram inline, and the histogram
  image behind "[Show Markdown]" actually drawn,
- `search_index`'s `every_source_indexed` check, still failed and naming the broken entry after
  the second build, and what the build did to the live version in one sentence,
- the Runs list, where the broken source's ingest run carries the `lectio/failed_sources` tag,
- check pages: a chunk check (blocking, "Skipped" after the bad entry, not "Failed", and no
  Execute button that would launch a run bound to fail) and `source_entry` (failed, naming the
  field),
- the descriptions of `source_inputs` and `live_index`, and `source_inputs`' and the training
  assets' kinds and owners,
- the `nightly_reembed` schedule's preview: one request per source, each request's tags naming its
  partition,
- the `index_after_batch` sensor's page: a batch tagged `lectio/embed_model` (a migration to a
  trained model, launched as a backfill) is indexed through `migrate_index`, gated.
- an alert's link: `alert_on_failed_checks` started by the UI's mutation, the broken entry launched
  as the UI launches it, and the link in the alert the daemon's sensor sends followed to its run,
  on the port `lectio dev` serves.
- a transient failure of that sensor: with the `lectio` database refusing connections, its tick
  says so in one line on its page (no traceback), and the next tick sends the alert it held.

Each page is checked by what its text says; screenshots go to --out. Last, `lectio dev`'s own
output must hold no Python traceback. Exit status 0 when every assertion held, 1 when one did
not, 2 when the check could not run (no Chromium): a check that did not run is never reported as
passed.

    python benchmarks/ui_browser_check.py [--out DIR] [--keep] [--chromium PATH]

Needs the SWORD modules of the fixture sources in LECTIO_CORPUS_DIR (default: the project's
.lectio/corpus, as the tests use).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
BAD_ENTRY = "ui-no-acl"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1600,1200"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=None, help="folder for screenshots (default: a temp folder)")
    parser.add_argument("--keep", action="store_true", help="keep the throwaway LECTIO_HOME")
    parser.add_argument("--chromium", default=shutil.which("chromium") or shutil.which("chromium-browser"))
    args = parser.parse_args()
    if not args.chromium:
        print("NOT RUN: no chromium on the PATH (apt-get install -y chromium)", file=sys.stderr)
        return 2
    out = Path(args.out or tempfile.mkdtemp(prefix="lectio-ui-shots-"))
    out.mkdir(parents=True, exist_ok=True)

    # Not under a private temp folder: the embedded server runs as its own system user.
    home = Path(tempfile.mkdtemp(prefix="lectio-ui-check-"))
    home.chmod(0o755)
    sources = _sources(home / "sources")
    env = {**os.environ, "LECTIO_HOME": str(home), "LECTIO_SOURCES": str(sources),
           "PYTHONWARNINGS": "ignore::Warning"}
    env.setdefault("LECTIO_CORPUS_DIR", str(PROJECT / ".lectio" / "corpus"))
    env.pop("DATABASE_URL", None)
    lectio = [sys.executable, "-m", "cli"]
    check = Checks()
    dev = browser = None
    try:
        print(f"home {home}; lectio run over {sources} …", flush=True)
        done = subprocess.run([*lectio, "run", "--json"], cwd=PROJECT, env=env, capture_output=True, text=True)
        report = json.loads(done.stdout)
        check.sources = [s["source_id"] for s in report["sources"]]
        failed = sorted(s["source_id"] for s in report["sources"] if not s["ok"])
        check.that("lectio run fails exactly the entry without an acl", failed == [BAD_ENTRY], failed)
        check.that("lectio run builds a live index", bool(report["index"].get("live")), report["index"].get("decision"))
        again = json.loads(subprocess.run([*lectio, "run", "--json"], cwd=PROJECT, env=env, capture_output=True,
                                          text=True).stdout)
        failed = sorted(s["source_id"] for s in again["sources"] if not s["ok"])
        check.that("a second lectio run fails the still-broken entry again", failed == [BAD_ENTRY], failed)

        port = _free_port()
        dev_log = open(home / "dev.log", "w")
        dev = subprocess.Popen([*lectio, "dev", "--port", str(port)], cwd=PROJECT, env=env, start_new_session=True,
                               stdout=dev_log, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        _wait_for(lambda: _get(f"{base}/server_info"), 180, "the Dagster webserver")
        browser = Browser(args.chromium, home / "chromium")
        started = time.monotonic()
        _pages(browser, base, out, check)
        _alert_link(browser.page, base, home, out, check)
        _alert_retried(browser.page, base, home, env, out, check)
        print(f"browser pages: {time.monotonic() - started:.1f}s; screenshots in {out}")
    finally:
        if browser is not None:
            browser.close()
        if dev is not None:
            os.killpg(dev.pid, signal.SIGINT)  # lectio dev forwards it to dagster dev
            try:
                dev.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(dev.pid, signal.SIGKILL)
            dev_log.close()
            console = (home / "dev.log").read_text(errors="replace")
            check.that("no Python traceback reached lectio dev's console", "Traceback" not in console,
                       _line(console, "Traceback") or f"{len(console.splitlines())} lines")
        subprocess.run([*lectio, "down"], cwd=PROJECT, env=env, capture_output=True)
        if args.keep:
            print(f"kept {home}")
        else:
            shutil.rmtree(home, ignore_errors=True)
    return check.summary()


def _pages(browser: "Browser", base: str, out: Path, check: "Checks") -> None:
    page = browser.page

    # The asset graph: all five groups; inside `ingest`, its assets.
    text = page.open(f"{base}/asset-groups", until=["ingest", "migration"])
    page.click_text("Skip")  # the first visit's "Join the Dagster community" dialog, over every page
    page.screenshot(out / "asset_graph.png")
    groups = ("ingest", "embed", "index", "migration", "training")
    check.that("asset graph shows the groups", all(g in text for g in groups), [g for g in groups if g in text])
    selection = urllib.parse.quote('group:"ingest"')
    text = page.open(f"{base}/asset-groups~{selection}", until=["raw_texts", "chunks"])
    page.screenshot(out / "asset_graph_ingest.png")
    names = ("source_inputs", "raw_texts", "parsed_structure", "chunks")
    check.that("ingest group shows its assets", all(n in text for n in names), [n for n in names if n in text])

    # The distribution: a table, an inline histogram, the image behind its link.
    text = page.open(f"{base}/assets/chunk_size_distribution", until=["over_model_limit", "histogram_image"])
    page.screenshot(out / "chunk_size_distribution.png")
    check.that("distribution page has its description", "Token counts per source" in text, _after(text, "Description")[:90])
    headers = page.eval("""[...document.querySelectorAll('table th')].map(th => th.innerText.trim())""")
    check.that("distribution is drawn as a table", {"source_id", "granularity", "count", "p50", "over_model_limit"} <= set(headers), headers)
    fit = page.eval("""(() => {
        // The innermost table with that column: the metadata table around it holds its cells too.
        const table = [...document.querySelectorAll('table')].find(t => !t.querySelector('table') &&
            [...t.querySelectorAll('th')].some(th => th.innerText.trim() === 'over_model_limit'));
        if (!table) return null;
        const heights = [...table.rows].filter(r => r.querySelector('td')).map(r => r.getBoundingClientRect().height);
        return [Math.round(table.getBoundingClientRect().right), window.innerWidth, Math.round(Math.max(...heights))];
    })()""")
    # A hyphenated source id may wrap to a second line (56 pixels high on this page): the
    # issue was rows of ten.
    check.that("distribution table fits the window, no row over two lines",
               bool(fit) and fit[0] <= fit[1] and fit[2] <= 64, fit and f"right edge {fit[0]} of {fit[1]} px, rows ≤{fit[2]} px")
    rows = page.eval("""[...document.querySelectorAll('table tr')].map(tr => tr.innerText.replace(/\\s+/g, ' ').trim())""")
    verse_row = next((r for r in rows if r.startswith("kjv verse")), None)
    check.that("distribution table has a scripture verse row", verse_row is not None, verse_row)
    histogram = next((r for r in rows if r.startswith("scripture / verse")), None)
    check.that("histogram is shown inline as a table", "≤16 tokens" in headers and histogram is not None, histogram)
    check.that("histogram image is behind [Show Markdown]", "[Show Markdown]" in text, _line(text, "histogram_image"))
    # The image's own link, the last: the detail table before it has one too.
    page.eval("""(() => {
        const links = [...document.querySelectorAll('button, a, [role=button]')].filter(e => e.innerText.trim() === '[Show Markdown]');
        if (links.length) links[links.length - 1].click(); return links.length; })()""")
    image = page.wait(lambda: page.eval("""(() => { const img = document.querySelector('.bp5-dialog img, [role=dialog] img');
        return img && img.complete ? [img.naturalWidth, img.naturalHeight, img.src.slice(0, 22)] : null; })()"""), 20)
    page.screenshot(out / "chunk_size_histogram_image.png")
    check.that("histogram image is drawn in its dialog", bool(image) and image[0] > 100, image)

    # Check pages: a chunk check after the bad entry, and the entry check itself.
    text = page.open(f"{base}/assets/chunks?view=checks&checkDetail=permission_tags", until=["Latest execution"])
    page.screenshot(out / "check_permission_tags.png")
    check.that("permission_tags page says what it checks", "This is a blocking asset check" in text and
               "Every chunk carries a non-empty ACL" in text, _after(text, "About")[:120])
    latest = _after(text, "Evaluation result")
    check.that("permission_tags after the bad entry shows Skipped, not Failed", latest.startswith("Skipped"), latest[:40])
    # Dagster 1.13 cannot execute a partitioned asset's checks on their own: both buttons must be
    # off rather than launch a run without a partition (which fails).
    execute = page.eval("""[...document.querySelectorAll('button')].filter(b => b.innerText.trim().startsWith('Execute'))
        .map(b => [b.innerText.trim(), b.disabled ? 'off' : 'on'])""")
    check.that("no Execute on chunk checks that would launch a failing run",
               bool(execute) and all(state == "off" for _, state in execute), execute)
    text = page.open(f"{base}/assets/raw_texts?view=checks&checkDetail=source_entry", until=["Latest execution"])
    page.screenshot(out / "check_source_entry.png")
    check.that("source_entry shows the bad entry as Failed, naming the field",
               "has no 'acl'" in text and _after(text, "Evaluation result").startswith("Failed") and "field" in text,
               _after(text, "Latest execution")[:160])

    # A source still broken at the second build stays failed and named; the build says in one
    # sentence what it did to the live version.
    text = page.open(f"{base}/assets/search_index?view=checks&checkDetail=every_source_indexed",
                     until=["Latest execution"])
    page.screenshot(out / "check_every_source_indexed.png")
    check.that("every_source_indexed names the still-broken entry after the second build",
               BAD_ENTRY in text and _after(text, "Evaluation result").startswith("Failed"),
               _after(text, "Evaluation result")[:160])
    text = page.open(f"{base}/assets/search_index", until=["live_index"])
    said = _line(text, "live_index") + " " + _after(text, "live_index")[:120]
    check.that("search_index says what the build did to the live version",
               any(word in said for word in ("switched v", "kept v")), said[:160])

    # Runs: the broken source's ingest run is flagged where a team looks first.
    text = page.open(f"{base}/runs", until=["ingest_source"])
    page.screenshot(out / "runs.png")
    check.that("the broken source's ingest run carries lectio/failed_sources in Runs",
               "failed_sources" in text, _line(text, "failed_sources") or _line(text, "ingest_source"))

    # Descriptions where the UI said "No description found" or nothing of how an asset is filled,
    # and each asset's kinds and owner (the catalog filters by both).
    text = page.open(f"{base}/assets/source_inputs", until=["Description"])
    check.that("source_inputs has a description", "No description found" not in text and
               "What each source is ingested from" in text, _after(text, "Description")[:120])
    check.that("source_inputs shows its kind and owner", "python" in text.lower() and "platform" in text,
               _after(text, "Kinds")[:40])
    for name, kind, description in (("training_pairs", "python", "Queries and their passages"),
                                    ("reranker", "pytorch", "A cross-encoder trained"),
                                    ("adapted_embedder", "onnx", "The embedding model fine-tuned")):
        text = page.open(f"{base}/assets/{name}", until=["Description"])
        check.that(f"{name} shows its description, kind and owner",
                   description in text and kind in _after(text, "Kinds").lower()[:40] and "platform" in text,
                   _after(text, "Kinds")[:40])
    text = page.open(f"{base}/assets/live_index", until=["Description"])
    check.that("live_index says lectio migrate fills it", "Filled by lectio migrate" in text, _after(text, "Description")[:160])

    # The nightly schedule: its description names the sources; its preview lists one request per
    # source (by job alone: Dagster's table has no partition column) and each request's tags hold
    # its partition.
    sources = len(check.sources)
    text = page.open(f"{base}/locations/lectio/schedules/nightly_reembed",
                     until=["Preview tick result", "Description"])
    check.that("schedule description names the sources", all(s in text for s in check.sources), _after(text, "Description")[:200])
    page.click_text("Preview tick result")
    # Continue does nothing until the dialog has loaded the tick times to choose from.
    page.wait(lambda: page.eval("""[...document.querySelectorAll('[role=dialog] button')]
        .some(b => / UTC$/.test(b.innerText.trim()))"""), 30)
    text = None
    for _ in range(3):
        page.click_text("Continue")
        if text := page.wait(lambda: page.holding("run requests"), 20):
            break
    text = text or page.text()
    page.screenshot(out / "schedule_preview.png")
    check.that("schedule preview has one request per source", f"{sources} run requests" in text, _line(text, "run requests"))
    page.eval("document.querySelectorAll('[role=dialog] table tbody tr button')[1].click()")
    tags = page.wait(lambda: page.holding("Run configuration", "partition:"), 20) or page.text()
    page.screenshot(out / "schedule_preview_tags.png")
    check.that("a request's tags name its partition", f"partition: {check.sources[1]}" in tags,
               [line for line in tags.splitlines() if line.startswith(("partition", "lectio/"))])

    # A migration to a trained model, launchable as a backfill: the sensor that follows it says how.
    text = page.open(f"{base}/locations/lectio/sensors/index_after_batch", until=["migrate_index", "Description"])
    page.screenshot(out / "index_sensor.png")
    check.that("index_after_batch says a batch tagged lectio/embed_model is gated through migrate_index",
               "lectio/embed_model" in text and "migrate_index" in text, _line(text, "migrate_index"))


class Checks:
    def __init__(self):
        self.results: list[tuple[str, bool]] = []
        self.sources: list[str] = []  # the sources file's ids, in its order

    def that(self, name: str, ok: bool, shown) -> None:
        self.results.append((name, bool(ok)))
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {shown}", flush=True)

    def summary(self) -> int:
        failed = [n for n, ok in self.results if not ok]
        print(f"{len(self.results) - len(failed)}/{len(self.results)} held" + (f"; failed: {', '.join(failed)}" if failed else ""))
        return 1 if failed or not self.results else 0


class Browser:
    """Headless Chromium with one page, over the DevTools protocol."""

    def __init__(self, chromium: str, profile: Path):
        port = _free_port()
        self.process = subprocess.Popen(
            [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--remote-debugging-port={port}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        targets = _wait_for(lambda: json.loads(_get(f"http://127.0.0.1:{port}/json/list")), 60, "Chromium")
        target = next(t for t in targets if t["type"] == "page")
        self.page = Page(target["webSocketDebuggerUrl"])

    def close(self) -> None:
        self.page.close()
        os.killpg(self.process.pid, signal.SIGTERM)
        self.process.wait(30)


class Page:
    def __init__(self, url: str):
        from websockets.sync.client import connect

        self._connection = connect(url, max_size=None)
        self.socket = self._connection.__enter__()
        self.ids = 0
        self.send("Page.enable")

    def send(self, method: str, **params):
        self.ids += 1
        self.socket.send(json.dumps({"id": self.ids, "method": method, "params": params}))
        while True:  # events arrive in between; only the answer to this call matters here
            message = json.loads(self.socket.recv(timeout=60))
            if message.get("id") == self.ids:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def eval(self, expression: str):
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        return result.get("result", {}).get("value")

    def text(self) -> str:
        return self.eval("document.body ? document.body.innerText : ''") or ""

    def open(self, url: str, until: list[str], timeout: float = 60) -> str:
        """Go to `url` and wait until its text holds every string of `until` (the UI loads its data
        after the page itself), then a moment more for the rest of the page's queries."""
        self.send("Page.navigate", url=url)
        text = self.wait(lambda: self.holding(*until), timeout)
        time.sleep(2)
        return self.text() if text else ""

    def holding(self, *strings: str) -> str | None:
        """The page's text when it holds every one of `strings`, else None."""
        text = self.text()
        return text if all(s in text for s in strings) else None

    def wait(self, probe, timeout: float):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if value := probe():
                return value
            time.sleep(0.5)
        return None

    def click_text(self, label: str) -> None:
        clicked = self.eval(f"""(() => {{
            const all = [...document.querySelectorAll('button, a, [role=button]')];
            const el = all.find(e => e.innerText.trim() === {json.dumps(label)});
            if (el) {{ el.click(); return true; }} return false; }})()""")
        if not clicked:
            print(f"     (no {label!r} to click)")

    def screenshot(self, path: Path) -> None:
        path.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", format="png")["data"]))

    def close(self) -> None:
        self._connection.__exit__(None, None, None)


def _sources(folder: Path) -> Path:
    shutil.copytree(PROJECT / "tests" / "fixtures", folder)
    path = folder / "sources.yaml"
    path.write_text(path.read_text() + f"\n  - {{id: {BAD_ENTRY}, kind: document, format: markdown, "
                    "path: staff_guide.md, title: An entry without an acl}\n")
    return path


def _line(text: str, word: str) -> str:
    return next((line.strip() for line in text.splitlines() if word in line), "")[:160]


def _after(text: str, heading: str) -> str:
    """The text following a heading on the page, on one line."""
    rest = text.split(heading, 1)[1] if heading in text else ""
    return " ".join(rest.split())[:400]


def _alert_link(page, base: str, home: Path, out: Path, check: "Checks") -> None:
    """Item 4: an alert sent while `lectio dev --port P` serves links to P. alert_on_failed_checks
    is turned on as in the UI (its first tick watches from then on), the broken entry's ingest is
    launched as the UI launches it, and the alert the daemon's sensor writes to the home's alert
    log (LECTIO_ALERT_LOG's default) is followed in the browser to the run it names."""
    where = _where(base)
    started = _graphql(base, "mutation($s: SensorSelector!) { startSensor(sensorSelector: $s) { __typename } }",
                       {"s": {**where, "sensorName": "alert_on_failed_checks"}})
    check.that("alert_on_failed_checks starts from the UI's mutation", started["startSensor"]["__typename"] == "Sensor",
               started["startSensor"])
    time.sleep(12)  # its first tick (the daemon comes round every 5 s) sets where it watches from
    run_id = _launch_bad_entry(base, where)
    try:
        sent = _wait_for(lambda: _alert_for(home, run_id), 180, "the failed check's alert") if run_id else None
    except TimeoutError:
        sent = None
    link = (sent or {}).get("run_url", "")
    check.that("the alert's link is on the port lectio dev serves", link.startswith(f"{base}/runs/{run_id}"), link)
    text = page.open(link, until=["ingest_source"]) if link else ""
    page.screenshot(out / "alert_link.png")
    check.that("the alert's link opens its run in the UI", "ingest_source" in text and run_id[:8] in text,
               _line(text, run_id[:8]) or _line(text, "ingest_source"))


def _alert_retried(page, base: str, home: Path, env: dict, out: Path, check: "Checks") -> None:
    """Item 6: while lectio's database refuses connections, alert_on_failed_checks's tick says so
    in one line, with no traceback, on the sensor's page, and the next tick once it accepts them
    again sends the alert it held (the cursor stayed). Connections to the `lectio` database are
    refused the way an operator would (ALLOW_CONNECTIONS false, set from the `dagster` database on
    the same server, which the UI and the daemon go on using)."""
    where = _where(base)
    _allow_connections(env, False)
    try:
        launched = _launch_bad_entry(base, where)
        ticks = """query($s: SensorSelector!) { sensorOrError(sensorSelector: $s) { ... on Sensor {
          sensorState { ticks(limit: 3) { status skipReason error { message } } } } } }"""
        selector = {"s": {**where, "sensorName": "alert_on_failed_checks"}}

        def refused():
            found = _graphql(base, ticks, selector)["sensorOrError"]["sensorState"]["ticks"]
            return next((t for t in found if "alerts not sent this tick" in (t.get("skipReason") or "")), None)

        try:
            tick = _wait_for(refused, 150, "a tick that met the refused database")
        except TimeoutError:
            tick = None
    finally:
        _allow_connections(env, True)
    reason = (tick or {}).get("skipReason") or ""
    check.that("a tick that cannot reach the database says why in one line", "\n" not in reason.strip()
               and "not currently accepting connections" in reason, reason[:200])
    page.open(f"{base}/locations/lectio/sensors/alert_on_failed_checks", until=["0 runs requested"])
    text = _tick_reason(page, "alerts not sent this tick")
    page.screenshot(out / "alert_sensor_refused.png")
    check.that("the sensor's page shows that line, and no traceback", "alerts not sent this tick" in text
               and "Traceback" not in text, _line(text, "alerts not sent"))
    try:
        sent = _wait_for(lambda: _alert_for(home, launched), 150, "the held alert") if launched else None
    except TimeoutError:
        sent = None
    check.that("the next tick sends the alert it held", sent is not None, (sent or {}).get("title"))


def _tick_reason(page, words: str) -> str:
    """The page's text once a tick's result, opened from the sensor's tick table (each row's
    "0 runs requested" in turn), shows `words`; "" where none does."""
    rows = page.eval("document.querySelectorAll('tbody tr').length") or 0
    for row in range(rows):
        page.eval(f"""(() => {{
            const cells = document.querySelectorAll('tbody tr')[{row}].querySelectorAll('td');
            const result = [...cells].map(c => c.querySelector('button, a, [role=button]'))
                .find(e => e && e.innerText.trim() === '0 runs requested');
            if (result) result.click(); }})()""")
        if text := page.wait(lambda: page.holding(words), 5):
            return text
        page.send("Input.dispatchKeyEvent", type="keyDown", key="Escape", code="Escape", windowsVirtualKeyCode=27)
        time.sleep(0.5)
    return ""


def _allow_connections(env: dict, allowed: bool) -> None:
    script = ("import sys, psycopg\n"
              "from lectio.index.database import ensure_database, with_database\n"
              "from lectio.settings import load_settings\n"
              "url = with_database(ensure_database(load_settings()).url, 'dagster')\n"
              "with psycopg.connect(url, autocommit=True) as conn:\n"
              "    conn.execute(f'ALTER DATABASE lectio ALLOW_CONNECTIONS {sys.argv[1]}')\n")
    subprocess.run([sys.executable, "-c", script, "true" if allowed else "false"], cwd=PROJECT, env=env, check=True,
                   capture_output=True)


def _where(base: str) -> dict:
    """The code location's selector as the UI's mutations take it."""
    (repository,) = _graphql(base, "{ repositoriesOrError { ... on RepositoryConnection { nodes { name location { name } } } } }")[
        "repositoriesOrError"]["nodes"]
    return {"repositoryLocationName": repository["location"]["name"], "repositoryName": repository["name"]}


def _launch_bad_entry(base: str, where: dict) -> str:
    """The broken entry's ingest, launched as the UI's Materialize launches it; its run id."""
    launched = _graphql(base, LAUNCH, {"p": {"selector": {**where, "jobName": "ingest_source"},
                                            "executionMetadata": {"tags": [{"key": "dagster/partition", "value": BAD_ENTRY}]}}})
    return launched["launchPipelineExecution"].get("run", {}).get("runId", "")


def _alert_for(home: Path, run_id: str) -> dict | None:
    """The alert about `run_id` in the home's alert log (LECTIO_ALERT_LOG's default), if sent."""
    log = home / "alerts.jsonl"
    lines = log.read_text().splitlines() if log.exists() else []
    return next((a for a in map(json.loads, lines) if a.get("run_id") == run_id and a.get("run_url")), None)


LAUNCH = """mutation($p: ExecutionParams!) { launchPipelineExecution(executionParams: $p) {
  __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message } } }"""


def _graphql(base: str, query: str, variables: dict | None = None) -> dict:
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    request = urllib.request.Request(f"{base}/graphql", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["data"]


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.read().decode()


def _wait_for(probe, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if value := probe():
                return value
        except OSError:
            pass
        time.sleep(1)
    raise TimeoutError(f"{what} did not answer within {timeout:.0f}s")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    sys.exit(main())
