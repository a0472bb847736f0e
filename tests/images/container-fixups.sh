#!/usr/bin/env bash
# Make a root filesystem boot systemd cleanly inside a Docker container.
# Used by the offline build (argument: the root dir) and by the Dockerfiles (argument: /).
set -euo pipefail
root=${1:?root directory}

# Each container gets its own machine id at first boot.
: >"$root/etc/machine-id"
# Units that need real hardware or a console and only fail or hang in a container.
for unit in getty@tty1.service serial-getty@ttyS0.service console-getty.service \
            systemd-udevd.service systemd-udev-trigger.service systemd-modules-load.service \
            systemd-remount-fs.service sys-kernel-config.mount sys-kernel-debug.mount \
            nvmf-autoconnect.service; do
  ln -sf /dev/null "$root/etc/systemd/system/$unit"
done
# sshd stays off, without host keys, until the lab turns it on with keys of each node's own
# (playbooks/lab.yml): the Molecule scenarios reach their containers through Docker.
rm -f "$root"/etc/ssh/ssh_host_*_key "$root"/etc/ssh/ssh_host_*_key.pub
rm -f "$root"/etc/systemd/system/*.wants/ssh.service "$root"/etc/systemd/system/*.wants/ssh.socket
# dpkg without an fsync per file (Docker's own Debian images do the same): a test container's disk
# is thrown away, and the fsyncs were a seventh of installing the CUDA toolkit (71 s to 61 s).
echo force-unsafe-io >"$root/etc/dpkg/dpkg.cfg.d/gpulab-unsafe-io"
# Start services after package installs (Debian's policy-rc.d would block them).
rm -f "$root/usr/sbin/policy-rc.d"
# apt takes packages through the test machine's package cache when one answers.
"$(dirname "$0")/node/install-apt-proxy.sh" "$root"
# Python keeps the bytecode of Ansible's module payloads.
"$(dirname "$0")/node/install-pyc-cache.sh" "$root"
