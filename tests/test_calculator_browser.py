"""The "Can I run this?" calculator (notebooks/calculator.ipynb) as a web app, in a real browser.

Starts Voilà on 127.0.0.1 (a free port) as a subprocess, opens the page in headless Chromium
through Playwright, waits for the verdict, changes controls (sequence length, model, a pasted
config.json that is not JSON) and checks that the verdict and the per-GPU breakdown follow.
Screenshots go to tests/artifacts/ (created with a .gitignore of its own; MEMLIB_ARTIFACTS
overrides the folder).

Needs: `pip install -e ".[browser]"` (voila + playwright) and a Chromium binary
(`apt-get install chromium`: /usr/bin/chromium; MEMLIB_CHROMIUM overrides the path).
Playwright's own browser download is not used. Without them the test is skipped, with the
reason; with MEMLIB_REQUIRE_BROWSER=1 (set by .ci/run) it fails instead, so CI cannot pass
with the browser test silently skipped.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from browser_support import chromium as _chromium, missing as _missing

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "calculator.ipynb"
# Headless Chromium on a machine with no display and a closed network (as root in CI). Voilà's
# page also asks CDNs for icon fonts and mermaid; where DNS is closed such a lookup can hang and
# hold the page's scripts for minutes, so every host but 127.0.0.1 fails at once (the resolver
# rule) and its requests are aborted (the route in the test). The calculator needs none of them.
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-default-apps",
                 "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
SERVER_START_S = 60    # Voilà listening on its port
PAGE_READY_S = 120    # first verdict on the page (kernel start + notebook execution + widget render)
UPDATE_S = 30          # verdict redrawn after a control changes


@pytest.fixture(scope="module")
def chromium_path() -> str:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _missing("playwright is not installed (pip install -e '.[browser]')")
    try:
        import voila  # noqa: F401
    except ImportError:
        _missing("voila is not installed (pip install -e '.[browser]')")
    path = _chromium()
    if path is None:
        _missing("no Chromium binary (apt-get install chromium, or set MEMLIB_CHROMIUM)")
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen) -> None:
    """Stop Voilà and everything it started (its kernels run in sessions of their own)."""
    try:
        import psutil  # ipykernel's dependency: present wherever voila is
        children = psutil.Process(proc.pid).children(recursive=True)
    except Exception:  # noqa: BLE001: already gone, or no psutil
        children = []
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)  # Voilà shuts its kernels down on SIGTERM
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    for child in children:
        try:
            child.kill()
        except Exception:  # noqa: BLE001: exited already
            pass


@pytest.fixture
def voila_url(chromium_path, tmp_path):
    port = _free_port()
    log = tmp_path / "voila.log"
    cmd = [sys.executable, "-m", "voila", str(NOTEBOOK.relative_to(ROOT)), "--no-browser", f"--port={port}",
           "--Voila.ip=127.0.0.1", "--ServerApp.port_retries=0"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"voila exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"voila did not listen on port {port} within {SERVER_START_S} s:\n"
                                f"{log.read_text(errors='replace')[-3000:]}")
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/"
    finally:
        _stop(proc)
        # shown by pytest when the test fails
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:])
        print(f"voila log ({log}), last lines:\n{tail}")


def _artifacts() -> Path:
    path = Path(os.environ.get("MEMLIB_ARTIFACTS", ROOT / "tests" / "artifacts"))
    path.mkdir(parents=True, exist_ok=True)
    ignore = path / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# screenshots written by the browser tests\n*\n", encoding="utf-8")
    return path


def test_calculator_in_browser(voila_url, chromium_path):
    from playwright.sync_api import expect, sync_playwright

    shots = _artifacts()
    t0 = time.monotonic()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS, timeout=60_000)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 1300})
            page.route("**/*", lambda route: route.continue_() if urlsplit(route.request.url).hostname
                       == "127.0.0.1" else route.abort())
            page.set_default_timeout(UPDATE_S * 1000)
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: print(f"browser console {m.type}: {m.text[:300]}")
                    if m.type in ("error", "warning") else None)
            # "commit": Voilà streams the page while the kernel runs the notebook, so "load" can come late
            page.goto(voila_url, wait_until="commit", timeout=PAGE_READY_S * 1000)

            verdict = page.locator(".memlib-verdict [data-verdict]")
            breakdown = page.locator(".memlib-breakdown")
            verdict.wait_for(state="visible", timeout=PAGE_READY_S * 1000)
            ready_s = time.monotonic() - t0

            # 1. the defaults: llama-7b, LoRA, one A100 80GB, 2,048 tokens
            expect(verdict).to_have_attribute("data-verdict", "fits")
            first_verdict = verdict.inner_text()
            first_bar = breakdown.inner_text()
            assert "Yes, it fits" in first_verdict and "llama-7b" in first_verdict
            assert "GiB per GPU" in first_verdict
            expect(breakdown).to_contain_text("parameters")
            expect(breakdown).to_contain_text("dashed: a100-80gb")
            expect(page.locator(".memlib-plans table")).to_be_visible()
            expect(page.locator(".memlib-download a[download='deepspeed_config.json']")).to_have_count(1)
            page.screenshot(path=str(shots / "calculator.png"), full_page=True)

            # 2. a longer sequence: more activations, so the verdict's figures and the bar change
            page.locator(".memlib-seq-len select").select_option(label="8,192")
            expect(verdict).not_to_have_text(first_verdict)
            expect(breakdown).not_to_have_text(first_bar)  # its own widget: redrawn just after the verdict
            longer_verdict = verdict.inner_text()
            assert "llama-7b" in longer_verdict

            # 3. a 70B model on the same single GPU does not fit, whatever the layout
            bar_before = breakdown.inner_text()
            page.locator(".memlib-model select").select_option(label="llama-2-70b")
            expect(verdict).to_have_attribute("data-verdict", "no")
            expect(verdict).to_contain_text("No, it does not fit")
            expect(verdict).to_contain_text("llama-2-70b")
            expect(breakdown).not_to_have_text(bar_before)
            page.screenshot(path=str(shots / "calculator-no-fit.png"), full_page=True)

            # 4. serving the same model: weights instead of training precision, serving limits
            page.locator(".memlib-task select").select_option(label="serving")
            expect(page.locator(".memlib-plans")).to_contain_text("Serving limits")
            expect(page.locator(".memlib-precision")).to_contain_text("weights")
            page.locator(".memlib-count select").select_option(label="4")
            expect(verdict).to_contain_text("serving on 4")
            expect(breakdown).to_contain_text("kv cache")
            page.screenshot(path=str(shots / "calculator-serving.png"), full_page=True)

            # 5. a pasted config.json that is not JSON: a message, not a traceback
            page.get_by_role("button", name="paste config.json").click()
            expect(verdict).to_contain_text("my-llama-1b")  # the example config in the text box
            box = page.locator(".memlib-config textarea")
            box.fill('{"model_type": "llama", "hidden_size": 4096,')
            box.blur()
            expect(verdict).to_have_attribute("data-verdict", "error")
            expect(verdict).to_contain_text("not valid JSON")
            expect(breakdown).to_have_text("")
            body = page.locator("body").inner_text()
            assert "Traceback" not in body and "There was an error when executing" not in body
            page.screenshot(path=str(shots / "calculator-bad-config.png"), full_page=True)
            assert not errors, f"JavaScript errors on the page: {errors}"
        finally:
            browser.close()
    print(f"page ready in {ready_s:.1f} s, whole test {time.monotonic() - t0:.1f} s; "
          f"screenshots: {shots / 'calculator.png'} (+ -no-fit, -serving, -bad-config)")
