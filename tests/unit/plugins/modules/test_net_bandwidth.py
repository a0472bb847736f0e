from pathlib import Path

from ansible_collections.gpulab.cluster.plugins.modules import net_bandwidth

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "net"
TOOLS = {"iperf3": "/usr/bin/iperf3", "ping": "/usr/bin/ping", "ip": "/usr/sbin/ip"}


def fake_sysfs(tmp_path, speed="10000", mtu="1500", dropped=(0, 0)):
    stats = tmp_path / "eth0" / "statistics"
    stats.mkdir(parents=True)
    (tmp_path / "eth0" / "speed").write_text(speed + "\n")
    (tmp_path / "eth0" / "mtu").write_text(mtu + "\n")
    (stats / "rx_dropped").write_text(f"{dropped[0]}\n")
    return stats


def test_measures_each_peer_and_judges_against_line_rate(run_module, monkeypatch, tmp_path):
    fake_sysfs(tmp_path)
    monkeypatch.setattr(net_bandwidth, "SYS_NET", str(tmp_path))
    monkeypatch.setattr(net_bandwidth.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: TOOLS.get(name))
    calls = []

    def run(module, cmd, **kw):
        calls.append(cmd)
        if cmd[0] == "/usr/sbin/ip":
            return 0, '[{"dst":"172.30.10.14","dev":"eth0","prefsrc":"172.30.10.13"}]', ""
        if "/usr/bin/iperf3" in cmd:
            return 0, (FIXTURES / "iperf3-3.12-P4.json").read_text(), ""
        return 0, (FIXTURES / "ping-ok.txt").read_text(), ""

    peers = [{"name": "gpu2", "address": "172.30.10.14"}]
    result, failed = run_module(net_bandwidth.main, {"peers": peers, "duration": 3}, run_command=run, check_mode=True)
    assert not failed, result
    assert calls[1] == [
        "timeout", "23", "/usr/bin/iperf3", "-c", "172.30.10.14", "-p", "5201", "-P", "4", "-t", "3",
        "-J", "--connect-timeout", "5000",
    ]  # fmt: skip
    assert calls[2] == ["/usr/bin/ping", "-M", "do", "-s", "1472", "-c", "3", "-i", "0.05", "-W", "2", "172.30.10.14"]
    checks = {c["check"]: c for c in result["checks"]}
    assert checks["bandwidth.gpu2"]["status"] == "pass" and checks["bandwidth.gpu2"]["threshold"] == 9.0
    assert checks["mtu.gpu2"]["value"] == 1500
    assert checks["link_speed"]["value"] == 10.0
    assert result["results"][0]["received_gbps"] == 14.116
    assert result["interface"] == {"name": "eth0", "mtu": 1500, "speed_gbps": 10.0, "counter_deltas": {"rx_dropped": 0}}
    assert result["changed"] is False


def test_slow_link_and_refused_server_fail(run_module, monkeypatch, tmp_path):
    fake_sysfs(tmp_path, mtu="9000")
    monkeypatch.setattr(net_bandwidth, "SYS_NET", str(tmp_path))
    monkeypatch.setattr(net_bandwidth.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: TOOLS.get(name))

    def run(module, cmd, **kw):
        if "/usr/bin/iperf3" in cmd:
            return 1, (FIXTURES / "iperf3-refused.json").read_text(), ""
        return 1, "", (FIXTURES / "ping-too-big.txt").read_text()

    args = {"peers": [{"name": "stor1", "address": "10.0.30.2"}], "interface": "eth0", "line_rate_gbps": 100}
    result, failed = run_module(net_bandwidth.main, args, run_command=run)
    assert failed
    assert result["msg"].startswith("3 check(s) at or above 'fail': bandwidth.stor1: iperf3 to stor1 failed: ")
    assert "mtu.stor1: 9000-byte packets to stor1 do not fit: a hop allows only 1500" in result["msg"]
    assert "link_speed: eth0 link speed 10 Gbit/s is below 100" in result["msg"]


def test_missing_iperf3_is_unavailable(run_module, monkeypatch):
    monkeypatch.setattr(net_bandwidth.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: None)
    result, failed = run_module(net_bandwidth.main, {"peers": [{"name": "gpu2", "address": "10.0.0.2"}]})
    assert not failed
    assert result["status"] == "unavailable" and result["checks"][0]["code"] == "NET_TOOLS_MISSING"


def test_bad_input_is_refused(run_module):
    peers = [{"name": "gpu2", "address": "10.0.0.2"}]
    result, failed = run_module(net_bandwidth.main, {"peers": peers, "min_gbps": -1})
    assert failed and result["msg"] == "min_gbps must be greater than 0, got -1.0"
    result, failed = run_module(net_bandwidth.main, {"peers": peers, "min_ratio": 1.5})
    assert failed and result["msg"] == "min_ratio must be in (0, 1], got 1.5"
    result, failed = run_module(net_bandwidth.main, {"peers": []})
    assert failed and result["msg"].startswith("peers is empty")
    result, failed = run_module(net_bandwidth.main, {"peers": [{"name": "gpu2"}]})
    assert failed and "address" in result["msg"]


