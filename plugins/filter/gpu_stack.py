"""What the GPU-stack roles install, as pure functions: package lists, apt sources, NCCL settings.

The roles (nvidia_driver, cuda, nccl, container_runtime) only apply what these return, so the
choices for distributions and sources this build machine cannot reach (Ubuntu's archive,
NVIDIA's repositories) are tested here, in unit tests.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ansible.errors import AnsibleFilterError

from ansible_collections.gpulab.cluster.plugins.module_utils import plan as plan_defaults

DEBIAN_BRANCH = re.compile(r"^(?:(?P<tesla>tesla-)(?P<tesla_branch>\d{3})|(?P<branch>\d{3}))$")
NUMERIC_BRANCH = re.compile(r"^\d{3}$")
DRIVER_SOURCES = ("distribution", "cuda_repo")
# Repository directory names NVIDIA uses per distribution release and machine architecture.
CUDA_REPO_ARCH = {"x86_64": "x86_64", "aarch64": "sbsa"}


def _distribution(facts: Mapping[str, Any]) -> tuple[str, str]:
    name = str(facts.get("distribution", "")).lower()
    if name not in ("debian", "ubuntu"):
        raise AnsibleFilterError(f"the GPU stack supports Debian and Ubuntu, not '{facts.get('distribution')}'")
    version = facts.get("distribution_major_version") if name == "debian" else facts.get("distribution_version")
    return name, str(version)


def nvidia_driver_packages(
    facts: Mapping[str, Any],
    source: str,
    branch: str,
    open_modules: bool = False,
    kernel_modules: bool = True,
    fabricmanager: bool = False,
    persistenced: bool = True,
) -> dict[str, list[str]]:
    """The driver packages for one node: {"pinned": [...], "unpinned": [...]}.

    "pinned" carry the driver's own version (userspace: nvidia-smi, NVML, libcuda; then the
    kernel side); "unpinned" are versioned on their own (Debian's nvidia-persistenced).

    Debian's branches are its package flavours: "535" is the plain `nvidia-*` set, "tesla-470"
    and "tesla-535" the `nvidia-tesla-<n>-*` sets. Ubuntu's are Canonical's `-server` packages,
    or NVIDIA's own from the CUDA repository.
    """
    distro, _release = _distribution(facts)
    branch = str(branch)
    if source not in DRIVER_SOURCES:
        raise AnsibleFilterError(f"nvidia_driver_source must be one of {', '.join(DRIVER_SOURCES)}, got '{source}'")
    if source == "distribution" and distro == "debian":
        match = DEBIAN_BRANCH.match(branch)
        if not match:
            raise AnsibleFilterError(
                f"nvidia_driver_branch '{branch}' is not a Debian branch: use '535' (nvidia-*), "
                "'tesla-535' or 'tesla-470' (nvidia-tesla-<n>-*)"
            )
        flavour = f"tesla-{match['tesla_branch']}-" if match["tesla"] else ""
        number = match["tesla_branch"] or match["branch"]
        packages = [f"nvidia-{flavour}smi", f"libnvidia-{flavour}ml1"]
        packages.append(f"libnvidia-{flavour}cuda1" if flavour else "libcuda1")
        if kernel_modules:
            packages.append(f"nvidia-{flavour}{'open-' if open_modules else ''}kernel-dkms")
            if int(number) >= 525:  # GSP firmware exists from 525 on
                packages.append(f"firmware-nvidia-{flavour}gsp")
        if fabricmanager:
            raise AnsibleFilterError("Debian does not package the NVIDIA fabric manager; use source cuda_repo")
        return {"pinned": packages, "unpinned": ["nvidia-persistenced"] if persistenced else []}

    if not NUMERIC_BRANCH.match(branch):
        raise AnsibleFilterError(f"nvidia_driver_branch must be a branch number such as '550', got '{branch}'")
    suffix = "-server" if source == "distribution" else ""
    packages = [f"nvidia-utils-{branch}{suffix}", f"libnvidia-compute-{branch}{suffix}"]
    if kernel_modules:
        packages.append(f"nvidia-dkms-{branch}{suffix}{'-open' if open_modules else ''}")
    if persistenced:
        packages.append(f"nvidia-compute-utils-{branch}{suffix}")
    if fabricmanager:
        packages += [f"nvidia-fabricmanager-{branch}", f"libnvidia-nscq-{branch}"]
    return {"pinned": packages, "unpinned": []}


def cuda_packages(facts: Mapping[str, Any], source: str, version: str) -> list[str]:
    """The toolkit: Debian's nvidia-cuda-toolkit, or cuda-toolkit-X-Y from NVIDIA's repository."""
    distro, _release = _distribution(facts)
    if source == "distribution":
        if distro != "debian":
            raise AnsibleFilterError("Ubuntu's own CUDA toolkit is too old for a pinned stack; use cuda_repo")
        return ["nvidia-cuda-toolkit"]
    if source != "cuda_repo":
        raise AnsibleFilterError(f"cuda_source must be distribution or cuda_repo, got '{source}'")
    return [f"cuda-toolkit-{_major_minor(version, 'cuda_version').replace('.', '-')}"]


def nccl_packages(version: str, cuda_version: str) -> list[str]:
    """NCCL runtime and headers from the CUDA repository, pinned to the build for this CUDA."""
    nccl = str(version)
    if not re.match(r"^\d+\.\d+\.\d+$", nccl):
        raise AnsibleFilterError(f"nccl_version must look like 2.21.5, got '{nccl}'")
    cuda = _major_minor(cuda_version, "cuda_version")
    return [f"libnccl2={nccl}-1+cuda{cuda}", f"libnccl-dev={nccl}-1+cuda{cuda}"]


def _major_minor(version: Any, name: str) -> str:
    match = re.match(r"^(\d+)\.(\d+)", str(version))
    if not match:
        raise AnsibleFilterError(f"{name} must look like 12.4, got '{version}'")
    return f"{match[1]}.{match[2]}"


def cuda_repo_url(facts: Mapping[str, Any], base: str) -> str:
    """NVIDIA's repository for this release: <base>/ubuntu2204/x86_64/, <base>/debian12/sbsa/ ..."""
    distro, version = _distribution(facts)
    arch = str(facts.get("architecture", ""))
    if arch not in CUDA_REPO_ARCH:
        raise AnsibleFilterError(f"NVIDIA's repositories have no packages for architecture '{arch}'")
    return f"{base.rstrip('/')}/{distro}{version.replace('.', '')}/{CUDA_REPO_ARCH[arch]}/"


DEB_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}


