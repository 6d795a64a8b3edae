"""Materialise a recorded sysfs listing ("<path under /sys> = <content>", "-> target  [symlink]", "#" comments; the
format of the files in fixtures/) under a directory, so that code reads it as it reads /sys."""

from pathlib import Path


def build(listing: Path, root: Path) -> Path:
    """root/sys/... as the listing says; returns root (the sysfs_root the readers take)."""
    for line in listing.read_text().splitlines():
        if not line.strip() or line.startswith("#") or " = " not in line:
            continue
        rel, value = line.split(" = ", 1)
        path = root / "sys" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if value.endswith("[symlink]") and value.startswith("-> "):
            path.symlink_to(value[3:].rsplit("[symlink]", 1)[0].strip())
        else:
            path.write_text(value.replace("\\n", "\n") + "\n")
    return root
