#!/usr/bin/env bash
# Debian 12 VMs with Debian's own kernel under QEMU (TCG), for what containers cannot do:
# VLAN interfaces, Soft-RoCE, dm-crypt. Used by the Molecule scenario `kernel`.
#
#   vm.sh image              build the root image, kernel, initrd and SSH key once (cached)
#   vm.sh up NAME INDEX      boot NAME (INDEX 1 or 2): SSH on 127.0.0.1:$((GPULAB_KERNEL_SSH_BASE + INDEX))
#                            to its 10.0.2.1INDEX,
#                            its eth1, eth2 and eth3 wired to the other VM's over loopback UDP
#   vm.sh wait NAME INDEX    wait until NAME answers on SSH
#   vm.sh down NAME          power NAME off and remove its disks
#
# GPULAB_KERNEL_CACHE (default /var/cache/gpulab/kernel) holds the image; it is rebuilt when
# the image recipe (the function below and its package list) changes. Each VM writes to its own copy-on-write overlay and gets a blank
# 64 MiB second disk (/dev/vdb). The console log is $GPULAB_KERNEL_CACHE/run/NAME.console.
set -euo pipefail

cache=${GPULAB_KERNEL_CACHE:-/var/cache/gpulab/kernel}
ssh_base=${GPULAB_KERNEL_SSH_BASE:-2250}
fabric_base=${GPULAB_KERNEL_FABRIC_BASE:-2270}
run=$cache/run
images=$(cd "$(dirname "$0")/../images" && pwd)
# shellcheck source=../images/mirror.sh
. "$images/mirror.sh"
# apt's update-success stamp, as the common role installs it (the VMs run no common role): package
# tasks then see lists updated minutes ago as current, where an update that found nothing new would
# otherwise leave them looking as old as the image.
update_stamp=$(cd "$(dirname "$0")/../../roles/common/templates" && pwd)/apt-update-stamp.j2
# What the roles would install, preinstalled so that the VMs (slow under emulation) only check.
packages=linux-image-amd64,initramfs-tools,systemd,systemd-sysv,udev,dbus,kmod,openssh-server,python3,python3-apt,iproute2,iputils-ping,procps,ca-certificates,rdma-core,ibverbs-utils,perftest,infiniband-diags,cryptsetup,cryptsetup-bin,clevis,clevis-luks,clevis-systemd,tang,e2fsprogs,xfsprogs

log() { printf 'kernel-vm: %s\n' "$*" >&2; }

need_tools() {
  local missing=()
  command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
  command -v qemu-img >/dev/null || missing+=(qemu-utils)
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  command -v ssh-keygen >/dev/null || missing+=(openssh-client)
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    "$images"/../../scripts/host-packages.sh "${missing[@]}"
  fi
}

