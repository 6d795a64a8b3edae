#!/usr/bin/env bash
# Run inside a sandbox node (sandbox/fleet up pipes it to `bash -s`): the node answers SSH as a real fleet's nodes
# do, for an unprivileged user who becomes root with sudo.
#   node-ssh.sh PORT USER PUBLIC_KEY
# sshd listens on 127.0.0.1:PORT (the nodes share the host's network, so each has its own port); password and root
# logins are off. Each node has its own host keys (the image carries none), made once, at its first start; the
# ed25519 public key (the only one) is printed for the controller's known_hosts.
set -euo pipefail
port=${1:?usage: node-ssh.sh PORT USER PUBLIC_KEY}
user=${2:?usage: node-ssh.sh PORT USER PUBLIC_KEY}
key=${3:?usage: node-ssh.sh PORT USER PUBLIC_KEY}

# sudo resolves the node's own name (it warns on every call otherwise); host networking gives the host's /etc/hosts.
grep -qw "$(hostname)" /etc/hosts || printf '127.0.1.1 %s\n' "$(hostname)" >>/etc/hosts
id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
install -d -m 0700 -o "$user" -g "$user" "/home/$user/.ssh"
printf '%s\n' "$key" >"/home/$user/.ssh/authorized_keys"
chown "$user:$user" "/home/$user/.ssh/authorized_keys"
chmod 0600 "/home/$user/.ssh/authorized_keys"
printf '%s ALL=(ALL) NOPASSWD: ALL\n' "$user" >/etc/sudoers.d/gpufleet-ssh
chmod 0440 /etc/sudoers.d/gpufleet-ssh
visudo -cq

cat >/etc/ssh/sshd_config.d/gpufleet-sandbox.conf <<CONF
Port $port
HostKey /etc/ssh/ssh_host_ed25519_key
ListenAddress 127.0.0.1
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin no
AllowUsers $user
CONF
[ -e /etc/ssh/ssh_host_ed25519_key ] || ssh-keygen -q -t ed25519 -N '' -C "root@$(hostname)" -f /etc/ssh/ssh_host_ed25519_key
systemctl enable --quiet ssh.service
systemctl restart ssh.service
for _ in $(seq 1 50); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.2
done
cut -d' ' -f1,2 /etc/ssh/ssh_host_ed25519_key.pub
