"""The HTML fleet report as a person sees it: rendered by Debian's chromium, read back as text from its PDF print."""

import shutil
import subprocess

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils import _report

CHROMIUM = shutil.which("chromium")
PDFTOTEXT = shutil.which("pdftotext")
pytestmark = pytest.mark.skipif(
    not (CHROMIUM and PDFTOTEXT),
    reason="needs chromium and pdftotext (`make setup` installs them) to check what the HTML report shows",
)

HOT = {"severity": "critical", "gpu": 3, "what": "temperature", "value": 91, "threshold": 85}
FLEET = {
    "gpu-hot": {
        "ansible_facts": {
            "gpufleet_gpu": {
                "driver_state": "loaded",
                "driver_version": "570.133.20",
                "cuda_driver_version": "12.8",
                "health_status": "critical",
                "health": [HOT],
                "gpus": [{"name": "NVIDIA A100-SXM4-40GB"}] * 8,
            }
        },
        "gpufleet_stack": {"driver": "570.133.20"},
    },
    "gpu-old": {
        "ansible_facts": {
            "gpufleet_gpu": {
                "driver_state": "loaded",
                "driver_version": "550.54.15",
                "cuda_driver_version": "12.4",
                "health_status": "ok",
                "health": [],
                "gpus": [{"name": "NVIDIA H100 80GB HBM3"}] * 8,
            }
        },
        "gpufleet_stack": {"driver": "570.133.20"},
    },
    "gpu-new": {"gpufleet_stack": {"driver": "570.133.20"}},
}


def shown_text(page, tmp_path):
    html = tmp_path / "fleet-report.html"
    html.write_text(page)
    pdf = tmp_path / "shown.pdf"
    subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--no-pdf-header-footer",
            f"--print-to-pdf={pdf}",
            html.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    out = subprocess.run([PDFTOTEXT, pdf, "-"], check=True, capture_output=True, text=True)
    return " ".join(out.stdout.split())


def test_report_shows_counts_and_the_worst_host_first(tmp_path):
    rows = _report.build_rows(FLEET)
    text = shown_text(_report.render_html(rows, "2026-12-01 08:00 UTC"), tmp_path)
    assert "GPU fleet report" in text
    assert "Hosts: 3 OK: 0 Critical: 1 Warning: 0 Drifted: 2" in text
    # Worst first: the critical host, then the one with no facts yet, then the one that only drifted.
    assert text.index("gpu-hot") < text.index("gpu-new") < text.index("gpu-old")
    assert "critical: GPU 3: temperature = 91 (threshold 85)" in text
    assert "driver 550.54.15 ≠ 570.133.20" in text
    assert "no GPU facts: run playbooks/facts.yml" in text
    assert "8x NVIDIA A100-SXM4-40GB" in text
