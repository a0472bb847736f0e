import shutil
import subprocess
from pathlib import Path

import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils import ups

ROOT = Path(__file__).resolve().parents[4]
FIXTURES = ROOT / "tests" / "unit" / "fixtures" / "ups"
PROMTOOL = shutil.which("promtool") or str(ROOT / ".cache" / "tools" / "promtool")
ON_BATTERY = (FIXTURES / "upsc-usbhid-ups.txt").read_text()
DUMMY = (FIXTURES / "upsc-dummy-ups.txt").read_text()


def samples(text):
    """The sample lines of a textfile, as {metric with labels: value}."""
    return dict(line.rsplit(" ", 1) for line in text.splitlines() if not line.startswith("#"))


def test_a_ups_on_battery_parses_with_its_flags_and_numbers():
    values = ups.parse_upsc(ON_BATTERY)
    assert values["ups.status"] == "OB DISCHRG"
    assert values["device.model"] == "Back-UPS RS 1500MS2"
    assert ups.status_flags(values) == {"OB", "DISCHRG"}


def test_a_ups_on_battery_renders_every_flag_and_the_gauges_it_reports():
    assert samples(ups.render("ups", ups.parse_upsc(ON_BATTERY))) == {
        'gpulab_ups_up{ups="ups"}': "1",
        'gpulab_ups_online{ups="ups"}': "0",
        'gpulab_ups_on_battery{ups="ups"}': "1",
        'gpulab_ups_low_battery{ups="ups"}': "0",
        'gpulab_ups_forced_shutdown{ups="ups"}': "0",
        'gpulab_ups_battery_charge_percent{ups="ups"}': "38",
        'gpulab_ups_battery_runtime_seconds{ups="ups"}': "612",
        'gpulab_ups_load_percent{ups="ups"}': "61",
    }


def test_the_recorded_dummy_ups_on_line():
    metrics = samples(ups.render("ups", ups.parse_upsc(DUMMY)))
    assert metrics['gpulab_ups_online{ups="ups"}'] == "1"
    assert metrics['gpulab_ups_on_battery{ups="ups"}'] == "0"
    assert metrics['gpulab_ups_battery_charge_percent{ups="ups"}'] == "100"


def test_low_battery_and_forced_shutdown_are_their_own_flags():
    metrics = samples(ups.render("ups", {"ups.status": "FSD OB LB"}))
    assert [metrics[f'gpulab_ups_{name}{{ups="ups"}}'] for name in ups.STATUS_FLAGS.values()] == ["0", "1", "1", "1"]


def test_an_unreadable_ups_says_why_and_nothing_else():
    text = ups.render("ups", None, error="upsc: Error: Driver not connected")
    assert samples(text) == {
        'gpulab_ups_up{ups="ups"}': "0",
        'gpulab_ups_error{ups="ups",reason="upsc: Error: Driver not connected"}': "1",
    }


def test_a_value_that_is_not_a_number_leaves_its_gauge_out():
    metrics = samples(ups.render("ups", {"ups.status": "OL", "battery.charge": "n/a"}))
    assert not any(name.startswith("gpulab_ups_battery_charge") for name in metrics)


@pytest.mark.parametrize(
    "text, message",
    [
        ("Init SSL without certificate database\nups.status: OL\n", "not a 'variable: value' line"),
        ("battery.charge: 100\n", "no ups.status"),
    ],
)
def test_output_that_is_not_upsc_s_is_refused(text, message):
    with pytest.raises(ups.UpsParseError, match=message):
        ups.parse_upsc(text)


@pytest.mark.parametrize("fixture", [ON_BATTERY, DUMMY], ids=["usbhid", "dummy"])
def test_the_textfile_passes_promtool(fixture):
    text = ups.render("ups", ups.parse_upsc(fixture))
    run = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_report_passes_a_ups_on_line_and_fails_one_on_battery():
    on_line = ups.ups_record(0, DUMMY, "", "ups@127.0.0.1")
    assert (on_line.status, on_line.value, on_line.message) == (
        "pass",
        100,
        "ups@127.0.0.1 is on line (OL, battery 100 %, 1800 s of runtime)",
    )
    on_battery = ups.ups_record(0, ON_BATTERY, "", "ups@mgmt1")
    assert (on_battery.status, on_battery.code) == ("fail", "UPS_ON_BATTERY")
    assert on_battery.message.startswith(
        "ups@mgmt1 runs on battery (battery 38 %, 612 s of runtime): the ups role drains"
    )
    low = ups.ups_record(0, ON_BATTERY.replace("OB DISCHRG", "OB DISCHRG LB"), "", "ups@mgmt1")
    assert (low.status, low.code) == ("fail", "UPS_LOW_BATTERY")
    assert "on battery and low (OB DISCHRG LB," in low.message


@pytest.mark.parametrize(
    ("rc", "out", "err", "said"),
    [
        (1, "", "Error: Connection failure: Connection refused", "(Error: Connection failure: Connection refused)"),
        (124, "", "", "(exit 124)"),
        (0, "battery.charge: 100\n", "", "(upsc gave no ups.status)"),
    ],
)
def test_a_ups_that_cannot_be_read_fails(rc, out, err, said):
    record = ups.ups_record(rc, out, err, "ups@mgmt1")
    assert (record.status, record.code) == ("fail", "UPS_UNREACHABLE")
    assert record.message.startswith(f"upsc ups@mgmt1 failed {said}: upsd or its driver does not answer")
