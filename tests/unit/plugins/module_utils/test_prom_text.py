from ansible_collections.gpulab.cluster.plugins.module_utils import prom_text


def test_a_family_is_help_type_and_its_samples_and_nothing_without_samples():
    assert prom_text.family("x_total", "counter", "Xs.", [({"a": 'q"\\'}, 2.0), ({}, 0.5)]) == [
        "# HELP x_total Xs.",
        "# TYPE x_total counter",
        'x_total{a="q\\"\\\\"} 2',
        "x_total 0.5",
    ]
    assert prom_text.family("x", "gauge", "X.", []) == []


def test_replace_file_leaves_the_whole_new_file_readable_and_no_temporary(tmp_path):
    target = tmp_path / "gpulab_x.prom"
    target.write_text("old\n")
    prom_text.replace_file(str(target), "new 1\n")
    assert target.read_text() == "new 1\n"
    assert target.stat().st_mode & 0o777 == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["gpulab_x.prom"]