def apt_source(facts: Mapping[str, Any], kind: str, url: str, key_url: str = "") -> dict[str, Any]:
    """One deb822 apt source of the GPU stack, as ansible.builtin.deb822_repository arguments.

    kind: debian_nonfree, debian_security_nonfree (Debian's contrib/non-free components),
    cuda_repo (NVIDIA's CUDA repository), nvidia_container_toolkit, docker (Docker's own).
    url is the repository (or its mirror); key_url overrides where the signing key comes from.
    """
    distro, _release = _distribution(facts)
    codename = str(facts.get("distribution_release", ""))
    arch = str(facts.get("architecture", ""))
    base = url.rstrip("/")
    debian_keyring = "/usr/share/keyrings/debian-archive-keyring.gpg"
    if kind in ("debian_nonfree", "debian_security_nonfree"):
        if distro != "debian":
            raise AnsibleFilterError("Debian's non-free components exist on Debian only")
        suites = [f"{codename}-security"] if kind == "debian_security_nonfree" else [codename, f"{codename}-updates"]
        source = {"uris": [base], "suites": suites, "components": ["contrib", "non-free", "non-free-firmware"]}
        source["signed_by"] = key_url or debian_keyring
    elif kind == "cuda_repo":
        repo = cuda_repo_url(facts, base)
        source = {"uris": [repo], "suites": ["/"], "components": [], "signed_by": key_url or f"{repo}3bf863cc.pub"}
    elif kind == "nvidia_container_toolkit":
        if arch not in DEB_ARCH:
            raise AnsibleFilterError(f"the NVIDIA Container Toolkit has no packages for architecture '{arch}'")
        if not key_url:
            raise AnsibleFilterError("the NVIDIA Container Toolkit's repository needs its key URL")
        source = {"uris": [f"{base}/{DEB_ARCH[arch]}"], "suites": ["/"], "components": [], "signed_by": key_url}
    elif kind == "docker":
        source = {"uris": [f"{base}/{distro}"], "suites": [codename], "components": ["stable"]}
        source["signed_by"] = key_url or f"{base}/{distro}/gpg"
    else:
        raise AnsibleFilterError(f"unknown apt source kind '{kind}'")
    return {"name": f"gpulab-{kind.replace('_', '-')}", **source}


