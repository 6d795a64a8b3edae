# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The CUDA toolkits a host should have, as the cuda_toolkit role needs them: each toolkit's package set for the
package engine, the update-alternatives links, and which installed toolkits are no longer listed. Pure."""

from __future__ import annotations

import re

SPEC = re.compile(r"^(\d+)\.(\d+)(\.\d+)?\Z")  # \Z: `$` would take "12.8\n" (a YAML block scalar)
# The packages of one X.Y release end in -X-Y: cuda-* (compiler, runtime, tools, the X.Y config-common) and the math
# libraries libcublas-*, libcufft-*, libnpp-*, libnvjitlink-*... (NVIDIA's repository).
PART = r"^(cuda|libcu|libnv|libnpp)[a-z0-9-]*-"
TOOLKIT_PART = re.compile(r"^cuda-.+-(\d+-\d+)$")


def toolkits(versions):
    """[{spec, xy, dash, major}] for each well-formed "X.Y" or "X.Y.Z" (preflight refuses the others)."""
    found = []
    for spec in versions:
        match = SPEC.match(str(spec))
        if match:
            major, minor = match.group(1), match.group(2)
            found.append({"spec": str(spec), "xy": f"{major}.{minor}", "dash": f"{major}-{minor}", "major": major})
    return found


def engine_args(toolkit, stems):
    """nvidia_packages' arguments for one toolkit. Each package of an X.Y release is numbered X.Y.*, so one glob
    pins the chain to its series; the metapackages depend on their parts with >=, so every installed -X-Y part and
    the config-common packages all X.Y share are held with it."""
    dash, major = toolkit["dash"], toolkit["major"]
    return {
        "name": f"cuda-{dash}",
        "version": toolkit["spec"],
        "series": toolkit["xy"],
        "reference": f"cuda-toolkit-{dash}",
        "packages": [f"{stem}-{dash}" for stem in stems],
        "pin": [f"cuda-*-{dash}", f"cuda-toolkit-{dash}-config-common"],
        "pin_version": f"{toolkit['xy']}.*",
        "members": [f"{p}-{dash}" for p in ("cuda-*", "libcu*", "libnv*", "libnpp*")]
        + [f"cuda-toolkit-{dash}-config-common", f"cuda-toolkit-{major}-config-common", "cuda-toolkit-config-common"],
    }


def links(wanted, default_xy, home):
    """{link: path}: cuda -> the default toolkit; cuda-<major> -> the default for its own major, else the first
    listed toolkit of that major."""
    chosen = {"cuda": f"{home}-{default_xy}"}
    for toolkit in [t for t in wanted if t["xy"] == default_xy] + wanted:
        chosen.setdefault(f"cuda-{toolkit['major']}", f"{home}-{toolkit['xy']}")
    return chosen


def installed_names(dpkg_lines, held=False):
    """Names installed (or installed and held) in `dpkg-query -W -f '${Package}|${Version}|${Status}\\n'` lines."""
    names = []
    for line in dpkg_lines:
        fields = line.split("|")
        if len(fields) == 3 and fields[2].endswith(" installed") and (not held or fields[2].startswith("hold ")):
            names.append(fields[0])
    return names


def unlisted(dpkg_lines, wanted):
    """(X-Y of the installed toolkits no longer listed, their installed parts, those of them held)."""
    listed = {t["dash"] for t in wanted}
    names = installed_names(dpkg_lines)
    gone = sorted({m.group(1) for n in names if (m := TOOLKIT_PART.match(n))} - listed)
    if not gone:
        return [], [], []
    part = re.compile(PART + "(" + "|".join(re.escape(d) for d in gone) + ")(-config-common)?$")
    parts = [n for n in names if part.match(n)]
    held = set(installed_names(dpkg_lines, held=True))
    return gone, parts, [n for n in parts if n in held]


def cuda_set(versions, default="", stems=("cuda-toolkit",), home="/usr/local/cuda", dpkg_lines=None):
    """Everything the role decides from cuda_toolkit_versions: see the filter's documentation."""
    versions = [versions] if isinstance(versions, (str, int, float)) else list(versions or [])
    wanted = toolkits(versions)
    match = SPEC.match(str(default)) or (SPEC.match(wanted[0]["spec"]) if wanted else None)
    default_xy = f"{match.group(1)}.{match.group(2)}" if match else str(default)
    gone, parts, held = unlisted(dpkg_lines or [], wanted)
    return {
        "toolkits": wanted,
        "dashes": [t["dash"] for t in wanted],
        "default_xy": default_xy,
        "installs": [engine_args(t, list(stems)) for t in wanted],
        "links": links(wanted, default_xy, home) if wanted else {},
        "unlisted": gone,
        "unlisted_parts": parts,
        "unlisted_held": held,
    }
