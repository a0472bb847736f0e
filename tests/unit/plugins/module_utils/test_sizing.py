"""The planner's arithmetic against hand-computed cases, starting with the handbook's 4 x RTX 4090 node."""

import copy

import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils import sizing

# One node: 4 x RTX 4090 at their 450 W, a 280 W CPU with 128 lanes, 150 W for the rest, a 2400 W PSU,
# a ConnectX-6 Dx in a gen 4 x16 slot, two NVMe drives; on one 15 A circuit at 120 V.
HANDBOOK = {
    "nodes": {
        "gpu1": {
            "gpu": {"model": "rtx4090", "count": 4},
            "cpu": {"tdp_w": 280, "pcie_lanes": 128},
            "base_w": 150,
            "psu_w": 2400,
            "nic": {"model": "connectx6dx_100", "slot_lanes": 16, "slot_gen": 4},
            "nvme": 2,
            "circuit": "wall",
        }
    },
    "circuits": {"wall": {"volts": 120, "breaker_amps": 15}},
}


def plan(**changes):
    out = copy.deepcopy(HANDBOOK)
    for path, value in changes.items():
        *parents, leaf = path.split("__")
        target = out
        for key in parents:
            target = target.setdefault(key, {})
        target[leaf] = value
    return out


def by_check(records):
    return {r.check: r for r in records}


def test_four_4090s_on_one_15_a_120_v_circuit_fail_and_pass_at_240_v():
    assert sizing.problems(HANDBOOK) == []
    records, sums = sizing.evaluate(HANDBOOK)
    # Peak: 150 + 280 + 4 x 450 = 2230 W; typical: 150 + 0.5 x 280 + 0.8 x 4 x 450 = 1730 W; idle: 150 + 0.1 x 1800.
    assert sums["nodes"]["gpu1"] == {
        "gpus": 4,
        "peak_w": 2230.0,
        "typical_w": 1730.0,
        "idle_w": 330.0,
        "gpu_limit_w": 450.0,
    }
    assert sums["total"] == {"peak_w": 2230.0, "typical_w": 1730.0, "idle_w": 330.0, "gpus": 4, "heat_btu_h": 7609}
    wall = by_check(records)["circuit.wall"]
    # 2230 W / 120 V = 18.58 A, above 0.8 x 15 A = 12 A.
    assert (wall.status, wall.code, wall.value, wall.threshold, wall.unit) == ("fail", "PLAN_CIRCUIT", 18.58, 12.0, "A")
    assert wall.message.endswith("or lower the GPUs' power limits, or use a 240 V circuit")
    records, sums = sizing.evaluate(plan(circuits__wall__volts=240))
    wall = by_check(records)["circuit.wall"]
    assert (wall.status, wall.value) == ("pass", 9.29)  # 2230 / 240
    assert sums["circuits"]["wall"] == {"nodes": ["gpu1"], "peak_w": 2230.0, "amps": 9.29, "limit_amps": 12.0}


def test_psu_headroom_lanes_and_power_limits():
    checks = by_check(sizing.evaluate(HANDBOOK)[0])
    psu = checks["gpu1.psu"]  # 2230 of 2400 W is 93 %: above the 80 % that leaves room for spikes
    assert (psu.status, psu.code, psu.value, psu.threshold) == ("warn", "PLAN_PSU_HEADROOM", 2230.0, 1920.0)
    lanes = checks["gpu1.pcie_lanes"]  # 4 x 16 + 16 + 2 x 4 = 88 of 128
    assert (lanes.status, lanes.value, lanes.threshold) == ("pass", 88, 128)
    # Limited to 300 W each: 150 + 280 + 1200 = 1630 W, inside 80 % of the PSU; 13.58 A at 120 V, still too much.
    checks = by_check(sizing.evaluate(plan(nodes__gpu1__gpu__power_limit_w=300))[0])
    assert (checks["gpu1.psu"].status, checks["circuit.wall"].value) == ("pass", 13.58)
    over = by_check(sizing.evaluate(plan(nodes__gpu1__psu_w=2000))[0])["gpu1.psu"]
    assert (over.status, over.code) == ("fail", "PLAN_PSU")
    desktop = by_check(sizing.evaluate(plan(nodes__gpu1__cpu={"tdp_w": 125, "pcie_lanes": 24}))[0])
    assert (desktop["gpu1.pcie_lanes"].status, desktop["gpu1.pcie_lanes"].code) == ("warn", "PLAN_PCIE_LANES")


