# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check one value against a spec of data/inventory_schema.yml. Pure functions.

check(spec, value, where, formats) gives a list of messages, each "<where> is <value>: <what is wrong>; <fix>",
where `where` is the variable as the user wrote it (gpufleet_stack.cuda[1]). Values are shown with any password of
a URL replaced by ***, and YAML numbers are named as such: cuda: 12.10 reaches Ansible as the number 12.1.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import posixpath
import re
from urllib.parse import urlsplit

CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# Everything up to the last "@" of the URL's token: an unencoded "/" or "@" in a password must not end the match.
USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)(\S*)@")
TRUE_WORDS = {"true", "yes", "on", "1"}
BOOL_WORDS = TRUE_WORDS | {"false", "no", "off", "0"}
MAX_SHOWN = 120

# --- where a path the collection writes (writes: file | dir | mount) must never point, and why -------------------
# Kernel and runtime filesystems: nothing written there is a file.
KERNEL_TREES = ("/proc", "/sys", "/dev", "/run")
# The package manager's own trees (/usr/local is the administrator's).
PACKAGE_TREES = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/boot",
    "/var/lib/dpkg",
    "/var/lib/apt",
    "/var/cache/apt",
)
# Directories whose whole content is other programs' (a report, a state directory or a mount there replaces or
# hides it): refused as the path itself, fine as a parent (/var/lib/gpufleet).
SHARED_ROOTS = (
    "/",
    "/etc",
    "/var",
    "/var/lib",
    "/var/log",
    "/var/cache",
    "/var/tmp",
    "/var/spool",
    "/home",
    "/root",
    "/tmp",
    "/opt",
    "/srv",
    "/mnt",
    "/media",
    "/usr/local",
)
# Configuration that runs code or grants access: a file written here is a privilege a value should not grant.
TRUSTED_CONFIG = (
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/pam.d",
    "/etc/security",
    "/etc/ssh",
    "/etc/apt",
    "/etc/cron.d",
    "/etc/cron.hourly",
    "/etc/cron.daily",
    "/etc/cron.weekly",
    "/etc/cron.monthly",
    "/etc/crontab",
    "/etc/profile",
    "/etc/profile.d",
    "/etc/environment",
    "/etc/ld.so.preload",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/systemd",
    "/etc/init.d",
    "/etc/modprobe.d",
    "/etc/modules-load.d",
    "/etc/udev",
    "/etc/sysctl.d",
    "/etc/default",
    "/etc/passwd",
    "/etc/shadow",
    "/etc/group",
    "/etc/gshadow",
    "/etc/fstab",
    "/etc/hosts",
    "/etc/resolv.conf",
    "/etc/hostname",
)
# What a shell, fstab, a unit file or apt's one-line sources would read as something other than a path's letters.
PATH_UNSAFE = re.compile(r"""[\s$`'"\\;&|<>*?!(){}\[\]#]""")
# A repository or index URL: RFC 3986's characters less those a shell reads (quotes, $, `, parentheses, ;, &, !, *)
# and a well-formed %XX; a query (key URLs with a token) may also hold & and =.
URL_PATH = re.compile(r"(?:[A-Za-z0-9._~:@/+,=-]|%[0-9A-Fa-f]{2})*")
URL_QUERY = re.compile(r"(?:[A-Za-z0-9._~:@/+,=&-]|%[0-9A-Fa-f]{2})*")
DNS_NAME = re.compile(
    r"(?=.{1,253}\.?$)([A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?"
)
TIME_UNITS = {
    "us": 1e-6,
    "ms": 1e-3,
    "s": 1,
    "sec": 1,
    "m": 60,
    "min": 60,
    "h": 3600,
    "hr": 3600,
    "d": 86400,
    "w": 604800,
}


def under(path, trees):
    return any(path == tree or path.startswith(tree.rstrip("/") + "/") for tree in trees)


def harm(path, writes):
    """Why writing `path` (a normalised absolute path) as a file, a directory or a mount point would harm the host,
    or None."""
    if under(path, KERNEL_TREES):
        return "it is in a kernel or runtime filesystem (/proc, /sys, /dev, /run), where nothing written is kept"
    if under(path, PACKAGE_TREES) and not under(path, ("/usr/local",)):
        return "it is in the package manager's own tree, which apt owns and replaces"
    if path in SHARED_ROOTS:
        return f"{path} itself holds other programs' files, which a {writes} there would replace or hide"
    if under(path, TRUSTED_CONFIG):
        return "it is configuration that runs code or grants access (sudo, PAM, ssh, apt, cron, systemd, modprobe...)"
    if writes == "mount" and under(path, ("/etc", "/root", "/var/lib/systemd")):
        return "a mount there would hide the system's own files under it"
    return None


