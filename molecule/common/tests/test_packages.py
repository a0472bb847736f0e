"""gpulab.cluster.packages, the roles' package task: with every package installed and apt's lists
current it answers from dpkg without running apt; in check mode it simulates what is missing with apt-get
itself, and what only apt can match (a pin with *) goes to apt, with the lists kept for the module's
default hour."""

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
    - name: One missing, pinned with a star
      gpulab.cluster.packages:
        name: [jq, "tree=2.*"]
        update_cache: true
      check_mode: true
      register: starred
    - name: Keep the results for the test
      ansible.builtin.copy:
        content: "{{ {'installed': installed, 'missing': missing, 'starred': starred} | to_json }}"
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
    installed, missing, starred = results["installed"], results["missing"], results["starred"]
    assert not installed["changed"] and not installed["needs_apt"], installed
    assert installed["why"] == "every package installed and apt's lists current"
    assert "cache_update_time" not in installed  # apt never ran
    # tree is missing: the module simulated installing it (and only it) with apt-get; apt never ran.
    assert missing["changed"] and missing["simulated"] and "cache_update_time" not in missing, missing
    assert [name.split()[0] for name in missing["would_install"]] == ["tree"], missing
    assert "Inst tree " in missing["stdout"] and "Inst jq " not in missing["stdout"], missing["stdout"]
    # A pin with * is apt's to match: apt ran, in check mode, and would install tree. No task names
    # cache_valid_time: the action gave apt the module's hour, so apt found the lists current (with apt's own
    # default, 0, it would have updated them, which check mode reports as cache_updated).
    assert starred["changed"] and "simulated" not in starred and "cache_update_time" in starred, starred
    assert starred["cache_updated"] is False, starred
    assert "Inst tree " in starred["stdout"] and "Inst jq " not in starred["stdout"], starred["stdout"]
    assert not host.package("tree").is_installed