def test_a_100gbe_nic_in_an_x8_slot_warns():
    nic = {"model": "connectx5_100", "slot_lanes": 8, "slot_gen": 3}
    slot = by_check(sizing.evaluate(plan(nodes__gpu1__nic=nic))[0])["gpu1.nic_slot"]
    # PCIe 3.0 x8: 8 x 7.877 = 63 Gb/s for a 100 Gb/s port.
    assert (slot.status, slot.code, slot.value, slot.threshold) == ("warn", "PLAN_NIC_SLOT", 63.0, 100.0)
    # A gen 4 card in a gen 4 x8 slot carries 126 Gb/s; a gen 3 card in it still runs at gen 3.
    gen4 = by_check(sizing.evaluate(plan(nodes__gpu1__nic={**nic, "model": "connectx6dx_100", "slot_gen": 4}))[0])
    assert (gen4["gpu1.nic_slot"].status, gen4["gpu1.nic_slot"].value) == ("pass", 126.0)
    gen3_card = by_check(sizing.evaluate(plan(nodes__gpu1__nic={**nic, "slot_gen": 4}))[0])
    assert gen3_card["gpu1.nic_slot"].status == "warn"


def test_gpus_and_nic_on_different_numa_nodes_warn():
    checks = by_check(sizing.evaluate(plan(nodes__gpu1__numa={"gpus": [0, 0, 1, 1], "nic": 0}))[0])
    assert (checks["gpu1.numa"].status, checks["gpu1.numa"].code) == ("warn", "PLAN_NUMA")
    assert "NUMA node(s) [1]" in checks["gpu1.numa"].message
    same = by_check(sizing.evaluate(plan(nodes__gpu1__numa={"gpus": [0, 0], "nic": 0}))[0])
    assert same["gpu1.numa"].status == "pass"


