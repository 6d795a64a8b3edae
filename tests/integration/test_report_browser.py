"""The HTML fleet report as a person sees it: rendered by Debian's chromium, read back as text from its PDF print."""

import shutil
import subprocess

import pytest
from ansible_collections.gpufleet.stack.plugins.module_utils._controller import report
from ansible_collections.gpufleet.stack.plugins.module_utils._controller import report_render as render

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
                "gpus": [
                    {
                        "index": i,
                        "name": "NVIDIA A100-SXM4-40GB",
                        "memory_total_mib": 40960,
                        "temperature": {"current_c": 91 if i == 3 else 40, "slowdown_c": 89},
                    }
                    for i in range(8)
                ],
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


def shown_text(page, tmp_path, fragment=""):
    """What chromium shows of the page (its scripts run first), as the text of its PDF print."""
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
            html.as_uri() + fragment,
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    out = subprocess.run([PDFTOTEXT, pdf, "-"], check=True, capture_output=True, text=True)
    return " ".join(out.stdout.split())


def test_report_shows_counts_and_the_worst_host_first(tmp_path):
    rows = report.build_rows(FLEET)
    text = shown_text(render.render_html(rows, "2026-12-01 08:00 UTC"), tmp_path)
    assert "GPU fleet report" in text
    assert "Hosts: 3 OK: 0 Critical: 1 Warning: 0 Drifted: 2" in text
    # Worst first: the critical host, then the one with no facts yet, then the one that only drifted.
    assert text.index("gpu-hot") < text.index("gpu-new") < text.index("gpu-old")
    assert "critical: GPU 3: temperature = 91 (threshold 85)" in text
    assert "driver 550.54.15 ≠ 570.133.20" in text
    assert "no GPU facts: run playbooks/facts.yml" in text
    assert "8x NVIDIA A100-SXM4-40GB" in text
    # The fleet by model and driver, and each host's GPUs: the hot one at 91 °C against its 89 °C slowdown.
    # (the three summary tables stand side by side; the PDF's text reads them row by row across)
    assert (
        "By GPU model By driver By kind of drift Model Hosts GPUs Driver Hosts Drift Hosts NVIDIA A100-SXM4-40GB 1 8 "
        "550.54.15 1 driver 1 NVIDIA H100 80GB HBM3 1 8 570.133.20 1 no facts 1"
    ) in text
    assert "3 NVIDIA A100-SXM4-40GB 91 °C / 89 40960 MiB" in text


def test_filters_in_the_page_need_no_server(tmp_path):
    """The filters live in the URL's fragment, so a filtered view is a link; the page's script applies it."""
    page = render.render_html(report.build_rows(FLEET), "2026-12-01 08:00 UTC")
    critical = shown_text(page, tmp_path, "#health=critical")
    assert "gpu-hot" in critical and "gpu-old" not in critical and "gpu-new" not in critical
    drifted = shown_text(page, tmp_path, "#drift=driver")
    assert "gpu-old" in drifted and "gpu-hot" not in drifted
    found = shown_text(page, tmp_path, "#q=h100")
    assert "gpu-old" in found and "gpu-hot" not in found
