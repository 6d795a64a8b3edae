"""import-smi-xml on real nvidia-smi dumps that users published (sandbox/nvml-sim/samples/real, sources in its
SOURCES.md): both forms (`-q -x` from R375 to R595, DTD v8 to v13, and the plain-text `-q`), every value form
nvidia-smi prints for "no value", and the result read back through pynvml from the simulator. Each check reads the
dump independently of the importer (ElementTree for XML, regular expressions for text)."""

import json
import re
import subprocess
import xml.etree.ElementTree as ET

import pytest

from .conftest import SIM, run_probe

REAL = SIM / "samples" / "real"
XML_DUMPS = sorted(REAL.glob("*.xml"))
TEXT_DUMPS = sorted(REAL.glob("*.txt"))
# What nvidia-smi prints where it has no value, across drivers and both forms.
NO_VALUE = ["N/A", "[N/A]", "Not Found", "[Not Found]", "Not Supported", "[Not Supported]", "Unknown Error",
            "[Unknown Error]", "Insufficient Permissions", "GPU requires reset"]  # fmt: skip


def import_dump(path, tmp_path, *extra):
    out = tmp_path / f"{path.stem}.json"
    proc = subprocess.run(
        [str(SIM / "import-smi-xml"), str(path), "-o", str(out), *extra], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text())


def strings(value):
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return [value] if isinstance(value, str) else []


def known(value):
    return None if value is None or value.strip() == "N/A" else value.strip()


def cuda_int(version):
    major, minor = version.split(".")[:2]
    return int(major) * 1000 + int(minor) * 10


def test_the_real_dumps_span_the_generations():
    doctypes = {re.search(r"nvsmi_device_v(\d+)", p.read_text()[:300]) for p in XML_DUMPS}
    versions = {int(m.group(1)) for m in doctypes if m}
    assert {8, 9, 11, 12, 13} <= versions and None in doctypes  # R418's dumps name no DTD
    drivers = {int(ET.parse(p).getroot().findtext("driver_version").split(".")[0]) for p in XML_DUMPS}
    assert min(drivers) <= 418 and max(drivers) >= 590
    assert len(TEXT_DUMPS) >= 3


@pytest.mark.parametrize("dump", XML_DUMPS, ids=[p.stem for p in XML_DUMPS])
def test_an_xml_dump_imports_as_nvidia_smi_read_it(dump, tmp_path):
    root = ET.parse(dump).getroot()
    profile = import_dump(dump, tmp_path)
    assert profile["driver_version"] == root.findtext("driver_version").strip()
    cuda = known(root.findtext("cuda_version"))
    assert profile.get("cuda_driver_version") == (cuda_int(cuda) if cuda else None)
    assert len(profile["gpus"]) == len(root.findall("gpu"))
    for xml, gpu in zip(root.findall("gpu"), profile["gpus"], strict=True):
        assert gpu.get("uuid") == known(xml.findtext("uuid"))
        assert gpu["name"] == known(xml.findtext("product_name"))
        assert gpu["pci"]["bus_id"] == xml.findtext("pci/pci_bus_id").strip() == xml.get("id")
        total = known(xml.findtext("fb_memory_usage/total"))
        assert gpu["memory"].get("total_mib") == (int(total.split()[0]) if total else None)
    assert not set(strings(profile)) & set(NO_VALUE), "an unavailable value reached the profile as text"


@pytest.mark.parametrize("dump", TEXT_DUMPS, ids=[p.stem for p in TEXT_DUMPS])
def test_a_text_dump_imports_as_nvidia_smi_printed_it(dump, tmp_path):
    text = dump.read_text()
    profile = import_dump(dump, tmp_path)

    def field(label):
        return re.findall(rf"^ *{re.escape(label)} +: (.*?) *$", text, re.M)

    assert profile["driver_version"] == field("Driver Version")[0]
    cuda = field("CUDA Version")  # printed since R410
    assert profile.get("cuda_driver_version") == (cuda_int(cuda[0]) if cuda else None)
    assert len(profile["gpus"]) == int(field("Attached GPUs")[0]) == len(re.findall(r"^GPU [0-9A-F:.]+$", text, re.M))
    assert [g["uuid"] for g in profile["gpus"]] == field("GPU UUID")
    assert [g["name"] for g in profile["gpus"]] == field("Product Name")
    assert [g["pci"]["bus_id"] for g in profile["gpus"]] == field("Bus Id")
    # FB Memory Usage is the first "Total" under each GPU (BAR1 and Conf Compute memory follow it).
    totals = [re.search(r"FB Memory Usage\n +Total +: (\d+) MiB", section) for section in re.split(r"\nGPU ", text)[1:]]
    assert [g["memory"]["total_mib"] for g in profile["gpus"]] == [int(m.group(1)) for m in totals]
    assert not set(strings(profile)) & set(NO_VALUE)


