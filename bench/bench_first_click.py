"""The default Compare sweep as a new user meets it: a fresh server, a real browser, the first click.

Run: .venv/bin/python bench/bench_first_click.py [--servers 2] [--settle 5]

For each of ``--servers`` fresh ``streamlit run app.py`` servers (fresh DPLENS_HOME, so no cache from an
earlier run): open the app in Debian's Chromium, wait until the server is quiet (its start-up work, the
workers' warm-up included, done; the time is printed) and ``--settle`` more seconds (a user reading the page),
go to Compare, press **Run comparison** with the page's defaults and time the click until the first chart is drawn
(the live chart of the mechanisms finished so far, or the results' frontier) and until the results are complete
("Inspect one release" shown and the script idle). Then add one trial per point and press again: only the new trial
is drawn. Printed: wall seconds per click and the server's CPU seconds (its process and its workers, psutil) during
the click. Target: the first click's chart ≤ 2.5 s wall on 2 idle cores (the Compare worker pool is started with the
server). Nothing waits on a fixed timeout (every wait is for what the page shows), and the browser runs at the
server's niceness: it shares this machine's 2 cores as equals (its CPU is printed).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from results import Recorder, record, tree_cpu_seconds, wait_quiet  # noqa: E402

from tests.e2e._actions import wait_idle  # noqa: E402
from tests.e2e.conftest import CHROMIUM, open_app, start_server  # noqa: E402

TARGET_S = 2.5


def own_cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def browser_cpu_seconds(server: psutil.Process) -> float:
    """CPU of the browser (Chromium and Playwright's driver, children of this process like the server): on
    this machine it shares the 2 cores with the server; a user's browser runs on the user's own machine."""
    me = psutil.Process()
    return tree_cpu_seconds(me) - own_cpu_seconds(me) - tree_cpu_seconds(server)


# A chart drawn after the click: the live chart of the finished mechanisms (its caption starts "Drawn so far") or the
# results' frontier (captioned "Lines: mean over trials"); the analytic preview before the click has neither caption.
DRAWN = "text=/^(Drawn so far|Lines: mean over trials)/"


def timed_click(page, server: psutil.Process, button: str) -> tuple[float, float, float, float, float]:
    """Wall seconds from the click to the first drawn chart and to the complete results, CPU of the server and its
    workers, CPU of the server process alone (the rest is the workers'), CPU of the browser meanwhile. No fixed
    timeout: each wait lasts until the page shows what it waits for (timeout 0)."""
    cpu, own, browser = tree_cpu_seconds(server), own_cpu_seconds(server), browser_cpu_seconds(server)
    wall = time.perf_counter()
    page.get_by_role("button", name=button).click()
    page.locator(DRAWN).first.wait_for(timeout=0)
    drawn = time.perf_counter() - wall
    page.get_by_text("Inspect one release").first.wait_for(timeout=0)
    wait_idle(page, timeout=0)
    wall = time.perf_counter() - wall
    return (drawn, wall, tree_cpu_seconds(server) - cpu, own_cpu_seconds(server) - own,
            browser_cpu_seconds(server) - browser)


def one_server(browser, settle: float, index: int) -> None:
    proc, url = start_server()
    try:
        server = psutil.Process(proc.pid)
        context, page = open_app(browser, url, timeout=0)  # no fixed timeout on the page's waits
        quiet = wait_quiet(server)
        print(f"server {index}: quiet {quiet:.1f} s after the first page ({tree_cpu_seconds(server):.1f} s CPU so far)")
        time.sleep(settle)
        page.get_by_role("link", name="Compare", exact=True).first.click()
        wait_idle(page, timeout=0)
        page.get_by_text("Meanwhile, the analytic expectation").first.wait_for(timeout=0)
        drawn, wall, cpu, own, browser = timed_click(page, server, "Run comparison")
        print(f"server {index}: first click  chart {drawn:6.2f} s, complete {wall:6.2f} s wall  {cpu:6.2f} s CPU "
              f"(server {own:.2f} s + workers), browser {browser:.2f} s CPU  target {TARGET_S} s to the chart: "
              f"{'met' if drawn <= TARGET_S else 'MISSED'}")
        record(name=f"server {index}: first click", chart_s=drawn, wall_s=wall, cpu_s=cpu, server_cpu_s=own,
               browser_cpu_s=browser, target_s=TARGET_S, met=drawn <= TARGET_S)
        trials = page.get_by_role("slider", name="Trials per point")  # one more trial: only it is drawn
        trials.focus()
        trials.press("ArrowRight")
        drawn, wall, cpu, own, browser = timed_click(page, server, "Run comparison")
        print(f"server {index}: one more trial chart {drawn:6.2f} s, complete {wall:6.2f} s wall  {cpu:6.2f} s CPU "
              f"(server {own:.2f} s), browser {browser:.2f} s CPU")
        record(name=f"server {index}: one more trial", chart_s=drawn, wall_s=wall, cpu_s=cpu)
        context.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=2)
    parser.add_argument("--settle", type=float, default=2.0, help="seconds between the app's first page and Compare")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"skipped: {CHROMIUM} absent")
        return
    from playwright.sync_api import sync_playwright

    with Recorder("bench_first_click", args), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        for index in range(args.servers):
            one_server(browser, args.settle, index)
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1:])
