# Copyright: gpufleet.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the nvidia_driver role leaves out on a host, and why, and whether it rebuilds the host's initramfs: decided
from the driver_state module's reading of the host and the configure stage's result. Pure functions. PRIVATE to the
collection.

A container holds no kernel of its own unless its /boot has some (the sandbox's debian12-kernel nodes, whose next
boot they are): only then are DKMS, the initramfs and its rebuild the role's business.
"""

from __future__ import annotations


def leaves_out(
    state,
    *,
    in_container,
    virtualization="",
    blacklist_nouveau=False,
    dkms=True,
    initramfs_tool="update-initramfs",
    changed_files=(),
    nouveau_file="",
    imex=False,
    imex_nodes=(),
    imex_domain=None,
):
    """{skipped: [reasons, one line each], initramfs_rebuild: bool}.

    state: driver_state's result (owns_kernels, initramfs_tool, kernel_targets); changed_files: config_files' result
    (the nouveau blacklist among them means the initramfs must be rebuilt); imex_domain: the imex_nodes filter's."""
    state = state if isinstance(state, dict) else {}
    owns = bool(state.get("owns_kernels"))
    has_tool = bool(state.get("initramfs_tool"))
    skipped = []
    if in_container and owns:
        skipped.append(
            f"this host is a container ({virtualization}) that holds kernels of its own "
            f"({', '.join(state.get('kernel_targets') or [])} boots next): DKMS builds the module for them and their "
            "initramfs is rebuilt, but the running kernel is the container host's, so the module is not loaded and "
            "no reboot is considered (nvidia_driver_reboot_required stays false); sandbox/bootcheck boots the node's "
            "kernel to check it"
        )
    elif in_container:
        skipped.append(
            f"this host is a container ({virtualization}) and holds no kernel of its own: its kernel and kernel module "
            "are the host's, so no DKMS or headers are installed, no initramfs is rebuilt after blacklisting nouveau, "
            "and no reboot is considered (nvidia_driver_reboot_required stays false)"
        )
    if owns and not dkms:
        skipped.append("DKMS and headers are not installed: nvidia_driver_dkms is false")
    if owns and blacklist_nouveau and not has_tool:
        skipped.append(
            f"the initramfs is not rebuilt after blacklisting nouveau: {initramfs_tool} is not installed, so the "
            "blacklist applies from the next boot only if nouveau is not loaded from an initramfs"
        )
    domain = imex_domain or {}
    if imex and not imex_nodes and not domain.get("nodes"):
        skipped.append(f"IMEX is installed but its nodes file is not written: {domain.get('why')}")
    rebuild = owns and has_tool and bool(blacklist_nouveau) and nouveau_file in (changed_files or [])
    return {"skipped": skipped, "initramfs_rebuild": rebuild}