def test_switch_ports_ups_ceph_bandwidth_and_cost():
    four = plan(
        nodes__gpu1__count=4,
        circuits__wall={"volts": 240, "breaker_amps": 50},
        switch={"ports": 4, "uplinks": 1},
        ups={"capacity_wh": 3000, "max_w": 10000},
        ceph={"raw_tb": 40, "replication": 3},
        cost={"price_per_kwh": 0.30, "cloud_gpu_hour": 0.70, "utilization": 0.5, "hardware_cost": 40000},
    )
    records, sums = sizing.evaluate(four)
    checks = by_check(records)
    # 4 nodes x 1 link + 1 uplink = 5 links on 4 ports.
    assert (checks["switch.ports"].status, checks["switch.ports"].code, checks["switch.ports"].value) == (
        "fail",
        "PLAN_SWITCH_PORTS",
        5,
    )
    # 4 x 8 with breakout cables: 32 ports, 27 spare.
    assert sizing.evaluate({**four, "switch": {"ports": 4, "breakout": 8, "uplinks": 1}})[1]["switch"] == {
        "ports": 32,
        "needed": 5,
        "spare": 27,
    }
    six = by_check(sizing.evaluate({**four, "switch": {"ports": 6, "uplinks": 1}})[0])["switch.ports"]
    assert (six.status, six.code) == ("warn", "PLAN_SWITCH_GROWTH")  # 1 spare of 6: under 25 %
    # 3000 Wh x 0.9 / (4 x 1730 W) x 60 = 23.4 min.
    assert (checks["ups.runtime"].status, sums["ups"]["runtime_min"]) == ("pass", 23.4)
    assert sums["ceph_usable_tb"] == 11.3  # 40 / 3 x 0.85
    assert sums["busbw_gbs"] == {"100": 12.0}
    # Mean draw 4 x (330 + 0.5 x (1730 - 330)) = 4120 W: 36,091.2 kWh a year, 10,827.36 at 0.30;
    # 16 GPUs x 8760 h x 0.5 x 3 years = 210,240 GPU-hours, 147,168 in a cloud at 0.70;
    # break-even: 40,000 / ((147,168 - 3 x 10,827.36) / 36 months) = 12.56 months.
    assert sums["cost"]["average_w"] == 4120.0
    assert (sums["cost"]["kwh_per_year"], sums["cost"]["energy_per_year"]) == (36091.2, 10827.36)
    assert (sums["cost"]["gpu_hours"], sums["cost"]["cloud"], sums["cost"]["homelab"]) == (210240, 147168.0, 72482.08)
    assert sums["cost"]["break_even_months"] == 12.6
    small = by_check(sizing.evaluate({**four, "ups": {"capacity_wh": 500, "max_w": 5000}})[0])
    assert (small["ups.runtime"].status, small["ups.runtime"].code) == ("warn", "PLAN_UPS_RUNTIME")
    assert small["ups.load"].code == "PLAN_UPS_LOAD"  # 8920 W peak on a 5000 W UPS
    assert sums["sources"]["rtx4090"].startswith("NVIDIA GeForce RTX 4090 specifications: 450 W")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"nodes__gpu1__gpu__model": "rtx9999"},
            "plan.nodes.gpu1.gpu.model 'rtx9999' is not in the planner's table; use one of rtx3090, rtx4090, rtx5090, "
            "rtx_a6000, l40s, a100_pcie, h100_pcie, h200_nvl",
        ),
        ({"circuits__wall__volts": 0}, "plan.circuits.wall.volts must be a number above 0, got 0"),
        ({"nodes__gpu1__circuit": "attic"}, "plan.nodes.gpu1.circuit 'attic' is not in plan.circuits"),
        ({"nodes__gpu1__gpu__count": -1}, "plan.nodes.gpu1.gpu.count must be a whole number of at least 0, got -1"),
        ({"nodes__gpu1__count": 0}, "plan.nodes.gpu1.count must be a whole number of at least 1, got 0"),
        ({"nodes__gpu1__psu_w": "big"}, "plan.nodes.gpu1.psu_w must be a number of watts above 0, got 'big'"),
        ({"ceph": {"raw_tb": 10, "replication": 0}}, "plan.ceph.replication must be at least 1, got 0"),
        (
            {"assumptions": {"gpu_typical_share": "most"}},
            "plan.assumptions.gpu_typical_share must be a number of at least 0, got 'most'",
        ),
        ({"nodes__gpu1__nic__slot_gen": 7}, "plan.nodes.gpu1.nic.slot_gen must be a PCIe generation 1-5, got 7"),
        (
            {"racks": 2},
            "plan.racks is not a planner setting; use nodes, circuits, ups, switch, ceph, cost, assumptions",
        ),
    ],
)
def test_impossible_inputs_are_refused_naming_the_setting(changes, message):
    assert sizing.problems(plan(**changes)) == [message]


def test_a_plan_without_nodes_is_refused():
    assert sizing.problems({"circuits": {}}) == ["plan.nodes must map each node (or kind of node) to its hardware"]


def test_a_nic_given_by_its_speed_alone_is_sized():
    nic = {"speed_gbps": 25, "slot_lanes": 4, "slot_gen": 3}  # a 25GbE card the table lacks, gen 3 x4: 31.5 Gb/s
    records, sums = sizing.evaluate(plan(nodes__gpu1__nic=nic))
    assert (by_check(records)["gpu1.nic_slot"].status, sums["busbw_gbs"]) == ("pass", {"25": 3.0})


