"""Build the offline NVIDIA-style apt mirror: synthetic .debs (catalog.py), flat repos, signed with a local key.

    sandbox/mirror/build [--out DIR] [--force] [--url URL]

Output under DIR (default <repo>/.cache/mirror), rebuilt only when an input changed (a hash in DIR/.inputs).
DIR/gnupg holds the signing key; DIR/www is the web root (sandbox/mirror/serve):
  compute/cuda/repos/debian12/x86_64/   *.deb Packages Packages.gz Release Release.gpg InRelease <keyid>.pub
  compute/cuda/repos/debian13/x86_64/   the same packages for Debian 13
  libnvidia-container/stable/deb/amd64/ the Container Toolkit packages, same files
  site/debian12/                         a site's own repository (GDRCopy's packages), same files
  keys/gpufleet-mirror.gpg (binary, for signed-by=) keys/gpufleet-mirror.asc keys/fingerprint
  manifest.json                          fingerprint and every package, version and Depends per repo
The signing key lives in DIR/gnupg and survives rebuilds, so its fingerprint stays the same for a DIR.
Prints the fingerprint on the last line of stdout.
"""

from __future__ import annotations

import argparse
import fcntl
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from email.utils import formatdate
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
import catalog  # pylint: disable=wrong-import-position

NVML_SIM = ROOT / "sandbox" / "nvml-sim"
REPOS = {
    "cuda": ["compute/cuda/repos/debian12/x86_64", "compute/cuda/repos/debian13/x86_64"],
    "container": ["libnvidia-container/stable/deb/amd64"],
    # A site's own repository (what a Debian fleet builds itself: GDRCopy's packages), for Debian 12.
    "site": ["site/debian12"],
}
LABELS = {"cuda": "NVIDIA CUDA", "container": "libnvidia-container", "site": "site packages"}
KEY_UID = "gpufleet.stack test mirror (synthetic NVIDIA packages) <mirror@gpufleet.invalid>"


def run(argv, **kw):
    return subprocess.run(argv, check=True, capture_output=True, text=True, **kw)


def inputs_digest():
    digest = hashlib.sha256()
    files = [
        HERE / "catalog.py",
        HERE / "driver_graph.py",
        HERE / "kmod_source.py",
        HERE / "nvidia_ctk.py",
        HERE / "dcgmi.py",
        HERE / "dcgm_exporter.py",
        Path(__file__),
        NVML_SIM / "build.sh",
    ]
    files += sorted((HERE / "recorded").glob("*"))
    files += sorted((NVML_SIM / "src").glob("*"))
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


# --- payload --------------------------------------------------------------------------------------------
def nvml_library(driver, cuda, work):
    out = work / f"nvml-{driver}"
    argv = ["bash", str(NVML_SIM / "build.sh"), str(out), "--driver-version", driver, "--cuda-version", str(cuda)]
    return Path(run(argv).stdout.strip().splitlines()[-1]).read_bytes()


_STUB_LOCK = threading.Lock()


def stub_library(kind, symbol, value, soname, work):
    """A real shared object exporting one version call, so ctypes probes (cuDriverGetVersion...) answer."""
    body = (
        f"unsigned long {symbol}(void) {{ return {value}UL; }}\n"
        if kind == "stub-size_t"
        else f"int {symbol}(int *v) {{ if (v) *v = {value}; return 0; }}\n"
    )
    key = hashlib.sha256(f"{body}{soname}".encode()).hexdigest()[:16]
    lib = work / "stubs" / f"{key}.so"
    with _STUB_LOCK:
        return _stub_build(lib, body, soname)


def _stub_build(lib, body, soname):
    if not lib.exists():
        lib.parent.mkdir(parents=True, exist_ok=True)
        src = lib.with_suffix(".c")
        src.write_text(body)
        run([os.environ.get("CC", "cc"), "-shared", "-fPIC", "-O2", f"-Wl,-soname,{soname}", "-o", str(lib), str(src)])
    return lib.read_bytes()


def content(spec, path, links, work):
    if isinstance(spec, (str, bytes)):
        return spec.encode() if isinstance(spec, str) else spec
    if spec[0] == "nvml":
        return nvml_library(spec[1], spec[2], work)
    base = os.path.basename(path)
    soname = next((os.path.basename(link) for link, target in links.items() if target == base), base)
    return stub_library(spec[0], spec[1], spec[2], soname, work)


