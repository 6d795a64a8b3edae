# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Decisions of the package engine (the nvidia_packages module): which exact versions a request means, the apt
pin that makes them the candidates, what one apt transaction installs and removes, and what is held afterwards.

Pure functions over the text `apt-cache madison` and `dpkg-query` print; no AnsibleModule, no I/O.

Why a pin at all: apt resolves every dependency against its candidate (the highest-priority, then newest, version),
so `nvidia-driver-cuda=570.133.20-1` alone fails against a repository that also has 580: its `(= 570.133.20-1)`
dependencies are weighed against the 580 candidates ("Depends: libcuda1 (= 570.133.20-1) but 580.95.05-1 is to be
installed"). NVIDIA's own answer is a pin by *source package* (the nvidia-driver-pinning-<branch> packages:
`Package: src:*nvidia*:any src:cuda-drivers:any src:cuda-compat:any`), which catches every binary of the driver
set, also those outside a name glob such as firmware-nvidia-gsp or libnvidia-ptxjitcompiler1.
"""

from __future__ import annotations

import fnmatch
import re

# --- Debian version order (deb-version(7); the algorithm of dpkg's verrevcmp) -------------------------------------


def split_version(version):
    """(epoch, upstream, revision): "1:2.3-4" -> (1, "2.3", "4"); no revision -> ""."""
    epoch, _sep, rest = version.rpartition(":") if ":" in version else ("0", "", version)
    upstream, _sep, revision = rest.rpartition("-") if "-" in rest else (rest, "", "")
    return int(epoch or 0), upstream, revision


def _order(char):
    if char == "~":
        return -1
    if char.isdigit():
        return 0
    if char.isalpha():
        return ord(char)
    return ord(char) + 256


def _verrevcmp(a, b):
    i = j = 0
    while i < len(a) or j < len(b):
        first_diff = 0
        while (i < len(a) and not a[i].isdigit()) or (j < len(b) and not b[j].isdigit()):
            ac = _order(a[i]) if i < len(a) else 0
            bc = _order(b[j]) if j < len(b) else 0
            if ac != bc:
                return ac - bc
            i, j = i + 1, j + 1
        while i < len(a) and a[i] == "0":
            i += 1
        while j < len(b) and b[j] == "0":
            j += 1
        while i < len(a) and a[i].isdigit() and j < len(b) and b[j].isdigit():
            if not first_diff:
                first_diff = ord(a[i]) - ord(b[j])
            i, j = i + 1, j + 1
        if i < len(a) and a[i].isdigit():
            return 1
        if j < len(b) and b[j].isdigit():
            return -1
        if first_diff:
            return first_diff
    return 0


def compare_versions(a, b):
    """-1, 0 or 1, as `dpkg --compare-versions` orders two Debian versions."""
    ea, ua, ra = split_version(a)
    eb, ub, rb = split_version(b)
    result = (ea > eb) - (ea < eb) or _verrevcmp(ua, ub) or _verrevcmp(ra, rb)
    return (result > 0) - (result < 0)


def newest_first(versions):
    """Unique versions, newest first in Debian order."""
    out = []
    for version in versions:
        if version not in out:
            at = next((k for k, seen in enumerate(out) if compare_versions(version, seen) > 0), len(out))
            out.insert(at, version)
    return out


# --- What apt and dpkg print -------------------------------------------------------------------------------------

# dpkg-query -W -f with this format: one line per package dpkg knows (installed, half-installed, config-files...).
DPKG_FORMAT = "${Package}\t${Version}\t${db:Status-Abbrev}\t${source:Package}\n"


def parse_dpkg(text):
    """{name: {"version", "status", "held", "present", "source"}} from DPKG_FORMAT lines.

    Status-Abbrev is want/state/error ("hi ", "ii ", "iF ", "rc "): held when the wanted selection is h(old);
    present when the state is neither n(ot-installed) nor c(onfig-files) — half-configured and unpacked count,
    because they are on the host and must be held and moved with the rest.
    """
    out = {}
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) < 3 or not fields[0]:
            continue
        name, version, abbrev = fields[0], fields[1], fields[2]
        state = abbrev[1:2]
        out[name] = {
            "version": version,
            "status": abbrev.strip(),
            "held": abbrev[:1] == "h",
            "present": state not in ("", "n", "c"),
            "complete": state == "i" and abbrev[2:3] in ("", " "),
            "source": (fields[3] if len(fields) > 3 and fields[3] else name),
        }
    return out


_MADISON = re.compile(r"^\s*(\S+)\s*\|\s*(\S+)\s*\|\s*(\S+)")


def parse_madison(text):
    """[(package, version, url)] from `apt-cache madison` lines such as
    " nvidia-open | 570.133.20-1 | http://127.0.0.1:8790/compute/cuda/repos/debian12/x86_64  Packages".

    Source-package lines ("... | Sources") are not offers of a binary and are skipped.
    """
    out = []
    for line in text.splitlines():
        found = _MADISON.match(line)
        if found and not line.rstrip().endswith("Sources"):
            out.append(found.groups())
    return out


def offers_by_package(rows, include_urls=(), exclude_urls=()):
    """{package: [versions newest first]} of the rows whose URL contains one of include_urls (all when empty) and
    none of exclude_urls ("/compute/cuda/repos/" names NVIDIA's CUDA repository and every mirror of it)."""
    by_name = {}
    for name, version, url in rows:
        if include_urls and not any(u.rstrip("/") in url for u in include_urls):
            continue
        if any(u.rstrip("/") in url for u in exclude_urls):
            continue
        by_name.setdefault(name, []).append(version)
    return {name: newest_first(versions) for name, versions in by_name.items()}


# --- Requests ------------------------------------------------------------------------------------------------------


def request_kind(request):
    """ "exact-package" for a Debian version with a revision ("570.133.20-1"), else "upstream" (an exact release
    such as "570.133.20", a branch "570" or a series "12.8", matched on dot boundaries)."""
    return "exact-package" if "-" in request or ":" in request else "upstream"


def matches(request, version, revision=""):
    """True when the Debian `version` is what `request` asks for: the same package version, or an upstream equal
    to the request or extending it on a dot boundary, or any version for "*"
    ("570" matches 570.133.20-1, not 5700.1-1; "9.8.0" matches
    9.8.0.87-1). `revision`, when given, is a glob the Debian revision must match ("*+cuda12.8" for NCCL's builds for
    CUDA 12.8, "*+cuda12.*" for cuDNN 8's for CUDA 12)."""
    if revision and not fnmatch.fnmatchcase(split_version(version)[2], revision):
        return False
    if request == "*":
        return True
    if request_kind(request) == "exact-package":
        return version == request
    upstream = split_version(version)[1]
    return upstream == request or upstream.startswith(request + ".")


def choose(request, offered, installed="", keep_installed=True, revision=""):
    """(version, reason) for a request among the offered versions (newest first); ("", reason) when none fits.

    An installed version that fits and is still offered is kept (a branch or series request does not move a host
    when the repository gains a newer build; to move, request the new version). Otherwise the newest that fits.
    """
    fitting = [v for v in offered if matches(request, v, revision)]
    if keep_installed and installed and installed in fitting:
        return installed, f"{installed} is installed and fits {request}: kept"
    if fitting:
        why = "the one" if len(fitting) == 1 else f"the newest of {len(fitting)}"
        return fitting[0], f"{fitting[0]} is {why} offered that fits {request}"
    built = f" built as {revision}" if revision else ""
    return "", f"no offered version fits {request}{built} (offered: {', '.join(offered) or 'none'})"


# --- Package sets --------------------------------------------------------------------------------------------------


def selected(selectors, name, source):
    """True when a selector names the package: a glob of binary names ("nvidia-fabricmanager*"), "src:GLOB" of
    its source package, as apt_preferences(5) writes them ("src:nvidia-graphics-drivers"), or "re:REGEX" searched
    in the binary name (only where nothing is written for apt: what to remove)."""
    for selector in selectors:
        if selector.startswith("re:"):
            if re.search(selector[3:], name):
                return True
        elif selector.startswith("src:"):
            if fnmatch.fnmatchcase(source, selector[4:].split(":")[0]):
                return True
        elif fnmatch.fnmatchcase(name, selector):
            return True
    return False


def members(installed, selectors):
    """Names of the packages present on the host that the selectors name."""
    return sorted(n for n, p in installed.items() if p["present"] and selected(selectors, n, p["source"]))


def plan(
    packages,
    request,
    offers,
    installed,
    *,
    reference=None,
    same_version=True,
    series="",
    keep_installed=True,
    revision="",
    members_of=(),
    remove=(),
):
    """What to install, remove and hold for a package set.

    packages: names to install. request: the version request for `reference` (default the first package).
    offers: {package: versions newest first}. installed: parse_dpkg output.
    same_version: every package at the reference's chosen version (a driver set, cuDNN, NCCL, the Container
    Toolkit), else each package at the newest version of `series` that is offered (CUDA: toolkit 12.8.1, nvcc
    12.8.93), or its installed one when that fits.
    members_of: selectors of the set's parts beyond `packages` (pulled in by dependencies): held, and moved to the
    chosen version with the rest when they are installed and offered at it, so a set never ends half-moved.
    remove: selectors of packages that must go (another flavour or branch); never one of `packages`.

    Returns {"version", "reason", "versions": {pkg: version}, "install": ["pkg=version", ...] (only what differs),
    "remove": [names], "missing": [messages]}.
    """
    reference = reference or packages[0]
    ref_installed = installed.get(reference, {})
    ref_have = ref_installed.get("version", "") if ref_installed.get("present") else ""
    version, reason = choose(request, offers.get(reference, []), ref_have, keep_installed, revision)
    result = {"version": version, "reason": reason, "versions": {}, "install": [], "remove": [], "missing": []}
    if not version:
        result["missing"].append(f"{reference}: {reason}")
        return result
    wanted = list(packages)
    going = set(members(installed, remove)) - set(packages)
    if same_version:
        wanted += [
            n
            for n in members(installed, members_of)
            if n not in wanted and n not in going and version in offers.get(n, [])
        ]
    for name in wanted:
        have = installed.get(name, {})
        have_version = have.get("version", "") if have.get("present") else ""
        if name == reference:
            chosen = version
        elif same_version:
            chosen = version if version in offers.get(name, []) or have_version == version else ""
            if not chosen:
                result["missing"].append(f"{name}: not offered at {version}")
                continue
        else:
            # The exact request where this package has it (the metapackages: cuda-toolkit-12-8 12.8.1-1), else the
            # series (the components: cuda-nvcc-12-8 12.8.93-1).
            chosen, why = choose(request, offers.get(name, []), have_version, keep_installed)
            if not chosen:
                chosen, why = choose(series or request, offers.get(name, []), have_version, keep_installed)
            if not chosen:
                result["missing"].append(f"{name}: {why}")
                continue
        result["versions"][name] = chosen
        if have_version != chosen or not have.get("complete", False):
            result["install"].append(f"{name}={chosen}")
    result["remove"] = sorted(going)
    return result


def to_hold(installed, packages, members_of=()):
    """Names present on the host, of `packages` or named by `members_of`, that are not held yet."""
    names = set(members(installed, members_of)) | {n for n in packages if installed.get(n, {}).get("present")}
    return sorted(n for n in names if not installed[n]["held"])


def incomplete(installed, names):
    """ "name version status" of each of `names` dpkg has but not fully installed (half-configured, unpacked)."""
    return [
        f"{n} {installed[n]['version']} {installed[n]['status']}"
        for n in sorted(names)
        if n in installed and installed[n]["present"] and not installed[n]["complete"]
    ]


PRIORITY = 1001


def pin_text(title, selectors, pin_version, exclude_origins=()):
    """The apt preferences file for a set: its selectors at pin_version with priority 1001 (above every
    repository's 500 and the installed 100, so it is also the candidate for a downgrade; and above the 1000 of
    NVIDIA's nvidia-driver-pinning-* file, which stays in force during the transaction that removes its package: at
    equal priority the newer branch would win), and the same packages
    from each of exclude_origins at -1 (never installed: Debian 13 ships its own nvidia-persistenced 550.163.01-1,
    the same version string as NVIDIA's, which would pull in Debian's driver parts)."""
    package = " ".join(selectors)
    lines = [f"# {title}", "# Managed by gpufleet.stack (nvidia_packages): a change of version is made there.", ""]
    for origin in exclude_origins:
        lines += [f"Package: {package}", f"Pin: release o={origin}", "Pin-Priority: -1", ""]
    lines += [f"Package: {package}", f"Pin: version {pin_version}", f"Pin-Priority: {PRIORITY}"]
    return "\n".join(lines) + "\n"


_APT_ERROR = re.compile(
    r"^E: |Error!|error processing|returned error exit status|prevent configuration|but .* is to be installed|"
    r"Conflicting values set|unmet dependencies|Depends: "
)


def apt_errors(text, limit=12):
    """The lines of apt-get/dpkg output that say what failed, unique, in order."""
    out = []
    for raw in text.splitlines():
        line = raw.strip()
        if _APT_ERROR.search(line) and line not in out:
            out.append(line)
    return out[:limit]


_NAME = re.compile(r"^[a-z0-9][a-z0-9+.-]*$")
_SELECTOR = re.compile(r"^(?!re:)(src:)?[a-z0-9*?\[\]][a-z0-9+.*?\[\]:-]*$")
_REMOVE = re.compile(r"^re:\S+$|" + _SELECTOR.pattern)
_VERSION = re.compile(r"^([0-9][0-9A-Za-z.+~:-]*\*?|\*)$")
_ORIGIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_SUFFIX = re.compile(r"^[0-9A-Za-z.+~*?]*$")
# (parameter, pattern, what it must be): each value ends up in a file apt parses or in argv, so a newline or a
# stray space is refused here rather than written.
_CHECKS = [
    ("name", _NAME, "a package-like name (a-z, 0-9, +, ., -): it names the pin file"),
    ("packages", _NAME, "a Debian package name"),
    ("reference", _NAME, "a Debian package name"),
    ("version", _VERSION, "a version (digits, letters and . + ~ : -; no spaces)"),
    ("series", _VERSION, "a version prefix such as 12.8"),
    ("pin_version", _VERSION, "an apt pin version such as 570.133.20-1 or 12.8.*"),
    ("revision", _SUFFIX, "a glob of Debian revisions, such as *+cuda12.8"),
    ("pin", _SELECTOR, "a package glob or src:<source package>"),
    ("members", _SELECTOR, "a package glob or src:<source package>"),
    ("remove", _REMOVE, "a package glob, src:<source package> or re:<regular expression>"),
    ("exclude_origins", _ORIGIN, "an apt origin (o=) name"),
]


def argument_problem(params):
    """The first argument value that is not of its form, as a message naming it; else None."""
    if not params.get("packages"):
        return "packages is empty: name at least one package to install"
    for key, pattern, form in _CHECKS:
        value = params.get(key)
        for item in value if isinstance(value, list) else [value] * (value is not None):
            if not isinstance(item, str) or not pattern.fullmatch(item) or (not item and key != "revision"):
                return f"{key} has {item!r}, which is not {form}"
            if item.startswith("re:"):
                try:
                    re.compile(item[3:])
                except re.error as err:
                    return f"{key} has {item!r}, which is not a regular expression: {err}"
    return None


# apt's words when another process holds the package manager's lock past DPkg::Lock::Timeout (apt 1.9.11 and later
# name the holder: "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 812 (unattended-upgr)").
LOCK_LINE = re.compile(r"Could not get lock (\S+?)\.? (It is held by process \d+(?: \([^)]*\))?)?")


def lock_holder(output):
    """What holds the lock apt could not get ("/var/lib/dpkg/lock-frontend, held by process 812 (unattended-upgr)"),
    or None when the output says nothing of a lock."""
    found = LOCK_LINE.search(output)
    if not found:
        return None
    holder = found.group(2)
    return f"{found.group(1)}, " + (holder[len("It is ") :] if holder else "held by a process apt did not name")