# An inventory as Ansible hands it over: groups, and each host's variables (the example inventory's kind).
GROUPS = {"all": ["gpu1", "gpu2", "gpu3", "mgmt1"], "compute": ["gpu1", "gpu2", "gpu3"], "management": ["mgmt1"]}
RTX = {"gpulab_gpu_count": 2, "gpulab_gpu_model": "NVIDIA GeForce RTX 4090"}
HOSTVARS = {"gpu1": dict(RTX), "gpu2": dict(RTX), "gpu3": dict(RTX), "mgmt1": {}}


def from_inventory(node, hostvars=None):
    return sizing.with_inventory({"nodes": {"gpu": node}}, GROUPS, hostvars or HOSTVARS, "gpulab_plan")


@pytest.mark.parametrize(
    "name, key",
    [
        ("NVIDIA GeForce RTX 4090", "rtx4090"),
        ("NVIDIA RTX A6000", "rtx_a6000"),
        ("NVIDIA H100 PCIe", "h100_pcie"),
        ("NVIDIA A100 80GB PCIe", "a100_pcie"),
        ("NVIDIA H200 NVL", "h200_nvl"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA H200", None),  # the SXM board: not in the table
        ("Tesla T4", None),
    ],
)
def test_gpu_names_as_nvidia_smi_gives_them_find_the_table(name, key):
    assert sizing.gpu_key(name) == key


def test_a_node_entry_naming_a_group_takes_count_and_gpus_from_the_inventory():
    plan, problems = from_inventory({"hosts": "compute", "gpu": {"power_limit_w": 300}, "psu_w": 1600})
    assert problems == []
    assert plan["nodes"]["gpu"] == {
        "hosts": "compute",
        "count": 3,
        "gpu": {"count": 2, "model": "rtx4090", "power_limit_w": 300},
        "psu_w": 1600,
    }
    limited = {h: {**v, "nvidia_driver_power_limits": {"all": 250}} for h, v in HOSTVARS.items()}
    assert from_inventory({"hosts": "gpu2"}, limited)[0]["nodes"]["gpu"] == {
        "hosts": "gpu2",
        "count": 1,
        "gpu": {"count": 2, "model": "rtx4090", "power_limit_w": 250},
    }
    # What the entry says wins over the inventory; entries without hosts are left as they are.
    assert from_inventory({"hosts": "compute", "gpu": {"model": "l40s", "count": 1}})[0]["nodes"]["gpu"]["gpu"] == {
        "model": "l40s",
        "count": 1,
    }
    assert sizing.with_inventory(HANDBOOK, GROUPS, HOSTVARS) == (HANDBOOK, [])


def test_what_the_inventory_cannot_complete_is_refused_naming_the_setting():
    assert from_inventory({"hosts": "gpus"})[1] == [
        "gpulab_plan.nodes.gpu.hosts 'gpus' is neither a group nor a host of the inventory"
    ]
    assert from_inventory({"hosts": "compute", "count": 4})[1] == [
        "gpulab_plan.nodes.gpu.count is 4 but compute has 3 hosts; leave it out"
    ]
    mixed = {**HOSTVARS, "gpu3": {"gpulab_gpu_count": 4, "gpulab_gpu_model": "NVIDIA GeForce RTX 3090"}}
    assert from_inventory({"hosts": "compute"}, mixed)[1] == [
        "gpulab_plan.nodes.gpu: the hosts differ in gpulab_gpu_count (gpu1: 2, gpu2: 2, gpu3: 4); "
        "give them separate node entries",
        "gpulab_plan.nodes.gpu: the hosts differ in gpulab_gpu_model (gpu1: 'NVIDIA GeForce RTX 4090', "
        "gpu2: 'NVIDIA GeForce RTX 4090', gpu3: 'NVIDIA GeForce RTX 3090'); give them separate node entries",
    ]
    t4 = {h: {"gpulab_gpu_count": 1, "gpulab_gpu_model": "Tesla T4"} for h in HOSTVARS}
    assert from_inventory({"hosts": "compute"}, t4)[1][0].startswith(
        "gpulab_plan.nodes.gpu.gpu.model: gpulab_gpu_model 'Tesla T4' is not in the planner's table; set gpu.model"
    )