# --- packages -------------------------------------------------------------------------------------------
def control_text(p, installed_kib):
    fields = {
        "Package": p["name"],
        "Version": p["version"],
        "Architecture": "amd64",
        "Maintainer": "gpufleet.stack sandbox <mirror@gpufleet.invalid>",
        "Installed-Size": str(installed_kib),
        "Depends": ", ".join(p["depends"]),
        **p["extra"],
        "Section": "multiverse/devel",
        "Priority": "optional",
        "Description": f"{p['name']} {p['version']}: {catalog.DESC}\n"
        " Same name, version, dependencies and file paths as NVIDIA's package, with tiny stand-in contents.",
    }
    return "".join(f"{k}: {v}\n" for k, v in fields.items() if v)


def build_deb(p, work, dest):
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        tree = Path(tmp)
        tree.chmod(0o755)  # the package's "./" entry: a 0700 temp dir would be recorded as such
        (tree / "DEBIAN").mkdir()
        size = 0
        for path, (spec, mode) in p["files"].items():
            data = content(spec, path, p["links"], work)
            target = tree / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            target.chmod(mode)
            size += len(data)
        for path, link in p["links"].items():
            target = tree / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(link)
        conffiles = [path for path in p["files"] if path.startswith("/etc/")]
        if conffiles:
            (tree / "DEBIAN" / "conffiles").write_text("".join(f"{c}\n" for c in conffiles))
        for script in ("postinst", "prerm"):
            if p[script]:
                (tree / "DEBIAN" / script).write_text(p[script])
                (tree / "DEBIAN" / script).chmod(0o755)
        (tree / "DEBIAN" / "control").write_text(control_text(p, max(1, size // 1024)))
        # The file name drops the epoch, as NVIDIA's repository does (datacenter-gpu-manager-4-core_4.4.1-1_amd64.deb).
        deb = dest / f"{p['name']}_{p['version'].split(':', 1)[-1]}_amd64.deb"
        run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(tree), str(deb)])
    return deb


def hashes(data):
    return {
        "MD5sum": hashlib.md5(data).hexdigest(),
        "SHA1": hashlib.sha1(data).hexdigest(),
        "SHA256": hashlib.sha256(data).hexdigest(),
        "SHA512": hashlib.sha512(data).hexdigest(),
    }


def index_stanza(deb):
    data = deb.read_bytes()
    control = run(["dpkg-deb", "-f", str(deb)]).stdout.rstrip("\n")
    extra = {"Filename": f"./{deb.name}", "Size": str(len(data)), **hashes(data)}
    return control + "\n" + "".join(f"{k}: {v}\n" for k, v in extra.items())


def packages_index(repo_dir):
    with ThreadPoolExecutor(max_workers=4) as pool:
        return "\n".join(pool.map(index_stanza, sorted(repo_dir.glob("*.deb"))))


def release_text(repo, repo_dir):
    lines = [
        "Origin: gpufleet.stack test mirror",
        f"Label: {LABELS[repo]} (synthetic test fixture)",
        "Architecture: amd64",
        f"Date: {formatdate(time.time(), usegmt=True)}",
    ]
    files = {name: (repo_dir / name).read_bytes() for name in ("Packages", "Packages.gz")}
    for field, algo in (("MD5Sum", "md5"), ("SHA1", "sha1"), ("SHA256", "sha256"), ("SHA512", "sha512")):
        lines.append(f"{field}:")
        lines += [f" {hashlib.new(algo, d).hexdigest()} {len(d):>16} {n}" for n, d in files.items()]
    return "\n".join(lines) + "\n"


# --- signing --------------------------------------------------------------------------------------------
def gpg(home, *args):
    return run(["gpg", "--homedir", str(home), "--batch", "--quiet", "--pinentry-mode", "loopback", *args])


def ensure_key(home):
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not gpg(home, "--list-secret-keys", "--with-colons").stdout.strip():
        gpg(home, "--passphrase", "", "--quick-gen-key", KEY_UID, "ed25519", "sign", "never")
    listing = gpg(home, "--list-secret-keys", "--with-colons").stdout
    return next(line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:"))


def sign(home, repo_dir):
    release = repo_dir / "Release"
    for name in ("InRelease", "Release.gpg"):
        (repo_dir / name).unlink(missing_ok=True)
    gpg(home, "--digest-algo", "SHA512", "--clearsign", "-o", str(repo_dir / "InRelease"), str(release))
    gpg(home, "--digest-algo", "SHA512", "--armor", "--detach-sign", "-o", str(repo_dir / "Release.gpg"), str(release))


# --- main -----------------------------------------------------------------------------------------------
def build(out, force=False, url=catalog.DEFAULT_URL):
    digest = inputs_digest() + f" url={url}"
    stamp = out / ".inputs"
    fingerprint_file = out / "www" / "keys" / "fingerprint"
    if not force and stamp.exists() and stamp.read_text() == digest and fingerprint_file.exists():
        return fingerprint_file.read_text().strip(), False
    out.mkdir(parents=True, exist_ok=True)
    stamp.unlink(missing_ok=True)
    fingerprint = ensure_key(out / "gnupg")
    work = ROOT / ".cache" / "mirror-work"
    work.mkdir(parents=True, exist_ok=True)
    ctk = "#!/usr/bin/python3\n" + (HERE / "nvidia_ctk.py").read_text()
    dcgmi = "#!/usr/bin/python3\n" + (HERE / "dcgmi.py").read_text()
    exporter = "#!/usr/bin/python3\n" + (HERE / "dcgm_exporter.py").read_text()
    # Only www/ is served: the secret key in gnupg/ stays out of the web root.
    www = out / "www"
    shutil.rmtree(www, ignore_errors=True)
    keys = www / "keys"
    keys.mkdir(parents=True)
    (keys / "gpufleet-mirror.gpg").write_bytes(
        subprocess.run(
            ["gpg", "--homedir", str(out / "gnupg"), "--export", fingerprint], check=True, capture_output=True
        ).stdout
    )
    armored = gpg(out / "gnupg", "--armor", "--export", fingerprint).stdout
    (keys / "gpufleet-mirror.asc").write_text(armored)
    manifest = {"fingerprint": fingerprint, "key": "www/keys/gpufleet-mirror.gpg", "repos": {}}
    key = (keys / "gpufleet-mirror.gpg").read_bytes()
    # Each CUDA repository gets its distribution's build of the driver (driver_graph.PER_DIST); the Container
    # Toolkit repository is one for all.
    sources = {"dcgmi_source": dcgmi, "exporter_source": exporter}
    targets = [(rel, "cuda", catalog.catalog(ctk, rel.split("/")[3], key, url, **sources)) for rel in REPOS["cuda"]]
    targets.append((REPOS["container"][0], "container", catalog.catalog(ctk, "debian12", key, url, **sources)))
    targets.append((REPOS["site"][0], "site", catalog.catalog(ctk, "debian12", key, url, **sources)))
    for rel, repo, packages in targets:
        repo_dir = www / rel
        repo_dir.mkdir(parents=True)
        chosen = [p for p in packages if p["repo"] == repo]
        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(lambda p, d=repo_dir: build_deb(p, work, d), chosen))
        index = packages_index(repo_dir)
        (repo_dir / "Packages").write_text(index)
        (repo_dir / "Packages.gz").write_bytes(gzip.compress(index.encode(), mtime=0))
        (repo_dir / "Release").write_text(release_text(repo, repo_dir))
        sign(out / "gnupg", repo_dir)
        # NVIDIA publishes the repo key next to the index (e.g. .../debian12/x86_64/3bf863cc.pub).
        (repo_dir / f"{fingerprint[-8:].lower()}.pub").write_text(armored)
        manifest["repos"][rel] = [
            {"package": p["name"], "version": p["version"], "depends": p["depends"]} for p in chosen
        ]
    (www / "libnvidia-container" / "gpgkey").write_text(armored)
    manifest["broken_driver"] = catalog.BROKEN_DRIVER
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    fingerprint_file.write_text(fingerprint + "\n")
    stamp.write_text(digest)
    return fingerprint, True


def main(argv=None):
    parser = argparse.ArgumentParser(prog="sandbox/mirror/build", description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--out", type=Path, default=ROOT / ".cache" / "mirror", help="output directory")
    parser.add_argument("--force", action="store_true", help="rebuild even if no input changed")
    parser.add_argument("--url", default=catalog.DEFAULT_URL, help="where it is served (cuda-keyring's source line)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    out = args.out.resolve()
    # One build at a time on this checkout: every mirror shares .cache/mirror-work, and the tests build theirs from
    # several processes at once (make test's xdist workers, Molecule lanes).
    (ROOT / ".cache").mkdir(exist_ok=True)
    with (ROOT / ".cache" / "mirror-build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            fingerprint, built = build(out, args.force, args.url)
        except subprocess.CalledProcessError as exc:
            sys.stderr.write(f"build: {' '.join(exc.cmd)} failed ({exc.returncode}):\n{exc.stdout}{exc.stderr}\n")
            return 1
    state = f"built in {time.monotonic() - started:.1f}s" if built else "up to date"
    print(f"mirror {out} {state}; signing key fingerprint:")
    print(fingerprint)
    return 0


if __name__ == "__main__":
    sys.exit(main())