def apt_source_files(sources: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """apt_source results as gpulab.cluster.files entries: /etc/apt/sources.list.d/<name>.sources from the
    common role's apt-source.sources.j2, each template seeing its source as __common_apt_source."""
    return [
        {
            "path": f"/etc/apt/sources.list.d/{source['name']}.sources",
            "template": "apt-source.sources.j2",
            "vars": {"__common_apt_source": dict(source)},
            "owner": "root",
            "group": "root",
            "mode": "0644",
        }
        for source in sources
    ]


def debian_nonfree_sources(facts: Mapping[str, Any], mirror: str, security_mirror: str) -> list[dict[str, Any]]:
    """Debian's contrib/non-free components for the release and its security updates (driver and toolkit)."""
    return [
        apt_source(facts, "debian_nonfree", mirror),
        apt_source(facts, "debian_security_nonfree", security_mirror),
    ]


def apt_pin_version(version: str) -> str:
    """apt preferences version glob for an upstream version: 535.309.01 -> 535.309.01-*."""
    version = str(version)
    if not re.match(r"^\d+(\.\d+)+$", version):
        raise AnsibleFilterError(f"a pinned version must be an upstream version such as 535.309.01, got '{version}'")
    return f"{version}-*"


def socket_interface(plan: Mapping[str, Any], traffic_class: str = "compute") -> str:
    """The interface that carries a traffic class: <nic>.<vlan> on a VLAN, the NIC itself otherwise."""
    network = (plan.get("networks") or {}).get(traffic_class) or {}
    nic = network.get("interface")
    if not nic:
        return ""
    vlan = network.get("vlan")
    return f"{nic}.{vlan}" if vlan and plan.get("fabric") != "infiniband" else str(nic)


def nccl_settings(plan: Mapping[str, Any], rdma_devices: list[str] | None = None, options: Mapping | None = None):
    """/etc/nccl.conf as a list of {name, value, why}, derived from the network plan.

    options: debug, buffsize, proto, socket_ifname, gid_index (each optional) and extra
    (a dict of further NCCL_* settings, written last).
    """
    options = dict(options or {})
    fabric = plan.get("fabric")
    if fabric not in ("roce", "infiniband", "ethernet"):
        raise AnsibleFilterError(f"gpulab_network.fabric must be roce, infiniband or ethernet, got '{fabric}'")
    settings: list[dict[str, Any]] = []

    def add(name: str, value: Any, why: str) -> None:
        settings.append({"name": name, "value": str(value), "why": why})

    ifname = options.get("socket_ifname") or socket_interface(plan)
    if ifname:
        add("NCCL_SOCKET_IFNAME", ifname, "bootstrap (and socket) traffic on the compute network, never management")
    else:
        add("NCCL_SOCKET_IFNAME", "^lo,docker", "no compute interface in the plan: anything but loopback and Docker")

    devices = list(rdma_devices or [])
    if fabric == "ethernet":
        add("NCCL_IB_DISABLE", 1, "no RDMA fabric: NCCL talks TCP sockets")
        if int(plan.get("link_speed_gbps") or 0) >= 25:
            add("NCCL_SOCKET_NTHREADS", 4, "one thread cannot fill a 25GbE+ link; 4 threads x 4 sockets can")
            add("NCCL_NSOCKS_PERTHREAD", 4, "sockets per thread (threads x sockets must stay <= 64)")
    else:
        if devices:
            add("NCCL_IB_HCA", "=" + ",".join(devices), "only the fabric's HCAs ('=' matches names exactly)")
        if fabric == "roce":
            roce = plan_defaults.roce(plan)
            dscp = int(roce["dscp"])
            gid = options.get("gid_index")
            gid = roce["gid_index"] if gid in (None, "") else gid
            add("NCCL_IB_GID_INDEX", gid, "the RoCE v2 GID carrying the node's IPv4 address (rdma_health reports it)")
            ecn = " with ECN-capable transport" if roce["ecn"] is True else ""
            add(
                "NCCL_IB_TC",
                roce["traffic_class"],
                f"traffic class = DSCP {dscp} << 2{ecn}, as RDMA-CM's and the switch's: "
                f"PFC priority {roce['pfc_priority']}",
            )
        else:
            sl = (plan.get("infiniband") or {}).get("service_level")
            if sl is not None:
                add("NCCL_IB_SL", sl, "the InfiniBand service level the subnet manager gives training traffic")

    add("NCCL_BUFFSIZE", options.get("buffsize") or 8388608, "8 MiB per channel keeps 100GbE busy (default 4 MiB)")
    if options.get("proto"):
        add("NCCL_PROTO", options["proto"], "protocols restricted by the operator (for debugging or a known-bad one)")
    add("NCCL_DEBUG", options.get("debug") or "WARN", "warnings only; INFO shows the chosen transport per ring")
    for name, value in sorted((options.get("extra") or {}).items()):
        if not str(name).startswith("NCCL_"):
            raise AnsibleFilterError(f"nccl_extra_settings: '{name}' is not an NCCL_ setting")
        add(str(name), value, "site setting (nccl_extra_settings)")
    return settings


# The roles' settings the argument specs cannot check, each problem naming its variable (tasks/preflight.yml).
DRIVER_VERSION = re.compile(r"^\d+(\.\d+)+$")
CUDA_VERSION = re.compile(r"^\d+\.\d+$")
NCCL_VERSION = re.compile(r"^\d+\.\d+\.\d+$")


def nvidia_driver_problems(version: Any, *, branch: Any) -> list[str]:
    """An exact driver version must belong to the pinned branch (535 or tesla-535: 535.x.y)."""
    version, number = str(version or ""), re.sub(r"^tesla-", "", str(branch))
    if not version or (DRIVER_VERSION.match(version) and version.startswith(number + ".")):
        return []
    return [
        f"nvidia_driver_version must be empty or an upstream version of branch {branch} such as "
        f"{number}.309.01; got '{version}'"
    ]


def cuda_problems(version: Any, *, source: str, distribution: str) -> list[str]:
    """The toolkit's version is major.minor; Debian alone packages the toolkit in the distribution."""
    problems = []
    if not CUDA_VERSION.match(str(version)):
        problems.append(f"cuda_version must be major.minor such as 12.4 (got '{version}')")
    if source == "distribution" and distribution != "Debian":
        problems.append(f"cuda_source 'distribution' exists on Debian only (got '{source}' on {distribution})")
    return problems


def nccl_problems(version: Any) -> list[str]:
    """NCCL is pinned to an exact release."""
    return [] if NCCL_VERSION.match(str(version)) else [f"nccl_version must look like 2.21.5, got '{version}'"]


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "nvidia_driver_problems": nvidia_driver_problems,
            "cuda_problems": cuda_problems,
            "nccl_problems": nccl_problems,
            "nvidia_driver_packages": nvidia_driver_packages,
            "cuda_packages": cuda_packages,
            "nccl_packages": nccl_packages,
            "socket_interface": socket_interface,
            "cuda_repo_url": cuda_repo_url,
            "apt_pin_version": apt_pin_version,
            "apt_source": apt_source,
            "apt_source_files": apt_source_files,
            "debian_nonfree_sources": debian_nonfree_sources,
            "nccl_settings": nccl_settings,
        }
