"""gpulab's alert rules, with promtool (from Debian's prometheus package; `make setup` unpacks it)."""

import shutil
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "roles" / "monitoring" / "files" / "gpulab.rules.yml"
TESTS = ROOT / "tests" / "unit" / "fixtures" / "alerts" / "gpulab.rules.test.yml"
PROMTOOL = shutil.which("promtool") or str(ROOT / ".cache" / "tools" / "promtool")


def promtool(*args):
    run = subprocess.run([PROMTOOL, *args], capture_output=True, text=True, check=False, cwd=ROOT)
    return run.returncode, run.stdout + run.stderr


def test_rules_are_valid():
    rc, out = promtool("check", "rules", str(RULES))
    assert rc == 0, out
    assert "SUCCESS: 18 rules found" in out


def test_every_rule_is_tested_firing_and_not_firing():
    alerts = {rule["alert"] for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]}
    cases = [case for test in yaml.safe_load(TESTS.read_text())["tests"] for case in test["alert_rule_test"]]
    assert {case["alertname"] for case in cases if case["exp_alerts"]} == alerts
    assert {case["alertname"] for case in cases if not case["exp_alerts"]} == alerts


def test_rules_fire_when_they_should_and_only_then():
    rc, out = promtool("test", "rules", str(TESTS))
    assert rc == 0, out