def with_no_value_as(path, form, tmp_path):
    """The dump with every N/A printed as `form` instead, as other drivers and other cards print it."""
    text = path.read_text()
    if path.suffix == ".xml":
        changed = text.replace(">N/A<", f">{form}<")
    else:
        changed = re.sub(r"(?m)^( *\S.*? +: )N/A *$", lambda m: m.group(1) + form, text)
    assert changed != text
    out = tmp_path / f"{path.stem}-{re.sub(r'[^a-z]+', '-', form.lower()).strip('-')}{path.suffix}"
    out.write_text(changed)
    return out


@pytest.mark.parametrize("form", NO_VALUE[1:])
@pytest.mark.parametrize("dump", ["rtx-4090-r535-x.xml", "h100-80gb-hbm3-8gpu-r535-q.txt"])
def test_every_form_of_no_value_reads_as_n_a(dump, form, tmp_path):
    original = import_dump(REAL / dump, tmp_path, "--name", "same")
    assert import_dump(with_no_value_as(REAL / dump, form, tmp_path), tmp_path, "--name", "same") == original


@pytest.mark.parametrize("form", ["Not Found", "N/A", "[Unknown Error]"])
def test_a_host_without_cuda_reports_no_cuda_version(form, tmp_path):
    """nvidia-smi prints "CUDA Version : Not Found" where libcuda is missing (a container without the driver's user
    space): the profile then has no CUDA version, and the simulator answers NOT_SUPPORTED, instead of a crash."""
    dump = REAL / "rtx-3060-r570-x.xml"
    root = ET.parse(dump).getroot()
    root.find("cuda_version").text = form
    changed = tmp_path / "no-cuda.xml"
    ET.ElementTree(root).write(changed)
    profile = import_dump(changed, tmp_path)
    assert "cuda_driver_version" not in profile and "nvml_version" not in profile
    assert profile["driver_version"] == "570.124.04"


def test_architecture_and_compute_capability_from_the_dump_or_the_model(tmp_path):
    got = {p.stem: import_dump(p, tmp_path)["gpus"][0] for p in XML_DUMPS}
    got = {stem: (g.get("architecture"), g.get("cuda_compute_capability")) for stem, g in got.items()}
    assert got["rtx-pro-6000-blackwell-maxq-r590-x"] == ("BLACKWELL", [12, 0])
    assert got["tesla-p100-pcie-16gb-r510-x"] == ("PASCAL", [6, 0])
    assert got["a100-sxm4-40gb-mig-r510-x"] == ("AMPERE", [8, 0])
    assert got["rtx-3060-r570-x"] == ("AMPERE", [8, 6])
    assert got["quadro-p400-r418-x"] == ("PASCAL", [6, 1])  # R418 prints no architecture: from the model
    assert got["tesla-m10-4gpu-r390-x"] == ("MAXWELL", [5, 0])


def test_the_simulator_answers_what_the_real_card_reported(libdir, tmp_path):
    """Two real dumps, one per form, through import -> simulator -> pynvml."""
    for dump in (REAL / "rtx-a5000-2gpu-r590-x.xml", REAL / "h100-80gb-hbm3-8gpu-r535-q.txt"):
        profile = import_dump(dump, tmp_path)
        out = run_probe(libdir, tmp_path / f"{dump.stem}.json")
        assert out["driver_version"] == profile["driver_version"]
        assert out["cuda_driver_version"] == profile["cuda_driver_version"]
        assert out["count"] == len(profile["gpus"])
        for want, got in zip(profile["gpus"], out["gpus"], strict=True):
            assert (got["name"], got["uuid"], got["pci"]["busId"]) == (
                want["name"],
                want["uuid"],
                want["pci"]["bus_id"],
            )
            assert got["memory_v2"]["total"] == want["memory"]["total_mib"] << 20


def test_r610_reads_the_kmd_and_cuda_umd_versions(tmp_path):
    """R610 keeps "Driver Version" and "CUDA Version" with a deprecation suffix on the value and adds "KMD Version" and
    "CUDA UMD Version" (columns wider than before); `-q -d TEMPERATURE` prints only the temperatures."""
    profile = import_dump(REAL / "excerpts" / "unknown-2gpu-r610-q-d-temperature-excerpt.txt", tmp_path)
    assert (profile["driver_version"], profile["cuda_driver_version"]) == ("610.57.04", 13030)
    assert profile["nvml_version"] == "13.610.57.04"
    hot, quiet = (g["temperature"] for g in profile["gpus"])
    assert hot == {"gpu": 79, "shutdown": 103, "slowdown": 100, "max_operating": 98}
    assert quiet == {"gpu": 29}  # its thresholds are N/A: the simulator answers NOT_SUPPORTED


def test_lines_under_a_value_line_are_its_siblings(tmp_path):
    """8xH100 (R535): "HW Slowdown : Active" with "HW Power Brake Slowdown : Active" printed under it, as the XML
    has them side by side; a process's Type, Name and memory printed under its Process ID."""
    h100 = import_dump(REAL / "h100-80gb-hbm3-8gpu-r535-q.txt", tmp_path)["gpus"][0]
    assert h100["clocks_event_reasons"] == ["hw_slowdown", "hw_power_brake_slowdown"]
    rtx = REAL / "rtx-4090-8gpu-r535-q.txt"
    want = [
        [(int(pid), name, int(mib)) for pid, name, mib in PROCESS.findall(section)]
        for section in re.split(r"\nGPU ", rtx.read_text())[1:]
    ]
    got = [
        [(p["pid"], p["name"], p["used_memory_mib"]) for p in g.get("processes", [])]
        for g in import_dump(rtx, tmp_path)["gpus"]
    ]
    assert got == want and sum(map(len, got)) == 7


