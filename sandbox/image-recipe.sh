#!/usr/bin/env bash
# Build a sandbox node root filesystem with debootstrap and stream it as a tar on stdout.
#   image-recipe.sh SUITE [EXTRA_PACKAGES]   (EXTRA_PACKAGES: comma-separated, added to debootstrap's --include)
# `sandbox/fleet images` hashes this file: any change here rebuilds the images.
set -euo pipefail
suite=${1:?usage: image-recipe.sh SUITE [EXTRA_PACKAGES]}
extra=${2:+,$2}
mirror=${GPUFLEET_DEBIAN_MIRROR:-http://deb.debian.org/debian}
root=$(mktemp -d "${TMPDIR:-/tmp}/gpufleet-rootfs-${suite}.XXXXXX")
trap 'rm -rf "$root" "$root.log"' EXIT

# What a node needs for Ansible and our roles: systemd as PID 1, python3 (+ apt bindings for
# ansible.builtin.apt), sudo and an SSH server (for inventories that connect as a real fleet does), and what apt
# needs to verify signed third-party repositories.
packages=systemd,systemd-sysv,dbus,python3,python3-apt,sudo,openssh-server,ca-certificates,gnupg,procps,kmod,pciutils
debootstrap --variant=minbase --include="$packages$extra" \
  "$suite" "$root" "$mirror" >"$root.log" 2>&1 || { cat "$root.log" >&2; exit 1; }
rm -f "$root.log"

# All components: Debian's NVIDIA driver, nvidia-smi and libnvidia-ml1 live in non-free.
cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror $suite main contrib non-free non-free-firmware
EOF
# Services that make no sense in a container and would only fail or slow boot.
for unit in systemd-resolved.service systemd-timesyncd.service getty.target \
  systemd-networkd.service apt-daily.timer apt-daily-upgrade.timer; do
  ln -sf /dev/null "$root/etc/systemd/system/$unit"
done
# No SSH server until `sandbox/fleet up` gives the node its port (the nodes share the host's network) and its own
# host keys: none are baked into the image, or every node would have the same ones.
rm -f "$root"/etc/ssh/ssh_host_* "$root"/etc/systemd/system/sshd.service \
  "$root"/etc/systemd/system/multi-user.target.wants/ssh.service "$root"/etc/systemd/system/sockets.target.wants/ssh.socket
# Ansible's become works without a tty.
echo 'Defaults !requiretty' >"$root/etc/sudoers.d/gpufleet-sandbox"
chmod 0440 "$root/etc/sudoers.d/gpufleet-sandbox"
# No package lists in the image (they would be stale and lack non-free). The lists directory is dated
# 1970 so that apt's cache_valid_time always sees a cache to refresh on a new node.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb
mkdir -p "$root/var/lib/apt/lists/partial"
touch -d @0 "$root/var/lib/apt/lists"
tar -C "$root" --numeric-owner -c .