def unsafe_dir_mode(mode):
    """(what is wrong, the fix) for an octal directory mode that is not safe, or None: a setuid bit, writable by all
    without the sticky bit, or an owner who cannot enter it."""
    bits = int(mode, 8)
    wrong = [
        (bits & 0o4000, "the setuid bit means nothing on a directory", 'drop it, e.g. "0755" or "2775"'),
        (
            bits & 0o002 and not bits & 0o1000,
            "anyone could delete or replace anyone's files in it",
            'add the sticky bit: "1777" (as /tmp) or drop the write bit for others: "0775"',
        ),
        (not bits & 0o100, "its owner could not enter it", 'give the owner rwx, e.g. "0755"'),
    ]
    return next(((what, fix) for bad, what, fix in wrong if bad), None)


def seconds(timespan):
    """A systemd time span (format timespan) in seconds."""
    return sum(float(n) * TIME_UNITS[unit or "s"] for n, unit in re.findall(r"([0-9]+) ?([a-z]*)", timespan))


def _hide(match):
    user, colon, _secret = match.group(2).partition(":")
    # user:password@ keeps the user (it helps find the entry); a lone token@ is the secret itself.
    return match.group(1) + (f"{user}:***" if colon else "***") + "@"


def redact(value):
    """value with the secret of every URL in it (a password, or a lone token) replaced by ***."""
    if isinstance(value, str):
        return USERINFO.sub(_hide, value)
    if isinstance(value, dict):
        return {redact(k): redact(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    return value


def secrets(url):
    """The secret strings of a URL's userinfo (the password, or a lone token), for Ansible's no_log_values."""
    found = USERINFO.search(url) if isinstance(url, str) else None
    if not found:
        return []
    user, colon, secret = found.group(2).partition(":")
    return [s for s in ((secret,) if colon else (user,)) if s]


def shown(value):
    if value is None:
        return "null"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"the YAML number {value!r}"
    text = json.dumps(redact(value), default=str, ensure_ascii=True)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 3] + "..."


def is_true(value):
    """A boolean as Ansible's bool filter reads it (true, "yes", "1", ...), for a value t_bool accepted."""
    return str(value).lower() in TRUE_WORDS


def did_you_mean(name, known):
    close = difflib.get_close_matches(str(name), sorted(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def leaf(where):
    """The key a user writes for this value: gpufleet_stack.cuda[1] -> cuda."""
    return re.sub(r"\[\d+\]$", "", where).rsplit(".", 1)[-1]


class _Check:
    def __init__(self, formats):
        self.formats = formats

    def fail(self, spec, where, value, what, fix=None):
        fix = fix or spec.get("fix") or self.example(spec)
        return [f"{where} is {shown(value)}: {what}" + (f"; {fix}" if fix else "")]

    def example(self, spec):
        fmt = self.formats.get(spec.get("format") or "")
        if spec.get("choices"):
            return "use one of " + ", ".join(json.dumps(c) for c in spec["choices"])
        return f"write it as {fmt['example']}" if fmt else ""

    def text(self, spec, value, where, what="a string"):
        """Problems of a value that must be a one-line string matching the spec's format and choices."""
        if spec.get("empty_ok") and value == "":
            return []
        if not isinstance(value, str):
            return self.fail(spec, where, value, f"not {what}")
        if CONTROL.search(value):
            return self.fail(
                spec, where, value, "it holds a control character (newline, tab...), which would reach a file"
            )
        if spec.get("choices") and (value.lower() if spec.get("lower") else value) not in spec["choices"]:
            return self.fail(spec, where, value, "not one of the choices" + did_you_mean(value, spec["choices"]))
        return self.formatted(spec, value, where)

    def formatted(self, spec, value, where):
        """Problems of a one-line string against the spec's format and the bounds of what it names."""
        fmt = self.formats.get(spec.get("format") or "")
        if fmt and not re.fullmatch(fmt["pattern"], value):
            return self.fail(spec, where, value, "not in the expected form")
        if fmt and fmt.get("port") and not 1 <= int(value.rsplit(":", 1)[1]) <= 65535:
            return self.fail(spec, where, value, "its port is not 1-65535")
        if spec.get("max_seconds") and seconds(value) > spec["max_seconds"]:
            return self.fail(spec, where, value, f"longer than {spec['max_seconds']} s")
        if spec.get("format") == "dir_mode":
            return self.mode(spec, value, where)
        return []

    def mode(self, spec, value, where):
        unsafe = unsafe_dir_mode(value)
        return self.fail(spec, where, value, *unsafe) if unsafe else []

    def run(self, spec, value, where):
        if value is None:
            fix = spec.get("fix") or self.example(spec)
            return [f"{where} is null (an empty YAML value)" + (f": {fix}" if fix else "")]
        return getattr(self, "t_" + spec.get("type", "str"))(spec, value, where)

    def t_str(self, spec, value, where):
        if spec.get("bool_ok") and isinstance(value, bool):
            value = str(value).lower()
        if spec.get("number_ok") and isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        return self.text(spec, value, where)

    def t_any(self, spec, value, where):  # pylint: disable=unused-argument
        return []

    def t_version(self, spec, value, where):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return self.fail(
                spec,
                where,
                value,
                "a version must be a quoted string (YAML reads 12.10 as the number 12.1 before Ansible sees it)",
                f'quote it as you meant it ({leaf(where)}: "{value}" only if that is the version: '
                "unquoted, 12.10 is already 12.1)" + (f", {self.example(spec)}" if spec.get("format") else ""),
            )
        return self.text(spec, value, where, "a version string")

    def t_scalar(self, spec, value, where):
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            return self.fail(spec, where, value, "not a one-line string or number")
        return self.text(spec, str(value), where)

    def t_bool(self, spec, value, where):
        if isinstance(value, bool) or (isinstance(value, str) and value.lower() in BOOL_WORDS) or value in (0, 1):
            return []
        return self.fail(spec, where, value, "not a boolean", "use true or false")

    def t_int(self, spec, value, where):
        if isinstance(value, bool) or not (
            # ASCII digits only: int() would also read Arabic-Indic or fullwidth digits ("١٨٠" is 180).
            isinstance(value, int) or (isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value))
        ):
            return self.fail(spec, where, value, "not a whole number")
        low, high = spec.get("min"), spec.get("max")
        if (low is not None and int(value) < low) or (high is not None and int(value) > high):
            return self.fail(
                spec,
                where,
                value,
                f"out of range ({low if low is not None else '...'} to {high if high is not None else '...'})",
            )
        return []

    def t_list(self, spec, value, where):
        if spec.get("scalar_ok") and not isinstance(value, (list, dict)):
            value, items = [value], [(where, value)]
        elif not isinstance(value, list):
            return self.fail(spec, where, value, "not a list")
        else:
            items = [(f"{where}[{i}]", v) for i, v in enumerate(value)]
        if spec.get("nonempty") and not value:
            return self.fail(spec, where, value, "empty")
        problems = [p for w, v in items for p in self.run(spec["elements"], v, w)]
        if spec.get("unique") and not problems:
            group = self.formats.get(spec["elements"].get("format") or "", {}).get("group")
            keys = [json.dumps(re.match(group, v).group(0) if group else v, sort_keys=True) for v in value]
            repeated = sorted({k for k in keys if keys.count(k) > 1})
            if repeated:
                problems += self.fail(
                    spec, where, value, f"it lists {', '.join(repeated)} more than once", "list each once"
                )
        return problems

    def t_dict(self, spec, value, where):
        if not isinstance(value, dict):
            return self.fail(spec, where, value, "not a dictionary")
        if spec.get("nonempty") and not value:
            return self.fail(spec, where, value, "empty")
        problems = []
        keys = spec.get("keys")
        for key, item in value.items():
            at = f"{where}.{key}"
            if keys is not None:
                if key not in keys:
                    problems.append(f"{at} is not a key of {where}{did_you_mean(key, keys)} (known: {', '.join(keys)})")
                else:
                    problems += self.run(keys[key], item, at)
            elif spec.get("key_format"):
                fmt = self.formats[spec["key_format"]]
                if not isinstance(key, str) or not re.fullmatch(fmt["pattern"], key):
                    fix = spec.get("fix") or f"write keys as {fmt['example']}"
                    problems.append(
                        f"{where} has the key {shown(key)}, which is not in the form {fmt['example']}; {fix}"
                    )
                else:
                    problems += self.run(spec["values"], item, at)
        for key in spec.get("required_keys", []):
            if key not in value:
                problems.append(f"{where} has no {key}: add {where}.{key}")
        return problems

    def t_url(self, spec, value, where):
        if spec.get("empty_ok") and value == "":
            return []
        if not isinstance(value, str):
            return self.fail(spec, where, value, "not a URL")
        if CONTROL.search(value) or re.search(r"\s", value):
            return self.fail(
                spec,
                where,
                value,
                "it holds whitespace or a control character, which would add a line or a second URI to an apt source",
            )
        try:
            parts = urlsplit(value)
            _port = parts.port
        except ValueError as err:
            return self.fail(spec, where, value, f"not a URL ({err})")
        wrong = [
            (parts.scheme not in ("http", "https", "file"), "its scheme must be http, https or file"),
            (parts.scheme != "file" and not parts.hostname, "it names no host"),
            (parts.scheme == "file" and (parts.netloc or not parts.path.startswith("/")), "a file URL is file:///path"),
            (
                parts.fragment or (parts.query and not spec.get("query_ok")),
                "a repository URL has no ?query or #fragment",
            ),
            ((parts.username or parts.password) and not spec.get("credentials"), "credentials cannot go in this URL"),
            (parts.hostname and not valid_host(parts.hostname), "its host is not a DNS name or an IP address"),
            (_port == 0, "its port is not 1-65535"),
            (
                not URL_PATH.fullmatch(parts.path) or not URL_QUERY.fullmatch(parts.query),
                "its path holds a character a shell or apt would read differently (quotes, $, `, ;, (, ), <, >, !, *, "
                "a stray %), which a URL carries %-encoded",
            ),
        ]
        return next((self.fail(spec, where, value, what) for bad, what in wrong if bad), [])

    def t_path(self, spec, value, where):
        if spec.get("empty_ok") and value == "":
            return []
        problems = self.text(spec, value, where, "a path")
        if problems:
            return problems
        if not value or (spec.get("absolute") and not value.startswith("/")):
            return self.fail(spec, where, value, "not an absolute path" if spec.get("absolute") else "empty")
        if spec.get("file") and value.endswith("/"):
            return self.fail(spec, where, value, "it ends in /, so it names a directory, not a file")
        normal = posixpath.normpath(value)
        wrong = [
            (
                value.startswith("-"),
                "it starts with -, which a command line reads as an option",
                "start it with / or a letter",
            ),
            (
                PATH_UNSAFE.search(value),
                "it holds whitespace or a character a shell, fstab or a unit file reads differently",
                "choose a path of letters, digits and . _ - + @ % , : = ~ /",
            ),
            (
                ".." in value.split("/") or (normal != value.rstrip("/") and value != "/"),
                "it is not normalised (.., // or /./ in it)",
                f"write it as {normal}" if ".." not in value.split("/") else "write the directory it means, without ..",
            ),
            (spec.get("under") and not under(normal, (spec["under"],)), f"it is not under {spec.get('under')}", None),
        ]
        found = next((self.fail(spec, where, value, what, fix) for bad, what, fix in wrong if bad), [])
        why = spec.get("writes") and value.startswith("/") and harm(normal, spec["writes"])
        return found or (self.fail(spec, where, value, why) if why else [])

    def t_pattern(self, spec, value, where):
        items = value if isinstance(value, list) else [value]
        return [p for v in items for p in self.text(spec, v, where, "a host pattern")]

    def t_serial(self, spec, value, where):
        """Ansible's serial: a count, a percentage, or a list of them (a canary batch first)."""
        items = value if isinstance(value, list) else [value]
        if not items:
            return self.fail(spec, where, value, "empty")
        for item in items:
            text = str(item).strip() if isinstance(item, (int, str)) and not isinstance(item, bool) else None
            number = re.fullmatch(r"(-?[0-9]+)(%?)", text or "")
            if not number:
                return self.fail(spec, where, value, f"{shown(item)} is not a host count or a percentage")
            if int(number.group(1)) < 1 or (number.group(2) and int(number.group(1)) > 100):
                return self.fail(spec, where, value, f"{shown(item)} would put the whole fleet (or none) in one batch")
        return []

    def t_framework(self, spec, value, where):
        if isinstance(value, str):
            if CONTROL.search(value) or not re.fullmatch(r"[a-z][a-z0-9_-]*==[0-9][0-9A-Za-z.+]*", value):
                return self.fail(
                    spec,
                    where,
                    value,
                    "not NAME==VERSION",
                    "write e.g. 'torch==2.7.1' or {name: torch, version: '2.7.1', cuda: '12.8'}",
                )
            return []
        keys = {
            "name": {"type": "str", "format": "framework_name"},
            "version": {"type": "version", "format": "framework_version"},
            "cuda": {"type": "version", "format": "cuda_xy"},
        }
        return self.t_dict({"keys": keys, "required_keys": ["name", "version"], "fix": spec.get("fix")}, value, where)

    def t_matrix_rows(self, spec, value, where):
        """The rows' own rules are the matrix's (_compat/matrix.build, run by the caller): here only their shape."""
        if not isinstance(value, list) or not all(isinstance(row, dict) for row in value):
            return self.fail(
                spec, where, value, "not a list of rows", "give a list of rows like those of data/compat_matrix.yml"
            )
        return []


def valid_host(host):
    """A URL's host (urlsplit's hostname: lower case, IPv6 without brackets): a DNS name or an IP address."""
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return bool(DNS_NAME.fullmatch(host)) and ".." not in host and not host.startswith(".")


def check(spec, value, where, formats):
    """Every problem of value against spec, as messages naming `where`."""
    return _Check(formats).run(spec, value, where)


def resolve_like(schema, spec):
    """A role variable's spec: its own, or the one its `like:` names (gpufleet_stack.driver)."""
    if "like" not in spec:
        return spec
    name, _dot, key = spec["like"].partition(".")
    found = schema["variables"][name]
    return found["keys"][key] if key else found