PROCESS = re.compile(r"Process ID +: (\d+)\n +Type +: C\n +Name +: (.*)\n +Used GPU Memory +: (\d+) MiB")


def test_processes_without_instance_ids_are_told_apart():
    """R384 prints no GPU/compute instance ids: a process starts at each Process ID line."""
    from importlib.machinery import SourceFileLoader
    from importlib.util import module_from_spec, spec_from_loader

    loader = SourceFileLoader("import_smi", str(SIM / "import-smi-xml"))
    importer = module_from_spec(spec_from_loader("import_smi", loader))
    loader.exec_module(importer)
    root = importer.text_tree((REAL / "gtx-1050-ti-r384-q.txt").read_text())
    rows = [(p.findtext("pid"), p.findtext("type"), p.findtext("process_name")) for p in root.iter("process_info")]
    assert rows == [("970", "G", "/usr/lib/xorg/Xorg"), ("1398", "G", "compiz")]


def test_a_vgpu_host_has_no_cuda_version(tmp_path):
    """R580 on a vGPU host prints "CUDA Version : Not Found" (and a PCI domain other than 0)."""
    profile = import_dump(REAL / "excerpts" / "rtx-pro-6000-blackwell-server-vgpuhost-r580-q-excerpt.txt", tmp_path)
    assert profile["driver_version"] == "580.105.06" and "cuda_driver_version" not in profile
    (gpu,) = profile["gpus"]
    assert (gpu["architecture"], gpu["cuda_compute_capability"]) == ("BLACKWELL", [12, 0])
    assert [d["bus_id"] for d in profile["host"]["pci_devices"]] == ["0001:c8:00.0"]
    assert gpu["memory"] == {"total_mib": 97887, "reserved_mib": 2288, "used_mib": 5952}


def test_pcie_link_from_the_text_form(tmp_path):
    """`GPU Link Info` in the text is `pci_gpu_link_info` in the XML: the link's generation and width come through."""
    pci = import_dump(REAL / "h100-80gb-hbm3-8gpu-r535-q.txt", tmp_path)["gpus"][0]["pci"]
    assert (pci["gpu_link_gen_max"], pci["link_gen_max"], pci["link_width_max"]) == (5, 5, 16)


def test_the_importer_and_the_matrix_agree_on_compute_capability(tmp_path):
    """The importer's model tables and data/compat_matrix.yml's gpu_model rows say the same for every real card."""
    import yaml
    from ansible_collections.gpufleet.stack.plugins.module_utils._compat import matrix as mx

    matrix = mx.build(yaml.safe_load((SIM.parents[1] / "data" / "compat_matrix.yml").read_text()))
    compared = 0
    for dump in XML_DUMPS + TEXT_DUMPS:
        for gpu in import_dump(dump, tmp_path)["gpus"]:
            cc = gpu.get("cuda_compute_capability")
            assert mx.gpu_model_cc(matrix, gpu["name"])[0] == (f"{cc[0]}.{cc[1]}" if cc else None), gpu["name"]
            compared += bool(cc)
    assert compared >= 30  # GPUs in 20 dumps: 8xH100, 8xRTX 4090, 4xM10 ...


# Shipped profile -> a real dump of the same card. Board-specific values (power limits other than the default, which
# vary between partner boards, the host's PCIe generation) are not compared.
SAME_CARD = {
    "h100-sxm5-80gb-x8": "h100-80gb-hbm3-8gpu-r535-q.txt",
    "a100-sxm4-40gb-x8-nvswitch": "a100-sxm4-40gb-mig-r510-x.xml",
    "t4-x1": "tesla-t4-r515-x.xml",
    "rtx-4090-x1": "rtx-4090-r535-x.xml",
}


@pytest.mark.parametrize(("profile", "dump"), SAME_CARD.items())
def test_shipped_profiles_are_what_the_real_card_reports(profile, dump, tmp_path):
    def card(gpu):
        pci, power = gpu["pci"], gpu.get("power") or {}
        return {
            "name": gpu["name"],
            "pci_device_id": pci["device_id"].upper(),
            "memory_total_mib": gpu["memory"]["total_mib"],
            "architecture": gpu["architecture"],
            "compute_capability": gpu["cuda_compute_capability"],
            "default_power_limit_w": power.get("default_limit_w"),
            "max_clocks": gpu.get("max_clocks"),
            "pcie_gen_max": pci.get("gpu_link_gen_max") or pci.get("link_gen_max"),
            "pcie_width_max": pci.get("link_width_max"),
        }

    shipped = json.loads((SIM / "profiles" / f"{profile}.json").read_text())["gpus"][0]
    assert card(shipped) == card(import_dump(REAL / dump, tmp_path)["gpus"][0])
