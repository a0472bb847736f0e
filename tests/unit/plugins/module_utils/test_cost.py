"""The cost estimate, fed the records gpu_health gives for the recorded H200 (one real GPU)."""

from pathlib import Path

import pytest

from ansible_collections.gpulab.cluster.plugins.module_utils import cost, nvidia_smi, report

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SETTINGS = {
    "price_per_kwh": 0.30,
    "base_watts": 150,
    "utilization": 0.5,
    "years": 3,
    "hardware_cost": 40000,
    "cloud_gpu_hour": 3.5,
    "currency": "EUR",
}


def h200_gpus():
    return nvidia_smi.parse_query_xml((FIXTURES / "nvidia_smi" / "q_x_h200_580.xml").read_text())[0]


def h200_records():
    gpus = h200_gpus()
    return [c.as_dict() for c in nvidia_smi.evaluate(gpus, source="xml", expected_count=1)]


def test_the_recorded_h200_s_power_reading_is_read_from_its_records():
    power = cost.node_power(h200_records())
    assert power == {"gpus": 1, "draw_w": 78.66, "limit_w": 700.0, "measured": True}


def test_the_sums_follow_the_handbook_s_three_year_form():
    est = cost.estimate({"gpu1": h200_records(), "mgmt1": []}, SETTINGS)
    # gpu1: 150 + 0.5 * 700 + 0.5 * 78.66 (its reading); mgmt1: its base load alone.
    assert est["nodes"]["gpu1"]["average_w"] == 539.3
    assert est["nodes"]["mgmt1"] == {"gpus": 0, "draw_w": 0, "limit_w": 0, "measured": True, "average_w": 150.0}
    assert est["totals"] == {
        "average_w": 689.3,
        "kwh_per_year": 6038.3,
        "energy_per_year": 1811.48,
        "gpus": 1,
        "gpu_hours": 13140,
        "homelab": 45434.44,
        "cloud": 45990.0,
        "homelab_per_gpu_hour": 3.46,
    }
    assert est["not_measured"] == []
    assert est["settings"] == SETTINGS
    assert est["utilization"] == {"value": 0.5, "measured": False}
    assert "Utilization used: 0.5 (the input above: Prometheus had no GPU utilization" in report.cost_table(est)


def test_a_measured_utilization_replaces_the_guess():
    est = cost.estimate({"gpu1": h200_records()}, dict(SETTINGS, measured_utilization=0.25))
    assert est["utilization"] == {"value": 0.25, "measured": True}
    # 150 + 0.25 * 700 + 0.75 * 78.66; a quarter of the year's GPU-hours over 3 years.
    assert est["nodes"]["gpu1"]["average_w"] == 384.0
    assert est["totals"]["gpu_hours"] == 6570
    assert est["settings"] == SETTINGS  # the operator's inputs, shown as given
    assert "Utilization used: 0.25 (measured: the GPUs&#x27; mean utilization in Prometheus)." in report.cost_table(est)
    assert cost.problems(dict(SETTINGS, measured_utilization=1.5)) == [
        "measured_utilization is a share of the time, 0 to 1, got 1.5"
    ]


def test_a_node_whose_gpus_could_not_be_read_is_named_and_left_out_not_counted_as_zero():
    missing = [c.as_dict() for c in nvidia_smi.evaluate(None, source="nvml", expected_count=2)]
    est = cost.estimate({"gpu1": h200_records(), "gpu2": missing}, SETTINGS)
    assert est["not_measured"] == ["gpu2"]
    assert est["nodes"]["gpu2"]["average_w"] is None
    assert est["totals"]["gpus"] == 1
    assert est["totals"]["average_w"] == 539.3


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("utilization", 1.5, "validation_cost.utilization is a share of the time, 0 to 1, got 1.5"),
        ("price_per_kwh", -0.1, "validation_cost.price_per_kwh must be 0 or more, got -0.1"),
        ("years", 0, "validation_cost.years must be more than 0, got 0"),
    ],
)
def test_bad_settings_are_named(key, value, message):
    assert cost.problems({**SETTINGS, key: value}) == [message]
    assert cost.problems(SETTINGS) == []


def test_the_report_carries_the_estimate_and_shows_every_input():
    nodes = {
        "gpu1": {"gpu": {"checks": h200_records()}},
        "gpu2": {"gpu": {"checks": [c.as_dict() for c in nvidia_smi.evaluate(None, source="nvml", expected_count=2)]}},
    }
    data = report.build(nodes, {}, "2026-12-02T00:00:00+00:00", cost_settings=SETTINGS)
    assert data["cost"]["totals"]["gpus"] == 1
    page = report.render_html(data)
    section = page[page.index("id='cost'") : page.index("Every check")]
    for label in cost.SETTINGS.values():
        assert label in section
    assert "<b>Incomplete:</b> no GPU power reading from gpu2" in section
    assert "45,990.00 EUR" in section and "44,251.84 EUR" in section  # gpu2 left out


def test_without_settings_the_report_says_how_to_get_an_estimate():
    data = report.build({"gpu1": {"gpu": {"checks": h200_records()}}}, {}, "t")
    assert data["cost"] is None
    assert "Not estimated: set <code>validation_cost</code>" in report.render_html(data)


def test_a_node_without_gpus_declared_or_found_is_its_base_load():
    none_here = [c.as_dict() for c in nvidia_smi.evaluate(None, source="nvml", unavailable_reason="no driver")]
    assert cost.node_power(none_here) == {"gpus": 0, "draw_w": 0, "limit_w": 0, "measured": True}


def test_a_gpu_without_a_power_reading_makes_its_node_not_measured():
    gpus = h200_gpus()
    gpus[0]["power_draw"] = None
    records = [c.as_dict() for c in nvidia_smi.evaluate(gpus, source="xml", expected_count=1)]
    assert cost.node_power(records)["measured"] is False


def test_one_of_two_declared_gpus_missing_is_not_measured():
    gpus = h200_gpus()
    records = [c.as_dict() for c in nvidia_smi.evaluate(gpus, source="xml", expected_count=2)]
    assert cost.node_power(records) == {"gpus": 1, "draw_w": 78.66, "limit_w": 700.0, "measured": False}


def test_settings_without_a_price_name_what_is_missing():
    assert cost.problems({"base_watts": 100, "utilization": 0.5, "years": 3}) == [
        "validation_cost needs validation_cost.price_per_kwh, validation_cost.cloud_gpu_hour "
        "(or leave validation_cost empty)"
    ]


def test_a_check_that_errored_or_a_node_not_reached_is_not_measured():
    nodes = {
        "gpu1": {"gpu": {"failed": True, "msg": "could not read nvidia-smi output"}},
        "gpu2": {"reached": False},
        "mgmt1": {"gpu": {"skipped": True}},
    }
    est = report.build(nodes, {}, "t", cost_settings=SETTINGS)["cost"]
    assert est["not_measured"] == ["gpu1", "gpu2"]
    assert est["nodes"]["mgmt1"]["measured"] is True
    assert est["totals"]["average_w"] == 150.0