def fake_peers_run(answers, calls):
    """run_command for gpu2 (172.30.10.14) and gpu3 (172.30.10.15): each iperf3 run takes the peer's next answer,
    a fixture's name ("" for a run that prints nothing); the last one stays."""

    def run(module, cmd, **kw):
        if "/usr/bin/iperf3" in cmd:
            name = "gpu2" if "172.30.10.14" in cmd else "gpu3"
            calls.append(name)
            answer = answers[name].pop(0) if len(answers[name]) > 1 else answers[name][0]
            return 0, (FIXTURES / answer).read_text() if answer else "", ""
        if cmd[0] == "/usr/sbin/ip":
            return 0, '[{"dst":"172.30.10.14","dev":"eth0","prefsrc":"172.30.10.13"}]', ""
        return 0, (FIXTURES / "ping-ok.txt").read_text(), ""

    return run


PEERS = [{"name": "gpu2", "address": "172.30.10.14"}, {"name": "gpu3", "address": "172.30.10.15"}]


def test_a_client_run_that_prints_nothing_is_run_once_more_and_then_fails_saying_so(run_module, monkeypatch, tmp_path):
    """iperf3 3.11 and 3.12 end a failed client run under -J with rc 0 and no output (esnet/iperf#1405)."""
    fake_sysfs(tmp_path)
    monkeypatch.setattr(net_bandwidth, "SYS_NET", str(tmp_path))
    monkeypatch.setattr(net_bandwidth.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: TOOLS.get(name))
    monkeypatch.setattr(net_bandwidth.time, "sleep", lambda seconds: None)
    iperf_calls = []
    run = fake_peers_run({"gpu2": ["", "iperf3-3.12-P4.json"], "gpu3": [""]}, iperf_calls)
    result, failed = run_module(net_bandwidth.main, {"peers": PEERS, "fail_on": "never"}, run_command=run)
    assert not failed and iperf_calls == ["gpu2", "gpu2", "gpu3", "gpu3"]
    checks = {c["check"]: c for c in result["checks"]}
    assert checks["bandwidth.gpu2"]["status"] == "pass" and checks["bandwidth.gpu2"]["value"] == 14.116
    assert checks["bandwidth.gpu3"]["status"] == "fail"
    assert checks["bandwidth.gpu3"]["message"] == "iperf3 to gpu3 failed: iperf3 printed nothing, twice (rc 0)"


def test_a_peer_whose_server_is_busy_is_measured_after_the_others(run_module, monkeypatch, tmp_path):
    """Every node measures at once; a server serving another node's test answers that it is busy."""
    fake_sysfs(tmp_path)
    monkeypatch.setattr(net_bandwidth, "SYS_NET", str(tmp_path))
    monkeypatch.setattr(net_bandwidth.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: TOOLS.get(name))
    sleeps = []
    monkeypatch.setattr(net_bandwidth.time, "sleep", sleeps.append)
    answers = {"gpu2": ["iperf3-3.12-busy.json", "iperf3-3.12-busy.json", "iperf3-3.12-P4.json"]}
    answers["gpu3"] = ["iperf3-3.12-P4.json"]
    calls = []
    run = fake_peers_run(answers, calls)
    result, failed = run_module(net_bandwidth.main, {"peers": PEERS, "fail_on": "never"}, run_command=run)
    assert not failed and calls == ["gpu2", "gpu3", "gpu2", "gpu2"]
    assert sleeps == [0.5]  # only gpu2 was left, busy: wait before asking it again
    checks = {c["check"]: c for c in result["checks"]}
    assert checks["bandwidth.gpu2"]["status"] == "pass" and checks["bandwidth.gpu2"]["value"] == 14.116
    assert checks["bandwidth.gpu3"]["status"] == "pass"
    assert [r["name"] for r in result["results"]] == ["gpu2", "gpu3"]  # in the order given


def test_a_server_busy_past_the_wait_fails_its_bandwidth_check_saying_so(run_module, monkeypatch, tmp_path):
    fake_sysfs(tmp_path)
    monkeypatch.setattr(net_bandwidth, "SYS_NET", str(tmp_path))
    monkeypatch.setattr(net_bandwidth.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: TOOLS.get(name))
    clock = [1000.0]
    monkeypatch.setattr(net_bandwidth.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(net_bandwidth.time, "sleep", lambda seconds: clock.__setitem__(0, clock[0] + seconds))
    answers = {"gpu2": ["iperf3-3.12-busy.json"], "gpu3": ["iperf3-3.12-P4.json"]}
    calls = []
    run = fake_peers_run(answers, calls)
    args = {"peers": PEERS, "duration": 1, "fail_on": "never"}
    result, failed = run_module(net_bandwidth.main, args, run_command=run)
    # (2 peers + 1) x (1 s + 5) = 18 s: gpu2 asked at once, after gpu3, then every half second until then.
    assert not failed and calls.count("gpu3") == 1 and calls.count("gpu2") == 2 + 36
    checks = {c["check"]: c for c in result["checks"]}
    assert checks["bandwidth.gpu3"]["status"] == "pass"
    assert checks["bandwidth.gpu2"]["status"] == "fail" and checks["bandwidth.gpu2"]["code"] == "NET_IPERF"
    assert checks["bandwidth.gpu2"]["message"] == (
        "iperf3 to gpu2 failed: its server was still busy with other tests after 18 s (rc 0)"
    )
