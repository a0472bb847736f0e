"""gpulab.cluster.files's action on the controller, run by ansible-playbook on localhost: a role's template is
rendered as the template action renders it (the managed header, the role's and the play's variables, the
entry's vars, an include found beside it), the play's variables come out unchanged, a second run changes
nothing, and a missing template is named."""

import json
import os
import subprocess

from unreachable import ROOT

TEMPLATE = """{{ ansible_managed | comment }}
name={{ name }}
port={{ port }}
{% include 'part.j2' %}
"""


def make_role(tmp_path):
    role = tmp_path / "roles" / "demo"
    (role / "templates").mkdir(parents=True)
    (role / "tasks").mkdir()
    (role / "defaults").mkdir()
    (role / "templates" / "demo.conf.j2").write_text(TEMPLATE)
    (role / "templates" / "part.j2").write_text("hosts={{ peers | join(',') }}\n")
    (role / "defaults" / "main.yml").write_text("port: 8080\npeers: [a, b]\n")
    (role / "tasks" / "main.yml").write_text(
        json.dumps(
            [
                {
                    "name": "Write the demo files",
                    "gpulab.cluster.files": {
                        "files": [
                            {
                                "path": str(tmp_path / "out" / "demo.conf"),
                                "template": "{{ template_name }}",
                                "mode": "0644",
                                "vars": {"name": "first", "port": 9090},
                            },
                            {
                                "path": str(tmp_path / "out" / "second.conf"),
                                "template": "demo.conf.j2",
                                "mode": "0644",
                                "vars": {"name": "second"},
                            },
                        ]
                    },
                    "register": "written",
                },
                {
                    "name": "Show the variables after",
                    "ansible.builtin.debug": {"msg": "{{ {'peers': peers, 'port': port} | to_json }}"},
                },
            ]
        )
    )
    playbook = tmp_path / "play.yml"
    playbook.write_text(json.dumps([{"hosts": "localhost", "gather_facts": False, "roles": ["demo"]}]))
    (tmp_path / "out").mkdir()
    return playbook


def play(tmp_path, playbook, template_name="demo.conf.j2"):
    env = dict(
        os.environ,
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
        ANSIBLE_ROLES_PATH=str(tmp_path / "roles"),
        ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
        ANSIBLE_LOCALHOST_WARNING="0",
    )
    cmd = [
        "ansible-playbook",
        "-i",
        "localhost,",
        "-c",
        "local",
        str(playbook),
        "-e",
        f"template_name={template_name}",
        "-e",
        "ansible_python_interpreter={{ ansible_playbook_python }}",
    ]
    run = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    # The JSON report, then what the timing callbacks print after it.
    return run, json.JSONDecoder().raw_decode(run.stdout[run.stdout.index("{\n") :])[0]


def tasks(report):
    """Each task's result on localhost, by its name without the role's."""
    return {task["task"]["name"].split(" : ")[-1]: task["hosts"]["localhost"] for task in report["plays"][0]["tasks"]}


def test_templates_render_as_the_template_action_renders_them_and_a_rerun_changes_nothing(tmp_path):
    playbook = make_role(tmp_path)
    run, report = play(tmp_path, playbook)
    assert run.returncode == 0, run.stdout[-3000:]
    results = tasks(report)
    assert results["Write the demo files"]["changed"] is True
    assert (tmp_path / "out" / "demo.conf").read_text() == "#\n# Ansible managed\n#\nname=first\nport=9090\nhosts=a,b\n"
    assert (
        tmp_path / "out" / "second.conf"
    ).read_text() == "#\n# Ansible managed\n#\nname=second\nport=8080\nhosts=a,b\n"
    # An entry's vars reach its own template only: the next entry and the next task see the role's.
    assert json.loads(results["Show the variables after"]["msg"]) == {"peers": ["a", "b"], "port": 8080}
    run, report = play(tmp_path, playbook)
    rerun = tasks(report)["Write the demo files"]
    assert run.returncode == 0 and rerun["changed"] is False
    # The shell read settled it: the module never ran (its results carry its invocation).
    assert "invocation" not in rerun and rerun["changed_paths"] == []


def test_a_file_changed_by_hand_is_written_again_after_a_run_that_changed_nothing(tmp_path):
    playbook = make_role(tmp_path)
    assert play(tmp_path, playbook)[0].returncode == 0
    demo, second = tmp_path / "out" / "demo.conf", tmp_path / "out" / "second.conf"
    expected = demo.read_text()
    demo.write_text(expected.replace("port=9090", "port=9091"))
    second.chmod(0o600)
    run, report = play(tmp_path, playbook)
    written = tasks(report)["Write the demo files"]
    assert run.returncode == 0 and written["changed"] is True and "invocation" in written
    assert written["changed_paths"] == [str(demo), str(second)]
    assert demo.read_text() == expected and second.stat().st_mode & 0o777 == 0o644


def test_a_missing_template_is_named(tmp_path):
    playbook = make_role(tmp_path)
    run, report = play(tmp_path, playbook, template_name="absent.conf.j2")
    assert run.returncode == 2
    assert "absent.conf.j2" in tasks(report)["Write the demo files"]["msg"]
    assert not (tmp_path / "out" / "demo.conf").exists()
