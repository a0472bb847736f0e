"""gpulab.cluster.packages, the roles' package task: with every package installed and apt's lists
current it answers from dpkg without running apt; with something to do, apt does it (check mode here), with
the lists kept for the module's default hour."""

import json

PLAYBOOK = """
- hosts: common-gpu
  gather_facts: false
  tasks:
    - name: Everything installed, lists current
      gpulab.cluster.packages:
        name: [jq, rsync, "chrony=4.*"]
        update_cache: true
      register: installed
    - name: One missing
      gpulab.cluster.packages:
        name: [jq, tree]
        update_cache: true
      check_mode: true
      register: missing
    - name: Keep the results for the test
      ansible.builtin.copy:
        content: "{{ {'installed': installed, 'missing': missing} | to_json }}"
        dest: /root/packages-results.json
        mode: "0600"
"""


def test_apt_runs_only_where_dpkg_says_there_is_something_to_do(scenario_host, ansible_playbook, tmp_path):
    host = scenario_host("common-gpu")
    host.check_output("apt-get update -qq")  # the stamp fresh, as after any run of the role
    playbook = tmp_path / "packages.yml"
    playbook.write_text(PLAYBOOK)
    run = ansible_playbook(str(playbook))
    assert run.returncode == 0, run.stdout[-3000:]
    results = json.loads(host.file("/root/packages-results.json").content_string)
    installed, missing = results["installed"], results["missing"]
    assert not installed["changed"] and not installed["needs_apt"], installed
    assert installed["why"] == "every package installed and apt's lists current"
    assert "cache_update_time" not in installed  # apt never ran
    # tree is missing: apt ran, in check mode, and would install it (and only it).
    assert missing["changed"] and "cache_update_time" in missing, missing
    # No task names cache_valid_time: the action gave apt the module's hour, so apt found the lists current
    # (with apt's own default, 0, it would have updated them, which check mode reports as cache_updated).
    assert missing["cache_updated"] is False, missing
    assert "Inst tree " in missing["stdout"] and "Inst jq " not in missing["stdout"], missing["stdout"]
    assert not host.package("tree").is_installed