# The recipe's fingerprint: the cached image is rebuilt when it changes.
recipe() {
  { declare -f image; echo "$packages"; cat "$images"/node/* "$update_stamp"; } | sha256sum | cut -c1-16
}

image() {
  need_tools
  local stamp
  stamp=$(recipe)
  if [ -f "$cache/stamp" ] && [ "$(cat "$cache/stamp")" = "$stamp" ]; then
    log "image in $cache is current"
    return
  fi
  mkdir -p "$cache"
  rm -f "$cache/stamp"
  local mirror started=$SECONDS
  root=$(mktemp -d /var/tmp/gpulab-vm-root.XXXXXX)
  trap 'rm -rf "$root"' EXIT
  mirror=$(mirror_uri)
  log "debootstrap bookworm with Debian's kernel from $mirror"
  debootstrap --variant=minbase --include="$packages" bookworm "$root" "$mirror" >"$cache/debootstrap.log" 2>&1 || {
    log "debootstrap failed; tail of $cache/debootstrap.log:"; tail -20 "$cache/debootstrap.log" >&2; exit 1; }

  # The build machine's apt sources and the names it resolves them by (user networking
  # forwards DNS but not /etc/hosts), and fresh package lists.
  rm -f "$root/etc/apt/sources.list"
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/"
  else
    printf 'deb %s bookworm main\n' "$mirror" >"$root/etc/apt/sources.list"
  fi
  printf '127.0.0.1 localhost\n' >"$root/etc/hosts"
  # shellcheck disable=SC2013  # host names are single words
  for host in $(awk '/^URIs:/ {print $2}' "$root"/etc/apt/sources.list.d/*.sources 2>/dev/null | sed -E 's|^[a-z]+://([^/:]+).*|\1|' | sort -u); do
    getent hosts "$host" | head -1 >>"$root/etc/hosts" || true
  done
  echo 'nameserver 10.0.2.3' >"$root/etc/resolv.conf"
  tail -n +2 "$update_stamp" >"$root/etc/apt/apt.conf.d/15gpulab-update-stamp"  # without the Jinja header line
  chroot "$root" apt-get update -qq
  # apt in the VMs uses the package cache on the host (QEMU's 10.0.2.2) when it answers.
  "$images/node/install-apt-proxy.sh" "$root"
  # Python keeps the bytecode of Ansible's module payloads: under emulation each compile took seconds.
  "$images/node/install-pyc-cache.sh" "$root"

  # Management NIC (eth0, user networking) by DHCP; eth1 is left to the network role.
  cat >"$root/etc/systemd/network/10-management.network" <<'EOF'
[Match]
Name=eth0

[Network]
DHCP=ipv4
EOF
  chroot "$root" systemctl enable -q systemd-networkd ssh
  # A getty on the serial console hangs up the console the kernel logs to.
  chroot "$root" systemctl mask -q serial-getty@ttyS0.service
  echo '/dev/vda / ext4 rw,noatime 0 1' >"$root/etc/fstab"
  : >"$root/etc/machine-id"  # set per VM at boot (systemd.machine_id= in up)

  [ -f "$cache/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C gpulab-kernel-test -f "$cache/id_ed25519"
  install -d -m 0700 "$root/root/.ssh"
  install -m 0600 "$cache/id_ed25519.pub" "$root/root/.ssh/authorized_keys"
  cat >"$root/etc/ssh/sshd_config.d/gpulab-test.conf" <<'EOF'
PermitRootLogin prohibit-password
UseDNS no
EOF

  cp "$root"/boot/vmlinuz-* "$cache/vmlinuz"
  cp "$root"/boot/initrd.img-* "$cache/initrd.img"
  rm -f "$cache/root.img"
  mkfs.ext4 -q -L gpulab-vm -d "$root" "$cache/root.img" 2G
  echo "$stamp" >"$cache/stamp"
  log "image built in $((SECONDS - started)) s: $cache/root.img"
}

up() {
  local name=$1 index=$2 peer=$((3 - $2)) nic port wires=()
  [ "$(cat "$cache/stamp" 2>/dev/null)" = "$(recipe)" ] || { log "no current image: run '$0 image' first"; exit 1; }
  mkdir -p "$run"
  down "$name" 2>/dev/null || true
  qemu-img create -q -f qcow2 -F raw -b "$cache/root.img" "$run/$name.qcow2"
  qemu-img create -q -f raw "$run/$name-data.img" 64M
  # eth1, eth2, eth3: each a point-to-point wire to the same NIC of the other VM (UDP on loopback).
  # A stated speed and full duplex: bonding runs LACP only on full-duplex ports.
  for nic in 1 2 3; do
    port=$((fabric_base + 10 * (nic - 1)))
    wires+=(-netdev "socket,id=wire$nic,udp=127.0.0.1:$((port + peer)),localaddr=127.0.0.1:$((port + index))"
      -device "virtio-net-pci,netdev=wire$nic,mac=52:54:00:1$((nic + 1)):00:0$index,speed=10000,duplex=full")
  done
  # eth0: DHCP gives 10.0.2.1INDEX, the address the plan derives for the node, and SSH is
  # forwarded to that address only: a management change to another address cuts SSH off.
  # Its own machine id (else systemd takes the image's D-Bus one): networkd derives a bond's MAC
  # from it, and two VMs with one id would look like one LACP system to each other.
  # e2scrub_reap (LVM snapshot clean-up; there is no LVM) ran for 14 to 78 s of every boot under emulation, the
  # last unit before the boot counted as finished: masked from the kernel command line, the image unchanged.
  qemu-system-x86_64 -accel tcg -m 1024 -smp 1 -display none -daemonize \
    -pidfile "$run/$name.pid" -serial "file:$run/$name.console" -monitor none \
    -kernel "$cache/vmlinuz" -initrd "$cache/initrd.img" \
    -append "root=/dev/vda rw console=ttyS0 net.ifnames=0 systemd.hostname=$name systemd.machine_id=6a1b00000000400080000000000000$index$index systemd.mask=e2scrub_reap.service" \
    -drive "file=$run/$name.qcow2,if=virtio,format=qcow2" \
    -drive "file=$run/$name-data.img,if=virtio,format=raw" \
    -netdev "user,id=management,net=10.0.2.0/24,dhcpstart=10.0.2.1$index,hostfwd=tcp:127.0.0.1:$((ssh_base + index))-10.0.2.1$index:22" \
    -device "virtio-net-pci,netdev=management,mac=52:54:00:11:00:0$index" \
    "${wires[@]}"
  log "$name booting (console: $run/$name.console)"
}

wait_ssh() {
  local name=$1 index=$2 started=$SECONDS
  until ssh -q -i "$cache/id_ed25519" -p $((ssh_base + index)) -o BatchMode=yes -o ConnectTimeout=5 \
    -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null root@127.0.0.1 true 2>/dev/null; do
    if [ $((SECONDS - started)) -gt "${GPULAB_KERNEL_BOOT_TIMEOUT:-300}" ]; then
      log "$name did not answer on SSH within ${GPULAB_KERNEL_BOOT_TIMEOUT:-300} s; console tail:"
      tail -20 "$run/$name.console" >&2
      exit 1
    fi
    sleep 3
  done
  log "$name answers on SSH after $((SECONDS - started)) s"
}

down() {
  local name=$1 pid
  if [ -f "$run/$name.pid" ]; then
    pid=$(cat "$run/$name.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$run/$name.pid" "$run/$name.qcow2" "$run/$name-data.img"
}

case "${1:-}" in
  image) image ;;
  up) up "$2" "$3" ;;
  wait) wait_ssh "$2" "$3" ;;
  down) down "$2" ;;
  *) sed -n '2,13p' "$0" >&2; exit 2 ;;
esac
